package restcatalog_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/iceberginventoryfile"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// TestAbandonedCommitNeverSwaps: a commit the settling loop marks abandoned while it waits
// before its swap (its file is then a leftover the bot may delete) can never swap afterwards:
// the client gets a 503, and the pointer stays.
func TestAbandonedCommitNeverSwaps(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var settle atomic.Bool
		var s *testServer
		s = newServer(t, db, warehouse.WithFaults(warehouse.Faults{BeforeSwap: func(ctx context.Context, _ []string) error {
			if settle.CompareAndSwap(true, false) {
				if n, err := s.App.Warehouse.ResolvePending(ctx, 0); err != nil || n != 1 {
					return fmt.Errorf("settle: %d, %v", n, err)
				}
			}
			return nil
		}}))
		tbl := s.append(t, create(t, s.client(t), "a", "t"), 0, 2)
		before := tbl.MetadataLocation()
		settle.Store(true)
		_, err := tbl.Append(ctx, s.lake.Record(tbl, tablestest.Rows(2, 1, time.Now())), nil)
		if err == nil || !strings.Contains(err.Error(), "settled as abandoned") {
			t.Fatalf("a commit settled as abandoned before its swap: %v", err)
		}
		now, err := s.client(t).LoadTable(ctx, table.Identifier{"a", "t"})
		if err != nil {
			t.Fatal(err)
		}
		if now.MetadataLocation() != before {
			t.Fatalf("the pointer moved to %s", now.MetadataLocation())
		}
	})
}

// TestUnreadableManifestList: a new snapshot whose manifest list, inside the table's location,
// is missing or not a manifest list gets 503 (nothing committed) and the pointer stays.
func TestUnreadableManifestList(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		tbl := s.append(t, create(t, s.client(t), "m", "t"), 0, 2)
		cur := tbl.CurrentSnapshot()
		corrupt := tbl.Location() + "/metadata/snap-corrupt.avro"
		if err := os.WriteFile(strings.TrimPrefix(corrupt, "file://"), []byte("not avro"), 0o644); err != nil {
			t.Fatal(err)
		}
		for i, list := range []string{tbl.Location() + "/metadata/snap-missing.avro", corrupt} {
			id := cur.SnapshotID + int64(i) + 1
			body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":%d,"parent-snapshot-id":%d,"sequence-number":%d,"timestamp-ms":%d,"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
				id, cur.SnapshotID, tbl.Metadata().LastSequenceNumber()+1, time.Now().UnixMilli(), list, id)
			if code, text := s.do(t, "POST", "/iceberg/v1/main/namespaces/m/tables/t", s.Writer, body, nil); code != 503 || !strings.Contains(text, "nothing was committed") {
				t.Fatalf("manifest list %s: %d %s", list, code, text)
			}
		}
		now, err := s.client(t).LoadTable(context.Background(), table.Identifier{"m", "t"})
		if err != nil {
			t.Fatal(err)
		}
		if now.MetadataLocation() != tbl.MetadataLocation() {
			t.Fatalf("the pointer moved to %s", now.MetadataLocation())
		}
	})
}

// TestPendingFoundCommitted: a commit whose swap landed but whose bookkeeping did not (forged
// here: its row set back to pending and its inventory rows removed) is settled as committed
// with its files recorded as added, so the inventory's live files are the table's again.
func TestPendingFoundCommitted(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		tbl := s.append(t, create(t, s.client(t), "p", "t"), 0, 2)
		tbl = s.append(t, tbl, 2, 3)
		id := assetOf(t, s, tbl)
		c, err := db.Client.IcebergCommit.Query().Where(icebergcommit.AssetID(id), icebergcommit.NewLocation(tbl.MetadataLocation())).Only(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before, err := db.Client.IcebergInventoryFile.Query().Where(iceberginventoryfile.CommitID(c.ID)).Count(ctx)
		if err != nil || before < 3 {
			t.Fatalf("the commit recorded %d files (%v)", before, err)
		}
		if _, err := db.Client.IcebergInventoryFile.Delete().Where(iceberginventoryfile.CommitID(c.ID)).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.Client.IcebergCommit.UpdateOneID(c.ID).SetState("pending").ClearFinishedAt().Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := s.App.Warehouse.ResolvePending(ctx, 0); err != nil || n != 1 {
			t.Fatalf("settled %d (%v)", n, err)
		}
		got, err := db.Client.IcebergCommit.Get(ctx, c.ID)
		if err != nil || got.State != "committed" {
			t.Fatalf("state %v (%v)", got, err)
		}
		after, err := db.Client.IcebergInventoryFile.Query().Where(iceberginventoryfile.CommitID(c.ID), iceberginventoryfile.Change("added")).Count(ctx)
		if err != nil || after != before {
			t.Fatalf("the settled commit recorded %d added files, its swap had recorded %d (%v)", after, before, err)
		}
		if zero, err := db.Client.IcebergInventoryFile.Query().Where(iceberginventoryfile.CommitID(c.ID), iceberginventoryfile.Size(0)).Count(ctx); err != nil || zero != 0 {
			t.Fatalf("the settled commit recorded %d files of size 0 (%v)", zero, err)
		}
		live, ok, err := s.App.Warehouse.LiveFromInventory(ctx, id, tbl.Metadata(), tbl.CurrentSnapshot().SnapshotID)
		if err != nil || !ok || len(live) != len(s.lake.Files(tbl, *tbl.CurrentSnapshot())) {
			t.Fatalf("live from the inventory: %d files, ok %v (%v); the table has %d", len(live), ok, err, len(s.lake.Files(tbl, *tbl.CurrentSnapshot())))
		}
	})
}

// TestLoadIfNoneMatchList: a load whose If-None-Match lists several tags, the table's among
// them (weak or not), answers 304; a list without it, or with a tag it merely contains, 200.
func TestLoadIfNoneMatchList(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		create(t, s.client(t), "n", "t")
		path := "/iceberg/v1/main/namespaces/n/tables/t"
		req, _ := http.NewRequest("GET", s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tag := resp.Header.Get("ETag")
		if tag == "" {
			t.Fatal("no ETag")
		}
		for _, c := range []struct {
			inm  string
			want int
		}{
			{`"other", ` + tag, 304},
			{`"other", W/` + tag, 304},
			{`"other", "another"`, 200},
			{`"x` + strings.Trim(tag, `"`) + `x"`, 200},
		} {
			code, _ := s.doWith(t, "GET", path, s.Token, "", map[string]string{"If-None-Match": c.inm}, nil)
			if code != c.want {
				t.Errorf("If-None-Match %s: %d, want %d", c.inm, code, c.want)
			}
		}
	})
}

// TestInventoryRecordsDroppedManifests: a commit whose manifest list drops manifests its
// parent's listed (a merging append) records each dropped one as removed, and only those: when
// the parent's list was read by the same process's previous commit (kept from it) and when it
// is read anew (a second Tidemark on the same database and warehouse, which kept nothing).
func TestInventoryRecordsDroppedManifests(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		other := secondServer(t, s, db)
		tbl := create(t, s.client(t), "d", "t", icecat.WithProperties(iceberg.Properties{
			"commit.manifest-merge.enabled": "true", "commit.manifest.min-count-to-merge": "2"}))
		id := assetOf(t, s, tbl)
		dropped := 0
		for i, via := range []*testServer{s, s, s, other, other, s} {
			cur, err := via.client(t).LoadTable(ctx, table.Identifier{"d", "t"})
			if err != nil {
				t.Fatal(err)
			}
			tbl = via.append(t, cur, 2*i, 2)
			snap := tbl.CurrentSnapshot()
			want := droppedManifests(t, tbl, *snap)
			dropped += len(want)
			got := map[string]int64{}
			rows, _, err := s.App.Warehouse.Inventory(ctx, id, warehouse.InventoryFilter{SnapshotID: &snap.SnapshotID, Change: "removed", Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.Kind == "manifest" {
					got[r.Path] = r.Size
				}
			}
			if len(got) != len(want) {
				t.Fatalf("commit %d: the inventory records %d manifests removed, the lists drop %d (%v, %v)", i, len(got), len(want), got, want)
			}
			for p, size := range want {
				if got[p] != size {
					t.Fatalf("commit %d: dropped manifest %s recorded with size %d, want %d", i, p, got[p], size)
				}
			}
		}
		if dropped == 0 {
			t.Fatal("no commit dropped a manifest: the merge did not happen, nothing was checked")
		}
	})
}

// secondServer is another Tidemark on s's database and warehouse, with s's tokens.
func secondServer(t *testing.T, s *testServer, db *storage.DB) *testServer {
	t.Helper()
	a, err := app.Open(context.Background(), db, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: s.Warehouse})}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.Handler(server.Config{}, handlers.Config{}, web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{URL: srv.URL, App: a, Shell: h, Token: s.Token, Writer: s.Writer, Warehouse: s.Warehouse, lake: s.lake}
}

// droppedManifests reads the manifests the snapshot's parent listed and its own list does not.
func droppedManifests(t *testing.T, tbl *table.Table, snap table.Snapshot) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if snap.ParentSnapshotID == nil {
		return out
	}
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mine, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, mf := range mine {
		listed[mf.FilePath()] = true
	}
	parent, err := tbl.Metadata().SnapshotByID(*snap.ParentSnapshotID).Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range parent {
		if !listed[mf.FilePath()] {
			out[mf.FilePath()] = mf.Length()
		}
	}
	return out
}
