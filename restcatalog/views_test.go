package restcatalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
)

// restClient is iceberg-go's REST client as a *rest.Catalog (views are its methods).
func (s *testServer) restClient(t *testing.T) *rest.Catalog {
	t.Helper()
	cat, ok := s.client(t).(*rest.Catalog)
	if !ok {
		t.Fatal("the REST catalog type is not *rest.Catalog")
	}
	return cat
}

// replaceSQL commits a new current version of v with sql in the trino and spark dialects.
func replaceSQL(t *testing.T, ctx context.Context, cat *rest.Catalog, id table.Identifier, v *view.View, sql string) *view.View {
	t.Helper()
	b, err := view.MetadataBuilderFromBase(v.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	next := v.Metadata().CurrentVersion().Clone()
	next.Representations = []view.Representation{view.NewRepresentation(sql, "trino"), view.NewRepresentation(sql, "spark")}
	next.TimestampMS++
	built, err := b.AddVersion(next).SetCurrentVersionID(view.LastAddedID).Build()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cat.UpdateView(ctx, id, view.Requirements{view.AssertViewUUID(v.Metadata().ViewUUID())}, built.Changes)
	if err != nil {
		t.Fatalf("replace %v: %v", id, err)
	}
	if !built.Equals(out.Metadata()) {
		t.Fatalf("the server's metadata after the replace differs from the client's build")
	}
	return out
}

// TestViewLife follows one view through iceberg-go's REST client: create, replace twice, rename,
// load under the new name, drop. The asset keeps its ID, the former name resolves, the stated
// input table is its upstream, and its page shows the versions with their SQL.
func TestViewLife(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		a := s.App
		if err := a.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		cat := s.restClient(t)
		create(t, cat, "sales", "orders")
		id := table.Identifier{"sales", "orders_view"}
		ver, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT * FROM sales.orders", "trino")}, table.Identifier{"sales"},
			view.WithVersionSummary(view.VersionSummary{"engine-name": "trino", warehouse.ViewInputsKey: "sales.orders, sales.nowhere"}))
		if err != nil {
			t.Fatal(err)
		}
		v, err := cat.CreateView(ctx, id, ver, tablestest.Schema, icecat.WithViewProperties(map[string]string{"owner": "ana"}))
		if err != nil {
			t.Fatalf("create view: %v", err)
		}
		if !strings.HasPrefix(v.Location(), "file://"+s.Warehouse+"/sales/orders_view-") && !strings.HasPrefix(v.Location(), s.Warehouse+"/sales/orders_view-") {
			t.Fatalf("view location %s, want <warehouse>/sales/orders_view-<uuid>", v.Location())
		}
		ref, ok, err := a.Catalog.LookupExternal(ctx, warehouse.SystemIcebergView, v.Metadata().ViewUUID().String())
		if err != nil || !ok {
			t.Fatalf("the view-uuid is bound to no asset: %v", err)
		}
		asset, err := a.Catalog.Get(ctx, ref.ID)
		if err != nil {
			t.Fatal(err)
		}
		if asset.Kind != catalog.KindView || asset.Namespace != "iceberg://main" || asset.Name != "sales.orders_view" {
			t.Fatalf("asset %+v, want a view named iceberg://main sales.orders_view", asset)
		}
		v = replaceSQL(t, ctx, cat, id, v, "SELECT id FROM sales.orders")
		v = replaceSQL(t, ctx, cat, id, v, "SELECT id, region FROM sales.orders")
		if got := v.Metadata().CurrentVersionID(); got != 3 {
			t.Fatalf("current version %d after two replaces, want 3", got)
		}
		// A writer that read the view before the replaces and asserts another view's UUID loses.
		if _, err := cat.UpdateView(ctx, id, view.Requirements{view.AssertViewUUID(ref.ID)}, nil); !errors.Is(err, rest.ErrCommitFailed) {
			t.Fatalf("a failing assert-view-uuid answered %v, want CommitFailed", err)
		}

		to := table.Identifier{"sales", "orders_v"}
		renamed, err := cat.RenameView(ctx, id, to)
		if err != nil {
			t.Fatalf("rename: %v", err)
		}
		if renamed.MetadataLocation() != v.MetadataLocation() || renamed.Metadata().ViewUUID() != v.Metadata().ViewUUID() {
			t.Fatalf("the rename moved the view: %s, want %s", renamed.MetadataLocation(), v.MetadataLocation())
		}
		if ok, err := cat.CheckViewExists(ctx, id); err != nil || ok {
			t.Fatalf("the old name still exists (%v, %v)", ok, err)
		}
		loaded, err := cat.LoadView(ctx, to)
		if err != nil {
			t.Fatal(err)
		}
		if len(loaded.Metadata().Versions()) != 3 || loaded.Metadata().CurrentVersion().Representations[1].Dialect != "spark" {
			t.Fatalf("the renamed view has versions %+v", loaded.Metadata().Versions())
		}
		names := 0
		for n, err := range cat.ListViews(ctx, table.Identifier{"sales"}) {
			if err != nil {
				t.Fatal(err)
			}
			if n[1] != "orders_v" {
				t.Fatalf("listed view %v, want only sales.orders_v", n)
			}
			names++
		}
		if names != 1 {
			t.Fatalf("listed %d views, want 1", names)
		}
		old, ok, err := a.Catalog.Lookup(ctx, catalog.SpaceDataset, "iceberg://main", "sales.orders_view")
		if err != nil || !ok || old.ID != ref.ID || !old.Former {
			t.Fatalf("the former name resolves to %+v (ok %v, err %v), want asset %s as a former name", old, ok, err, ref.ID)
		}
		// Lineage: the stated input that exists is upstream of the view; the unknown one was not made up.
		up, err := a.Lineage.Lineage(ctx, ref.ID, lineage.Upstream, 2, 100)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, n := range up.Nodes {
			found[n.Name] = true
		}
		if !found["sales.orders"] || found["sales.nowhere"] {
			t.Fatalf("the view's upstream is %+v, want sales.orders and not sales.nowhere", up.Nodes)
		}
		if _, ok, _ := a.Catalog.Lookup(ctx, catalog.SpaceDataset, "iceberg://main", "sales.nowhere"); ok {
			t.Fatal("a stated input nobody knows became an asset")
		}
		// The page shows the versions, their dialects and SQL, and the current one.
		code, page := s.do(t, "GET", "/assets/"+ref.ID.String(), "", "", nil)
		if code != http.StatusOK {
			t.Fatalf("asset page: %d", code)
		}
		for _, want := range []string{`id="iceberg-view"`, `data-version="1"`, `data-version="3"`, "3 <strong>(current)</strong>", "SELECT id, region FROM sales.orders", ">spark<", "engine-name"} {
			if !strings.Contains(page, want) {
				t.Fatalf("the asset page lacks %q", want)
			}
		}

		if err := cat.DropView(ctx, to); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.LoadView(ctx, to); !errors.Is(err, icecat.ErrNoSuchView) {
			t.Fatalf("a dropped view loads: %v", err)
		}
		after, err := a.Catalog.Get(ctx, ref.ID)
		if err != nil || after.Status != catalog.StatusDeleted || after.ID != ref.ID {
			t.Fatalf("after the drop the asset is %+v (%v), want the same asset, deleted", after, err)
		}
		// The namespace is empty again.
		if err := cat.DropTable(ctx, table.Identifier{"sales", "orders"}); err != nil {
			t.Fatal(err)
		}
		if err := cat.DropNamespace(ctx, table.Identifier{"sales"}); err != nil {
			t.Fatalf("drop the emptied namespace: %v", err)
		}
	})
}

// TestViewRegisterAndSharedLocation: a view placed at a live table's location (as iceberg-go's
// integration test does) keeps that location but writes its metadata elsewhere, so no table's
// walk finds it; a dropped view registers again from its metadata file under the same asset.
func TestViewRegisterAndSharedLocation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.restClient(t)
		tbl := create(t, cat, "ns", "t")
		ver, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT 1", "trino")}, table.Identifier{"ns"})
		if err != nil {
			t.Fatal(err)
		}
		id := table.Identifier{"ns", "v"}
		v, err := cat.CreateView(ctx, id, ver, tablestest.Schema, icecat.WithViewLocation(tbl.Location()))
		if err != nil {
			t.Fatal(err)
		}
		if v.Location() != tbl.Location() {
			t.Fatalf("view location %s, want the given %s", v.Location(), tbl.Location())
		}
		local := strings.TrimPrefix(strings.TrimPrefix(tbl.Location(), "file://"), "file:")
		if strings.HasPrefix(strings.TrimPrefix(v.MetadataLocation(), "file://"), local) {
			t.Fatalf("the view's metadata %s was written under live table's location %s", v.MetadataLocation(), tbl.Location())
		}
		// A table may not be placed over a live view's metadata.
		dir := filepath.Dir(strings.TrimPrefix(v.MetadataLocation(), "file://"))
		code, body := s.do(t, "POST", "/iceberg/v1/main/namespaces/ns/tables", s.Token,
			fmt.Sprintf(`{"name":"over","location":%q,"schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, dir), nil)
		if code != http.StatusConflict || !strings.Contains(body, "keeps its metadata") {
			t.Fatalf("a table over a view's metadata: %d %s", code, body)
		}
		ref, _, err := s.App.Catalog.LookupExternal(ctx, warehouse.SystemIcebergView, v.Metadata().ViewUUID().String())
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.DropView(ctx, id); err != nil {
			t.Fatal(err)
		}
		again, err := cat.RegisterView(ctx, table.Identifier{"ns", "back"}, v.MetadataLocation())
		if err != nil {
			t.Fatalf("register: %v", err)
		}
		if again.MetadataLocation() != v.MetadataLocation() {
			t.Fatalf("registered at %s, want %s", again.MetadataLocation(), v.MetadataLocation())
		}
		back, ok, err := s.App.Catalog.LookupExternal(ctx, warehouse.SystemIcebergView, v.Metadata().ViewUUID().String())
		if err != nil || !ok || back.ID != ref.ID {
			t.Fatalf("the registered view is asset %v (%v), want %s again", back.ID, err, ref.ID)
		}
		// Registering it a second time while live is refused.
		if _, err := cat.RegisterView(ctx, table.Identifier{"ns", "twice"}, v.MetadataLocation()); !errors.Is(err, icecat.ErrViewAlreadyExists) {
			t.Fatalf("a second register of a live view answered %v", err)
		}
		if _, err := os.Stat(strings.TrimPrefix(v.MetadataLocation(), "file://")); err != nil {
			t.Fatalf("the metadata file is gone: %v", err)
		}
	})
}

// TestViewBadInput: refused view requests answer in the Iceberg error model, say what to fix,
// and write nothing.
func TestViewBadInput(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.restClient(t)
		create(t, cat, "b", "t")
		ver, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT 1", "trino")}, table.Identifier{"b"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := cat.CreateView(ctx, table.Identifier{"b", "v"}, ver, tablestest.Schema)
		if err != nil {
			t.Fatal(err)
		}
		store := auth.NewStore(db.Client, nil)
		reader, _, err := store.Create(ctx, "reader", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
		version := func(reprs string) string {
			return `{"version-id":1,"schema-id":0,"timestamp-ms":1700000000000,"summary":{},"default-namespace":["b"],"representations":` + reprs + `}`
		}
		good := version(`[{"type":"sql","sql":"SELECT 1","dialect":"trino"}]`)
		createBody := func(name, extra string) string {
			return fmt.Sprintf(`{"name":%q,"schema":%s,"view-version":%s%s}`, name, schema, good, extra)
		}
		vp, views := "/iceberg/v1/main/namespaces/b/views/v", "/iceberg/v1/main/namespaces/b/views"
		cases := []struct {
			name, method, path, token, body string
			status                          int
			typ, says                       string
		}{
			{"NoRepresentations", "POST", views, s.Token, fmt.Sprintf(`{"name":"x","schema":%s,"view-version":%s}`, schema, version(`[]`)), 400, "BadRequestException", "representations"},
			{"NotSQL", "POST", views, s.Token, fmt.Sprintf(`{"name":"x","schema":%s,"view-version":%s}`, schema, version(`[{"type":"python","sql":"x","dialect":"d"}]`)), 400, "BadRequestException", "sql"},
			{"NoVersion", "POST", views, s.Token, fmt.Sprintf(`{"name":"x","schema":%s}`, schema), 400, "BadRequestException", "view-version"},
			{"NoSchema", "POST", views, s.Token, fmt.Sprintf(`{"name":"x","view-version":%s}`, good), 400, "BadRequestException", "schema"},
			{"BadSchema", "POST", views, s.Token, fmt.Sprintf(`{"name":"x","schema":{"type":"struct","fields":[{"id":1,"name":"a","type":"decimal(x)"}]},"view-version":%s}`, good), 400, "BadRequestException", ""},
			{"OutsideTheWarehouse", "POST", views, s.Token, createBody("x", `,"location":"file:///tmp/elsewhere"`), 400, "BadRequestException", "not under warehouse"},
			{"NameOfATable", "POST", views, s.Token, createBody("t", ""), 409, "AlreadyExistsException", "a table named b.t exists"},
			{"NameTaken", "POST", views, s.Token, createBody("v", ""), 409, "AlreadyExistsException", "already exists"},
			{"TableNamedLikeAView", "POST", "/iceberg/v1/main/namespaces/b/tables", s.Token, fmt.Sprintf(`{"name":"v","schema":%s}`, schema), 409, "AlreadyExistsException", "a view named b.v exists"},
			{"RenameViewOntoTable", "POST", "/iceberg/v1/main/views/rename", s.Token, `{"source":{"namespace":["b"],"name":"v"},"destination":{"namespace":["b"],"name":"t"}}`, 409, "AlreadyExistsException", "a table named b.t exists"},
			{"RenameTableOntoView", "POST", "/iceberg/v1/main/tables/rename", s.Token, `{"source":{"namespace":["b"],"name":"t"},"destination":{"namespace":["b"],"name":"v"}}`, 409, "AlreadyExistsException", "a view named b.v exists"},
			{"RenameMissing", "POST", "/iceberg/v1/main/views/rename", s.Token, `{"source":{"namespace":["b"],"name":"t"},"destination":{"namespace":["b"],"name":"w"}}`, 404, "NoSuchViewException", "b.t"},
			{"UnknownUpdate", "POST", vp, s.Token, `{"requirements":[],"updates":[{"action":"paint-it-blue"}]}`, 400, "BadRequestException", "paint-it-blue"},
			{"UnknownRequirement", "POST", vp, s.Token, `{"requirements":[{"type":"assert-nothing"}],"updates":[]}`, 400, "BadRequestException", "assert-nothing"},
			{"FailingRequirement", "POST", vp, s.Token, `{"requirements":[{"type":"assert-view-uuid","uuid":"00000000-0000-0000-0000-000000000001"}],"updates":[{"action":"set-properties","updates":{"a":"b"}}]}`, 409, "CommitFailedException", "refresh"},
			{"VersionOfNoSchema", "POST", vp, s.Token, `{"requirements":[],"updates":[{"action":"add-view-version","view-version":{"version-id":2,"schema-id":7,"timestamp-ms":1,"summary":{},"default-namespace":["b"],"representations":[{"type":"sql","sql":"SELECT 2","dialect":"trino"}]}}]}`, 400, "BadRequestException", "unknown schema"},
			{"ReassignUUID", "POST", vp, s.Token, `{"requirements":[],"updates":[{"action":"assign-uuid","uuid":"00000000-0000-0000-0000-000000000001"}]}`, 400, "BadRequestException", "reassign"},
			{"MoveOutside", "POST", vp, s.Token, `{"requirements":[],"updates":[{"action":"set-location","location":"file:///tmp/elsewhere"}]}`, 400, "BadRequestException", "not under warehouse"},
			{"IdentifierNotThePath", "POST", vp, s.Token, `{"identifier":{"namespace":["b"],"name":"w"},"requirements":[],"updates":[]}`, 400, "BadRequestException", "not the view in the path"},
			{"LoadMissing", "GET", "/iceberg/v1/main/namespaces/b/views/nope", s.Token, "", 404, "NoSuchViewException", "nope"},
			{"TableIsNoView", "GET", "/iceberg/v1/main/namespaces/b/views/t", s.Token, "", 404, "NoSuchViewException", "b.t"},
			{"NoToken", "POST", views, "", createBody("x", ""), 401, "NotAuthorizedException", "Bearer"},
			{"ReadTokenCreates", "POST", views, reader, createBody("x", ""), 403, "ForbiddenException", "needs write"},
			{"ReadTokenDrops", "DELETE", vp, reader, "", 403, "ForbiddenException", "needs write"},
			{"ReadTokenRenames", "POST", "/iceberg/v1/main/views/rename", reader, `{"source":{"namespace":["b"],"name":"v"},"destination":{"namespace":["b"],"name":"w"}}`, 403, "ForbiddenException", "needs write"},
			{"RegisterNeedsAdmin", "POST", "/iceberg/v1/main/namespaces/b/register-view", s.Writer, `{"name":"x","metadata-location":"file:///x"}`, 403, "ForbiddenException", "admin"},
			{"RegisterOutside", "POST", "/iceberg/v1/main/namespaces/b/register-view", s.Token, `{"name":"x","metadata-location":"file:///etc/hostname"}`, 400, "BadRequestException", "not under warehouse"},
			{"RegisterNotAView", "POST", "/iceberg/v1/main/namespaces/b/register-view", s.Token, fmt.Sprintf(`{"name":"x","metadata-location":%q}`, tablesMetadata(t, s, cat)), 400, "BadRequestException", "view metadata"},
			{"NamespaceWithAView", "DELETE", "/iceberg/v1/main/namespaces/b", s.Token, "", 409, "NamespaceNotEmptyException", "1 views"},
			{"BodyTooLarge", "POST", views, s.Token, `{"name":"x","pad":"` + strings.Repeat("x", 9<<20) + `"}`, 413, "BadRequestException", "over"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				code, body := s.do(t, c.method, c.path, c.token, c.body, nil)
				if code != c.status {
					t.Fatalf("status %d, want %d: %s", code, c.status, body)
				}
				if c.method == "HEAD" {
					return
				}
				var e struct {
					Error struct {
						Message, Type string
						Code          int
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(body), &e); err != nil {
					t.Fatalf("the answer is not the Iceberg error model: %s", body)
				}
				if e.Error.Type != c.typ || e.Error.Code != c.status || !strings.Contains(e.Error.Message, c.says) {
					t.Fatalf("error %+v, want type %s, code %d, a message saying %q", e.Error, c.typ, c.status, c.says)
				}
			})
		}
		// Nothing was written: one view, at its first metadata file; one table.
		after, err := cat.LoadView(ctx, table.Identifier{"b", "v"})
		if err != nil {
			t.Fatal(err)
		}
		if after.MetadataLocation() != v.MetadataLocation() {
			t.Fatalf("a refused request moved the view to %s", after.MetadataLocation())
		}
		n := 0
		for _, err := range cat.ListViews(ctx, table.Identifier{"b"}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("%d views after refused requests, want 1", n)
		}
		for _, name := range []string{"b.x", "b.w"} {
			if _, ok, _ := s.App.Catalog.Lookup(ctx, catalog.SpaceDataset, "iceberg://main", name); ok {
				t.Fatalf("a refused request left asset %s", name)
			}
		}
		if ok, err := cat.CheckTableExists(ctx, table.Identifier{"b", "v"}); err != nil || ok {
			t.Fatalf("a table named like the view exists (%v, %v)", ok, err)
		}
	})
}

// tablesMetadata is the metadata file of table b.t (a table's, not a view's).
func tablesMetadata(t *testing.T, s *testServer, cat *rest.Catalog) string {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), table.Identifier{"b", "t"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl.MetadataLocation()
}

// TestRacingViewReplaces: writers replacing one view at once each add a version; a writer whose
// base moved gets CommitFailed, and no successful replace is lost (the final metadata holds
// every winner's version).
func TestRacingViewReplaces(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.restClient(t)
		if err := cat.CreateNamespace(ctx, table.Identifier{"r"}, nil); err != nil {
			t.Fatal(err)
		}
		id := table.Identifier{"r", "v"}
		ver, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT 0", "trino")}, table.Identifier{"r"})
		if err != nil {
			t.Fatal(err)
		}
		base, err := cat.CreateView(ctx, id, ver, tablestest.Schema)
		if err != nil {
			t.Fatal(err)
		}
		const writers = 6
		errs := make(chan error, writers)
		for i := range writers {
			go func() {
				next := base.Metadata().CurrentVersion().Clone()
				next.VersionID = int64(i + 2)
				next.Representations = []view.Representation{view.NewRepresentation(fmt.Sprintf("SELECT %d", i+1), "trino")}
				_, err := cat.UpdateView(ctx, id, view.Requirements{view.AssertViewUUID(base.Metadata().ViewUUID())},
					view.Updates{view.NewAddViewVersionUpdate(next), view.NewSetCurrentVersionUpdate(view.LastAddedID)})
				errs <- err
			}()
		}
		won := 0
		for range writers {
			switch err := <-errs; {
			case err == nil:
				won++
			case errors.Is(err, rest.ErrCommitFailed):
			default:
				t.Fatalf("a racing replace answered %v, want success or CommitFailed", err)
			}
		}
		final, err := cat.LoadView(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if won < 1 || len(final.Metadata().Versions()) != 1+won {
			t.Fatalf("%d replaces won, the view holds %d versions: a won replace was lost", won, len(final.Metadata().Versions()))
		}
	})
}
