package tables_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

func BenchmarkGroundOf(b *testing.B) {
	for _, n := range []int{10, 1000, 5000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := context.Background()
			db := storagetest.Open(b, "sqlite")
			cat := mustCatalog(b, db)
			wh := b.TempDir()
			now := time.Now()
			var last string
			for i := range n {
				res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "n", Name: fmt.Sprintf("t%d", i)})
				if err != nil {
					b.Fatal(err)
				}
				last = fmt.Sprintf("%s/db/t%d-%s", wh, i, uuid.NewString())
				if err := os.MkdirAll(last, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := db.Client.IcebergTable.Create().SetID(res.Asset.ID).SetTableUUID(uuid.NewString()).SetLocation(last).
					SetMetadataLocation(last + "/metadata/1.json").SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := tables.GroundOf(ctx, db.Client, last, uuid.Nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
