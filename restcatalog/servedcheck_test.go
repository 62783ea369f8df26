package restcatalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestServedAssetsMoveOnlyWithTheCatalog: the asset of a table engines commit to through
// /iceberg is renamed and dropped there. The JSON API's rename and delete answer 409 naming the
// table and the way to do it, and change nothing (the table keeps loading under its name, and
// no other asset can take it); the catalog's own rename and drop keep moving the asset.
func TestServedAssetsMoveOnlyWithTheCatalog(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := create(t, cat, "sales", "orders")
		id := assetOf(t, s, tbl)
		before, err := s.App.Catalog.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("asset %s is the table sales.orders served by warehouse main through the Iceberg REST catalog: rename or drop it through the catalog (/iceberg/v1/main/...)", id)
		for _, tc := range []struct {
			name, method, path, body string
		}{
			{"Rename", "POST", "/api/v1/assets/" + id.String() + "/rename", `{"name":"orders_old"}`},
			{"RenameToAnotherNamespace", "POST", "/api/v1/assets/" + id.String() + "/rename", `{"namespace":"w","name":"orders"}`},
			{"Delete", "DELETE", "/api/v1/assets/" + id.String(), ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, body := s.doWith(t, tc.method, tc.path, s.Writer, tc.body, map[string]string{"If-Match": fmt.Sprintf(`"%d"`, before.Version)}, nil)
				if code != 409 || !strings.Contains(body, want) {
					t.Fatalf("%s %s = %d %s, want 409 saying %q", tc.method, tc.path, code, body, want)
				}
			})
		}
		after, err := s.App.Catalog.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version != before.Version || after.Name != "sales.orders" || after.Namespace != "iceberg://main" || after.Status != catalog.StatusActive {
			t.Fatalf("the refused requests changed the asset: %+v -> %+v", before, after)
		}
		if _, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"}); err != nil {
			t.Fatalf("the table no longer loads under its name: %v", err)
		}
		if code, body := s.do(t, "POST", "/api/v1/assets", s.Writer, `{"kind":"table","namespace":"iceberg://main","name":"sales.orders"}`, nil); code != 409 {
			t.Fatalf("another asset took the served table's name: %d %s", code, body)
		}

		// The catalog moves it, and the asset follows.
		if _, err := cat.RenameTable(ctx, table.Identifier{"sales", "orders"}, table.Identifier{"sales", "orders_v2"}); err != nil {
			t.Fatalf("rename through the catalog: %v", err)
		}
		if a, err := s.App.Catalog.Get(ctx, id); err != nil || a.Name != "sales.orders_v2" {
			t.Fatalf("after the catalog's rename the asset is %+v (%v), want sales.orders_v2", a, err)
		}
		if err := cat.DropTable(ctx, table.Identifier{"sales", "orders_v2"}); err != nil {
			t.Fatalf("drop through the catalog: %v", err)
		}
		if a, err := s.App.Catalog.Get(ctx, id); err != nil || a.Status != catalog.StatusDeleted {
			t.Fatalf("after the catalog's drop the asset is %+v (%v), want deleted", a, err)
		}
		// No longer served: the JSON API may rename it again.
		if _, _, ok, err := s.App.Warehouse.ServedBy(ctx, id); err != nil || ok {
			t.Fatalf("a dropped table is still served: %v %v", ok, err)
		}
	})
}
