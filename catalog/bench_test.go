package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// BenchmarkCatalog measures create, resolve (current and former names) and rename on each store,
// side by side: go test -run '^$' -bench Catalog ./catalog/ (PostgreSQL when TIDEMARK_TEST_POSTGRES
// is set). Each operation is one full transaction including its audit event.
func BenchmarkCatalog(b *testing.B) {
	const population = 1000
	for _, backend := range storagetest.Backends {
		b.Run(backend, func(b *testing.B) {
			db := storagetest.Open(b, backend)
			cat := mustCatalog(b, db)
			ctx := context.Background()
			ids := make([]uuid.UUID, population)
			versions := make([]int64, population)
			for i := range ids {
				res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "bench", Name: fmt.Sprintf("t%04d", i)})
				if err != nil {
					b.Fatal(err)
				}
				ids[i], versions[i] = res.Asset.ID, res.Asset.Version
			}
			// Half the population gets a former name, so resolve/former has something to find.
			for i := 0; i < population; i += 2 {
				a, err := cat.Rename(ctx, ids[i], versions[i], "", fmt.Sprintf("t%04d_v1", i))
				if err != nil {
					b.Fatal(err)
				}
				versions[i] = a.Version
			}

			b.Run("create", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "bench-create", Name: fmt.Sprintf("c%d", i)}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("resolve/current", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := cat.Resolve(ctx, "bench", fmt.Sprintf("t%04d", 1+(2*i)%population)); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("resolve/former", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					res, err := cat.Resolve(ctx, "bench", fmt.Sprintf("t%04d", (2*i)%population))
					if err != nil || !res.Former {
						b.Fatalf("%+v %v", res, err)
					}
				}
			})
			b.Run("rename", func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					k := i % population
					a, err := cat.Rename(ctx, ids[k], versions[k], "", fmt.Sprintf("r%d", i))
					if err != nil {
						b.Fatal(err)
					}
					versions[k] = a.Version
				}
			})
		})
	}
}
