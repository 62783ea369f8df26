package web_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// TestServedAssetFormsRefused: the asset page's rename and delete forms refuse a table served
// through the Iceberg REST catalog (409, saying to use the catalog), and the asset is unchanged.
func TestServedAssetFormsRefused(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var served warehouse.ServedTable
		srv, cat := newUIWith(t, db, func(c *web.Config) {
			tbls, err := tables.New(db, c.Catalog, tables.WithWarehouses(tables.Warehouse{Name: "main", Location: t.TempDir()}))
			if err != nil {
				t.Fatal(err)
			}
			wh, err := warehouse.New(db, c.Catalog, tbls)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := wh.CreateNamespace(ctx, "main", []string{"s"}, nil); err != nil {
				t.Fatal(err)
			}
			schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
			if served, err = wh.CreateServed(ctx, "main", warehouse.CreateServedInput{Ident: warehouse.TableIdent{Namespace: []string{"s"}, Name: "t"}, Schema: schema}, warehouse.CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			c.Tables, c.Warehouse = tbls, wh
		})
		writer := signIn(t, srv, db, "w", auth.ScopeWrite)
		before, err := cat.Get(ctx, served.AssetID)
		if err != nil {
			t.Fatal(err)
		}
		path := "/assets/" + served.AssetID.String()
		for _, c := range []struct {
			action string
			form   url.Values
		}{
			{"/rename", url.Values{"namespace": {before.Namespace}, "name": {"s.renamed"}}},
			{"/delete", url.Values{"confirm": {before.Name}}},
		} {
			c.form.Set("version", strconv.FormatInt(before.Version, 10))
			code, _, body := writer.post(path+c.action, c.form)
			if code != 409 || !strings.Contains(body, "through the Iceberg REST catalog") {
				t.Fatalf("POST %s of a served table: %d\n%.500s", c.action, code, body)
			}
		}
		after, err := cat.Get(ctx, served.AssetID)
		if err != nil || after.Name != before.Name || after.Status != catalog.StatusActive {
			t.Fatalf("the served asset changed: %+v %v", after, err)
		}
	})
}
