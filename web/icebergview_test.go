package web_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// TestServedViewPage: a served view's asset page lists its versions (ID, schema, summary, each
// SQL text with its dialect) with the current one marked; a table's page has no such section;
// the page's rename and delete forms refuse the view (its name is the REST catalog's).
func TestServedViewPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var v warehouse.ServedView
		var tbl warehouse.ServedTable
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
			if tbl, err = wh.CreateServed(ctx, "main", warehouse.CreateServedInput{Ident: warehouse.TableIdent{Namespace: []string{"s"}, Name: "t"}, Schema: schema}, warehouse.CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			ver, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT id FROM s.t WHERE id < 10", "trino")}, table.Identifier{"s"},
				view.WithVersionSummary(view.VersionSummary{"engine-name": "trino"}))
			if err != nil {
				t.Fatal(err)
			}
			id := warehouse.TableIdent{Namespace: []string{"s"}, Name: "v"}
			if v, err = wh.CreateView(ctx, "main", warehouse.CreateViewInput{Ident: id, Schema: schema, Version: ver}); err != nil {
				t.Fatal(err)
			}
			next := v.Metadata.CurrentVersion().Clone()
			next.Representations = append(next.Representations, view.NewRepresentation("SELECT id FROM s.t WHERE id < 10", "spark"))
			if v, err = wh.ReplaceView(ctx, "main", id, []view.Requirement{view.AssertViewUUID(v.Metadata.ViewUUID())},
				[]view.Update{view.NewAddViewVersionUpdate(next), view.NewSetCurrentVersionUpdate(view.LastAddedID)}); err != nil {
				t.Fatal(err)
			}
			c.Tables, c.Warehouse = tbls, wh
		})
		reader := signIn(t, srv, db, "r", auth.ScopeRead)
		code, page := reader.get("/assets/" + v.AssetID.String())
		if code != 200 {
			t.Fatalf("view page: %d", code)
		}
		for _, want := range []string{`id="iceberg-view"`, `<strong id="view-current">2</strong>`, `data-version="1"`, `data-version="2"`, "2 <strong>(current)</strong>",
			`<span class="dialect">spark</span>`, `<span class="dialect">trino</span>`, "SELECT id FROM s.t WHERE id &lt; 10", "<code>engine-name</code>: trino"} {
			if !strings.Contains(page, want) {
				t.Fatalf("the view's page lacks %q", want)
			}
		}
		if _, page := reader.get("/assets/" + tbl.AssetID.String()); strings.Contains(page, `id="iceberg-view"`) {
			t.Fatal("a table's page shows a view section")
		}
		writer := signIn(t, srv, db, "w", auth.ScopeWrite)
		before, err := cat.Get(ctx, v.AssetID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			action string
			form   url.Values
		}{
			{"/rename", url.Values{"namespace": {before.Namespace}, "name": {"s.renamed"}}},
			{"/delete", url.Values{"confirm": {before.Name}}},
		} {
			c.form.Set("version", strconv.FormatInt(before.Version, 10))
			code, _, body := writer.post("/assets/"+v.AssetID.String()+c.action, c.form)
			if code != 409 || !strings.Contains(body, "through the Iceberg REST catalog") {
				t.Fatalf("POST %s of a served view: %d\n%.500s", c.action, code, body)
			}
		}
		after, err := cat.Get(ctx, v.AssetID)
		if err != nil || after.Name != before.Name || after.Status != catalog.StatusActive {
			t.Fatalf("the served view's asset changed: %+v %v", after, err)
		}
	})
}
