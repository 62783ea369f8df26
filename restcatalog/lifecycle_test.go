package restcatalog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestLifecycle follows one table through iceberg-go's REST client: create, three appends, a
// rename, a load under the new name (same asset, lineage and usage), and a drop that deletes no
// file.
func TestLifecycle(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		l := &lifecycle{t: t, ctx: ctx, s: s, cat: s.client(t)}
		l.create()
		moved := l.rename()
		l.assetFollowsRename()
		cur := moved.CurrentSnapshot()
		l.inventoryEqualsWalk(moved, cur)
		l.commitsRecorded()
		l.dropKeepsFiles(moved, cur)
	})
}

// lifecycle is TestLifecycle's table: the server it is served by and the asset it is.
type lifecycle struct {
	t     *testing.T
	ctx   context.Context
	s     *testServer
	cat   icecat.Catalog
	tuuid string    // the table's table-uuid
	id    uuid.UUID // its asset
}

// create creates sales.orders with three appends, finds its asset, and has a job write it by
// name (lineage before the rename).
func (l *lifecycle) create() {
	t, ctx, s, a := l.t, l.ctx, l.s, l.s.App
	t.Helper()
	tbl := create(t, l.cat, "sales", "orders")
	for i := range 3 {
		tbl = s.append(t, tbl, i*10, 10)
	}
	l.tuuid = tbl.Metadata().TableUUID().String()
	ref, ok, err := a.Catalog.LookupExternal(ctx, catalog.SystemIcebergTable, l.tuuid)
	if err != nil || !ok {
		t.Fatalf("the table-uuid is bound to no asset: %v", err)
	}
	l.id = ref.ID
	// A job writes the table (lineage by name, before the rename).
	ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"producer":"https://example.com/test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
			"run":{"runId":%q},"job":{"namespace":"spark","name":"load_orders"},"inputs":[],"outputs":[{"namespace":"iceberg://main","name":"sales.orders"}]}`,
		time.Now().UTC().Format(time.RFC3339Nano), uuid.Must(uuid.NewV7()))
	if _, err := a.Lineage.Ingest(ctx, []byte(ev)); err != nil {
		t.Fatal(err)
	}
}

// rename renames the table to sales.orders_v2 and returns it loaded under the new name, the
// same table; the old name no longer loads.
func (l *lifecycle) rename() *table.Table {
	t, ctx, cat := l.t, l.ctx, l.cat
	t.Helper()
	if _, err := cat.RenameTable(ctx, table.Identifier{"sales", "orders"}, table.Identifier{"sales", "orders_v2"}); err != nil {
		t.Fatal(err)
	}
	moved, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders_v2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := moved.Metadata().TableUUID().String(); got != l.tuuid {
		t.Fatalf("renamed table has table-uuid %s, want %s", got, l.tuuid)
	}
	if got := len(moved.Metadata().Snapshots()); got != 3 {
		t.Fatalf("renamed table has %d snapshots, want 3", got)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"}); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("the old name still loads: %v", err)
	}
	return moved
}

// assetFollowsRename: after the rename the asset has the new name, the old one as a former
// name, and keeps its lineage and usage.
func (l *lifecycle) assetFollowsRename() {
	t, ctx, a, id := l.t, l.ctx, l.s.App, l.id
	t.Helper()
	asset, err := a.Catalog.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if asset.Namespace != "iceberg://main" || asset.Name != "sales.orders_v2" {
		t.Fatalf("asset %s is named %s %s after the rename, want iceberg://main sales.orders_v2", id, asset.Namespace, asset.Name)
	}
	old, ok, err := a.Catalog.Lookup(ctx, catalog.SpaceDataset, "iceberg://main", "sales.orders")
	if err != nil || !ok || old.ID != id || !old.Former {
		t.Fatalf("the former name resolves to %+v (ok %v, err %v), want asset %s as a former name", old, ok, err, id)
	}
	up, err := a.Lineage.Lineage(ctx, id, lineage.Upstream, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range up.Nodes {
		found = found || n.Name == "load_orders"
	}
	if !found {
		t.Fatalf("after the rename the asset's upstream lacks the job that wrote it: %+v", up.Nodes)
	}
	series, err := a.Usage.Series(ctx, id, time.Now().Add(-48*time.Hour), time.Now().Add(24*time.Hour), "day")
	if err != nil {
		t.Fatal(err)
	}
	if series.Writes != 4 { // three appends through the catalog and the job run that wrote it
		t.Fatalf("usage counts %d writes of the asset, want 4 (one per commit through the catalog)", series.Writes)
	}
}

// inventoryEqualsWalk: the inventory recorded on the write path equals a walk of the current
// snapshot cur.
func (l *lifecycle) inventoryEqualsWalk(moved *table.Table, cur *table.Snapshot) {
	t, ctx, a, id := l.t, l.ctx, l.s.App, l.id
	t.Helper()
	live, complete, err := a.Warehouse.LiveFromInventory(ctx, id, moved.Metadata(), cur.SnapshotID)
	if err != nil || !complete {
		t.Fatalf("inventory: complete %v, err %v", complete, err)
	}
	walked := l.s.lake.Files(moved, *cur)
	if len(live) != len(walked) || len(walked) != 3 {
		t.Fatalf("inventory holds %d live files, the manifest walk %d (want 3)", len(live), len(walked))
	}
	for p := range walked {
		if !live[p] {
			t.Fatalf("the walk found %s, the inventory does not hold it", p)
		}
	}
}

// commitsRecorded: the create, the three appends and the rename were each recorded as committed.
func (l *lifecycle) commitsRecorded() {
	t, ctx, a, id := l.t, l.ctx, l.s.App, l.id
	t.Helper()
	commits, _, err := a.Warehouse.Commits(ctx, id, uuid.Nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range commits {
		if c.State != "committed" {
			t.Fatalf("commit %s is %s: %s", c.ID, c.State, c.Reason)
		}
		kinds[c.Kind]++
	}
	if kinds["create"] != 1 || kinds["commit"] != 3 || kinds["rename"] != 1 {
		t.Fatalf("recorded commits %v, want 1 create, 3 commits, 1 rename", kinds)
	}
}

// dropKeepsFiles: a drop without purge deletes the asset but no file of the snapshot cur, and
// frees the name for a new asset.
func (l *lifecycle) dropKeepsFiles(moved *table.Table, cur *table.Snapshot) {
	t, ctx, a, cat, id := l.t, l.ctx, l.s.App, l.cat, l.id
	t.Helper()
	files := l.s.lake.Files(moved, *cur)
	if err := cat.DropTable(ctx, table.Identifier{"sales", "orders_v2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders_v2"}); !errors.Is(err, icecat.ErrNoSuchTable) {
		t.Fatalf("the dropped table still loads: %v", err)
	}
	if asset, err := a.Catalog.Get(ctx, id); err != nil || asset.Status != catalog.StatusDeleted {
		t.Fatalf("after the drop the asset is %q (err %v), want deleted", asset.Status, err)
	}
	for p := range files {
		if _, err := os.Stat(p[len("file://"):]); err != nil {
			t.Fatalf("a drop without purge deleted data file %s: %v", p, err)
		}
	}
	// The name is free again: a new table under it is a new asset.
	again, err := cat.CreateTable(ctx, table.Identifier{"sales", "orders_v2"}, tablestest.Schema)
	if err != nil {
		t.Fatal(err)
	}
	ref2, _, err := a.Catalog.LookupExternal(ctx, catalog.SystemIcebergTable, again.Metadata().TableUUID().String())
	if err != nil || ref2.ID == id {
		t.Fatalf("the new table under the old name is asset %s (err %v): it must not be the dropped one", ref2.ID, err)
	}
}

// TestInventoryOfAMultiSnapshotCommit: one commit that adds two snapshots (two appends in one
// transaction) is recorded for both, so the inventory's live set is complete and equals a walk.
func TestInventoryOfAMultiSnapshotCommit(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		tbl := create(t, s.client(t), "multi", "t")
		tx := tbl.NewTransaction()
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		if err := tx.Append(ctx, s.lake.Record(tbl, tablestest.Rows(0, 2, start)), nil); err != nil {
			t.Fatal(err)
		}
		if err := tx.Append(ctx, s.lake.Record(tbl, tablestest.Rows(2, 2, start)), nil); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n != 2 {
			t.Fatalf("the transaction made %d snapshots, want 2", n)
		}
		live, complete, err := s.App.Warehouse.LiveFromInventory(ctx, assetOf(t, s, tbl), tbl.Metadata(), tbl.CurrentSnapshot().SnapshotID)
		if err != nil || !complete {
			t.Fatalf("inventory after a two-snapshot commit: complete %v, err %v", complete, err)
		}
		walked := s.lake.Files(tbl, *tbl.CurrentSnapshot())
		if len(live) != len(walked) {
			t.Fatalf("inventory holds %d live files, the walk %d", len(live), len(walked))
		}
		for p := range walked {
			if !live[p] {
				t.Fatalf("the walk found %s, the inventory does not hold it", p)
			}
		}
	})
}
