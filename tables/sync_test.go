package tables_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

func connection(l *tablestest.Lake) *tables.Connection {
	return tables.NewCatalogConnection(tablestest.Name, "", iceberg.Properties{}, l.Cat)
}

func sync(t *testing.T, svc *tables.Service) tables.SyncReport {
	t.Helper()
	rep, err := svc.Sync(context.Background(), nil)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return rep
}

// olEvent is a COMPLETE run event of job spark/<job> with the given inputs and outputs.
func olEvent(job, at string, inputs, outputs []string) []byte {
	return fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":%q},"job":{"namespace":"spark","name":%q},"inputs":[%s],"outputs":[%s],"producer":"https://github.com/OpenLineage/OpenLineage/tree/1.24.2/integration/spark","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		at, uuid.New(), job, strings.Join(inputs, ","), strings.Join(outputs, ","))
}

// viaCatalog is a dataset the way Spark names an Iceberg table: by location, with a TABLE
// symlink and the catalog facet.
func viaCatalog(location, ident string) string {
	return fmt.Sprintf(`{"namespace":"file","name":%q,"facets":{"symlinks":{"_producer":"p","_schemaURL":"s","identifiers":[{"namespace":"file:/warehouse","name":%q,"type":"TABLE"}]},"catalog":{"_producer":"p","_schemaURL":"s","framework":"iceberg","type":"sql","name":%q}}}`,
		strings.TrimPrefix(location, "file://")+"/unrelated", ident, tablestest.Name)
}

// TestSyncRenameStory follows a table through a rename and a drop in a real Iceberg catalog.
func TestSyncRenameStory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		svc, cat := newService(t, db, c, tables.WithConnections(connection(l)))
		lin, err := lineage.New(db, cat)
		if err != nil {
			t.Fatal(err)
		}
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}

		orders := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 5, t0))
		rep := sync(t, svc)
		if rep.Added != 1 || len(rep.Connections) != 1 || rep.Connections[0].Tables != 1 || rep.Errors != 0 {
			t.Fatalf("first sync: %+v", rep)
		}
		id := rep.Connections[0].Added[0].AssetID
		a, err := cat.Get(ctx, id)
		if err != nil || a.Namespace != "iceberg://lake" || a.Name != "db.orders" {
			t.Fatalf("asset = %+v, %v; want iceberg://lake db.orders", a, err)
		}

		// Lineage names the table by its storage location (as OpenLineage names files) and by
		// the catalog facet; both resolve to the asset.
		loc := strings.TrimPrefix(orders.Location(), "file://")
		mustIngest(t, lin, olEvent("load_orders", "2026-11-01T10:00:00Z", []string{`{"namespace":"file","name":"/landing/orders.csv"}`},
			[]string{fmt.Sprintf(`{"namespace":"file","name":%q}`, loc)}))
		mustIngest(t, lin, olEvent("orders_report", "2026-11-01T11:00:00Z", []string{viaCatalog(orders.Location(), "db.orders")}, nil))
		if _, err := cat.SetOwner(ctx, id, catalog.AnyVersion, catalog.OwnerInput{Principal: "team-orders", Role: "owner"}); err != nil {
			t.Fatal(err)
		}
		loader := jobID(t, cat, "load_orders")
		report := jobID(t, cat, "orders_report")
		assertEdges(t, lin, id, loader, report)

		// Rename through the Iceberg catalog, then sync: the same asset, a longer name history.
		c.t = t0.Add(time.Hour)
		if _, err := l.Cat.RenameTable(ctx, table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		rep = sync(t, svc)
		cr := rep.Connections[0]
		if rep.Renamed != 1 || rep.Added != 0 || rep.MarkedDeleted != 0 || cr.Renamed[0].AssetID != id || cr.Renamed[0].From != "db.orders" {
			t.Fatalf("rename sync: %+v", cr)
		}
		names, err := cat.Names(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range names {
			got = append(got, n.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"db.orders", "db.sales_orders"}) {
			t.Fatalf("names = %v", got)
		}
		a, _ = cat.Get(ctx, id)
		if a.Name != "db.sales_orders" || len(a.Owners) != 1 || a.Owners[0].Principal != "team-orders" {
			t.Fatalf("after rename: %+v", a)
		}
		if res, err := cat.Resolve(ctx, "iceberg://lake", "db.orders"); err != nil || res.Asset.ID != id || !res.Former {
			t.Fatalf("old name resolves to %+v, %v", res, err)
		}
		assertEdges(t, lin, id, loader, report)
		// A job reading the new identifier through the catalog facet reaches the same asset.
		mustIngest(t, lin, olEvent("sales_report", "2026-11-01T12:00:00Z", []string{viaCatalog(orders.Location(), "db.sales_orders")}, nil))
		assertEdges(t, lin, id, loader, jobID(t, cat, "sales_report"))
		if n, _ := db.Client.IcebergTable.Query().Count(ctx); n != 1 {
			t.Fatalf("%d table rows after the rename, want 1", n)
		}

		// Drop in the Iceberg catalog: one listing that lacks it is not proof; a second one at
		// least the confirmation gap later marks the asset deleted. No file is removed.
		before := l.DiskFiles()
		if err := l.Cat.DropTable(ctx, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		rep = sync(t, svc)
		if rep.MarkedDeleted != 0 || rep.Missing != 1 || rep.Connections[0].Missing[0].AssetID != id {
			t.Fatalf("first sync after the drop: %+v", rep.Connections[0])
		}
		if a, _ := cat.Get(ctx, id); a.Status == catalog.StatusDeleted {
			t.Fatal("one listing marked the asset deleted")
		}
		c.t = c.t.Add(30 * time.Minute)
		if rep = sync(t, svc); rep.MarkedDeleted != 0 || rep.Missing != 1 {
			t.Fatalf("second sync, sooner than the gap: %+v", rep.Connections[0])
		}
		c.t = c.t.Add(31 * time.Minute)
		rep = sync(t, svc)
		if rep.MarkedDeleted != 1 || rep.Connections[0].Deleted[0].AssetID != id {
			t.Fatalf("drop sync: %+v", rep.Connections[0])
		}
		if a, _ := cat.Get(ctx, id); a.Status != catalog.StatusDeleted {
			t.Fatalf("asset status %s after the drop, want deleted", a.Status)
		}
		if after := l.DiskFiles(); !slices.Equal(before, after) || len(after) == 0 {
			t.Fatalf("files changed by the sync: %d before, %d after", len(before), len(after))
		}
		tb, _ := svc.Get(ctx, id)
		if tb.GoneAt == nil {
			t.Fatal("table row not marked gone")
		}
		// A refresh (a person's, or an inspection a commit queued) reads the dropped table's last
		// metadata; it must not make the table live again.
		if _, err := svc.Refresh(ctx, id); err != nil {
			t.Fatalf("refresh of the dropped table: %v", err)
		}
		if tb, _ = svc.Get(ctx, id); tb.GoneAt == nil {
			t.Fatal("a refresh made the dropped table live again")
		}
		if rep = sync(t, svc); rep.MarkedDeleted != 0 {
			t.Fatalf("a second sync marked %d deleted again", rep.MarkedDeleted)
		}
	})
}

func mustIngest(t *testing.T, lin *lineage.Service, ev []byte) {
	t.Helper()
	if _, err := lin.Ingest(context.Background(), ev); err != nil {
		t.Fatalf("ingest: %v", err)
	}
}

func jobID(t *testing.T, cat *catalog.Catalog, name string) uuid.UUID {
	t.Helper()
	ref, ok, err := cat.Lookup(context.Background(), catalog.SpaceJob, "spark", name)
	if err != nil || !ok {
		t.Fatalf("job %s: %v", name, err)
	}
	return ref.ID
}

// assertEdges checks that writer writes the table and reader reads it.
func assertEdges(t *testing.T, lin *lineage.Service, tableID, writer, reader uuid.UUID) {
	t.Helper()
	down, err := lin.Downstream(context.Background(), writer, 1)
	if err != nil || !slices.Contains(down, tableID) {
		t.Fatalf("downstream of writer = %v, %v; want %s", down, err, tableID)
	}
	down, err = lin.Downstream(context.Background(), tableID, 1)
	if err != nil || !slices.Contains(down, reader) {
		t.Fatalf("downstream of table = %v, %v; want reader %s", down, err, reader)
	}
}

// flaky fails listing the tables of one namespace, as a catalog that goes away mid-sync does.
type flaky struct {
	icecat.Catalog
	failNamespace string
}

func (f *flaky) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	if strings.Join(ns, ".") == f.failNamespace {
		return func(yield func(table.Identifier, error) bool) {
			yield(nil, errors.New("connection reset by peer"))
		}
	}
	return f.Catalog.ListTables(ctx, ns)
}

// TestSyncUnreachable: a catalog that fails mid-sync is named in the report and nothing of it
// is marked deleted; a catalog that cannot be opened is named too.
func TestSyncUnreachable(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		if err := l.Cat.CreateNamespace(ctx, table.Identifier{"ops"}, nil); err != nil {
			t.Fatal(err)
		}
		l.Append(l.Create("db.a", nil), tablestest.Rows(0, 2, t0))
		l.Append(l.Create("ops.b", nil), tablestest.Rows(0, 2, t0))
		c := &clock{t: t0}
		fl := &flaky{Catalog: l.Cat}
		broken, err := tables.NewConnection(tables.ConnectionConfig{Name: "broken", Type: "sql", Dialect: "postgres",
			URI: "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"})
		if err != nil {
			t.Fatal(err)
		}
		svc, cat := newService(t, db, c, tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, fl), broken))
		rep := sync(t, svc)
		if rep.Added != 2 {
			t.Fatalf("first sync added %d, want 2: %+v", rep.Added, rep)
		}
		if rep.Connections[1].Name != "broken" || rep.Connections[1].Error == "" {
			t.Fatalf("unreachable catalog not reported: %+v", rep.Connections[1])
		}

		fl.failNamespace = "db"
		rep = sync(t, svc)
		cr := rep.Connections[0]
		if rep.MarkedDeleted != 0 || len(cr.Unreachable) != 1 || cr.Unreachable[0].Namespace != "db" || !strings.Contains(cr.Unreachable[0].Error, "connection reset") {
			t.Fatalf("mid-sync failure: %+v", cr)
		}
		ref, ok, _ := cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://lake", "db.a")
		if !ok || ref.Deleted || ref.Former {
			t.Fatalf("db.a after an unreachable listing: %+v", ref)
		}
		// The namespace is back, the table really gone: now it is marked deleted.
		fl.failNamespace = ""
		if err := l.Cat.DropTable(ctx, table.Identifier{"db", "a"}); err != nil {
			t.Fatal(err)
		}
		if rep = sync(t, svc); rep.MarkedDeleted != 0 || rep.Missing != 1 {
			t.Fatalf("after recovery: %+v", rep.Connections[0])
		}
		c.t = c.t.Add(tables.DefaultConfirmGap)
		if rep = sync(t, svc); rep.MarkedDeleted != 1 {
			t.Fatalf("after recovery, a gap later: %+v", rep.Connections[0])
		}
		reps, err := svc.Syncs(ctx, 10)
		if err != nil || len(reps) != 4 || reps[0].ID != rep.ID {
			t.Fatalf("stored reports: %d, %v", len(reps), err)
		}
	})
}

// TestSyncBadTables: corrupt or missing metadata, a missing manifest and a truncated manifest
// each fail their own table, with the error recorded on it, while the others sync.
func TestSyncBadTables(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		svc, _ := newService(t, db, c, tables.WithConnections(connection(l)))
		names := []string{"good", "corrupt_meta", "missing_meta", "missing_manifest", "truncated_manifest"}
		tbls := map[string]*table.Table{}
		for _, n := range names {
			tbls[n] = l.Append(l.Create("db."+n, nil), tablestest.Rows(0, 3, t0))
		}
		if rep := sync(t, svc); rep.Added != len(names) || rep.Errors != 0 {
			t.Fatalf("first sync: %+v", rep)
		}
		// One more commit each, then damage what that commit wrote.
		for _, n := range names {
			tbls[n] = l.Append(tbls[n], tablestest.Rows(10, 3, t0))
		}
		path := func(uri string) string { return strings.TrimPrefix(uri, "file://") }
		newManifest := func(tbl *table.Table) string {
			fs, _ := tbl.FS(ctx)
			mfs, err := tbl.CurrentSnapshot().Manifests(fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range mfs {
				if m.SnapshotID() == tbl.CurrentSnapshot().SnapshotID {
					return path(m.FilePath())
				}
			}
			t.Fatal("no manifest added by the last commit")
			return ""
		}
		must(t, os.WriteFile(path(tbls["corrupt_meta"].MetadataLocation()), []byte(`{"format-version": 2, "table-uuid": `), 0o644))
		must(t, os.Remove(path(tbls["missing_meta"].MetadataLocation())))
		must(t, os.Remove(newManifest(tbls["missing_manifest"])))
		mf := newManifest(tbls["truncated_manifest"])
		st, err := os.Stat(mf)
		must(t, err)
		must(t, os.Truncate(mf, st.Size()/2))

		rep := sync(t, svc)
		cr := rep.Connections[0]
		if rep.MarkedDeleted != 0 || rep.Refreshed != 1 || len(cr.Failed) != 4 {
			t.Fatalf("second sync: refreshed %d, marked deleted %d, failed %+v", rep.Refreshed, rep.MarkedDeleted, cr.Failed)
		}
		for _, f := range cr.Failed {
			tb, err := svc.Get(ctx, f.AssetID)
			if err != nil {
				t.Fatalf("%s: %v", f.Identifier, err)
			}
			if tb.Error == "" || tb.ErrorAt == nil || f.Error == "" {
				t.Errorf("%s: error not recorded on the table: %+v", f.Identifier, tb)
			}
			t.Logf("%s: %s", f.Identifier, f.Error)
		}
		for _, n := range []string{"missing_manifest", "truncated_manifest"} {
			var found bool
			for _, f := range cr.Failed {
				if f.Identifier == "db."+n && strings.Contains(f.Error, "manifest") {
					found = true
				}
			}
			if !found {
				t.Errorf("db.%s: no failure naming the manifest in %+v", n, cr.Failed)
			}
		}
		// The good table moved on to its new snapshot.
		ts, _, err := svc.List(ctx, uuid.Nil, 10)
		must(t, err)
		for _, tb := range ts {
			if tb.Identifier == "db.good" && (tb.CurrentSnapshotID == nil || *tb.CurrentSnapshotID != tbls["good"].CurrentSnapshot().SnapshotID || tb.Error != "") {
				t.Errorf("good table not refreshed: %+v", tb)
			}
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSyncPostgresCatalog syncs iceberg-go's SQL catalog kept in PostgreSQL, configured the way
// an operator would (a connection config, opened by Tidemark).
func TestSyncPostgresCatalog(t *testing.T) {
	ctx := context.Background()
	dsn := storagetest.DSN(t, "postgres")
	l := tablestest.NewLakeOn(t, t.TempDir(), "postgres", dsn)
	tbl := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 3, t0))
	conn, err := tables.NewConnection(tables.ConnectionConfig{Name: "pglake", Catalog: tablestest.Name, Type: "sql", Dialect: "postgres", URI: dsn, Warehouse: "file://" + l.Warehouse})
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	svc, cat := newService(t, storagetest.Open(t, "sqlite"), &clock{t: t0}, tables.WithConnections(conn))
	rep := sync(t, svc)
	if rep.Added != 1 || rep.Errors != 0 {
		t.Fatalf("sync: %+v", rep.Connections)
	}
	if ref := mustResolve(t, cat, tbl); ref.Deleted {
		t.Fatal("asset deleted")
	}
	if a, err := cat.Get(ctx, rep.Connections[0].Added[0].AssetID); err != nil || a.Namespace != "iceberg://pglake" || a.Name != "db.orders" {
		t.Fatalf("asset %+v, %v", a, err)
	}
}
