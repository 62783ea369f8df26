package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// BenchmarkCreateMany measures CreateMany batches as lineage ingest sends them, search docs
// included: go test -run '^$' -bench CreateMany ./catalog/ (PostgreSQL when
// TIDEMARK_TEST_POSTGRES is set). Each batch is one transaction of new assets.
func BenchmarkCreateMany(b *testing.B) {
	for _, backend := range storagetest.Backends {
		b.Run(backend, func(b *testing.B) {
			db := storagetest.Open(b, backend)
			cat := mustCatalog(b, db)
			ctx := context.Background()
			for _, size := range []int{10, 100, 1000} {
				b.Run(fmt.Sprint(size), func(b *testing.B) {
					ins := make([]catalog.CreateInput, size)
					for i := 0; b.Loop(); i++ {
						for j := range ins {
							ins[j] = catalog.CreateInput{Kind: catalog.KindTable, Namespace: fmt.Sprintf("bench_%d", size),
								Name: fmt.Sprintf("orders_daily_%d_%d", i, j), Description: "rows of the orders table, by day"}
						}
						if n, err := cat.CreateMany(ctx, ins); err != nil || n != size {
							b.Fatal(n, err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*size), "µs/asset")
				})
			}
		})
	}
}
