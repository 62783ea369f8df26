package tables

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// BenchmarkGroundOf reads a commit's ground (every live table's location) in a catalog of 10,
// 1,000 and 5,000 local tables, each in its own directory of one namespace directory: resolving
// each location on its own (each-path, as before the resolver) and through the resolver (one
// listing of the directory), alternately.
func BenchmarkGroundOf(b *testing.B) {
	for _, n := range []int{10, 1000, 5000} {
		ctx := context.Background()
		db := storagetest.Open(b, "sqlite")
		cat, err := catalog.New(db)
		if err != nil {
			b.Fatal(err)
		}
		wh, now := b.TempDir(), time.Now()
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
		for round := range 3 {
			for _, way := range []string{"each-path", "resolver"} {
				b.Run(fmt.Sprintf("tables=%d/%s/round=%d", n, way, round+1), func(b *testing.B) {
					for b.Loop() {
						var res *resolver
						if way == "resolver" {
							res = newResolver()
						}
						if _, err := groundOf(ctx, db.Client, last, uuid.Nil, res); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
