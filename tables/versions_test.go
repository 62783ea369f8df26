package tables_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/versions"
)

func versionRows(t *testing.T, db *storage.DB, asset uuid.UUID) map[string]*ent.DatasetVersion {
	t.Helper()
	rows, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset)).All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ent.DatasetVersion{}
	for _, r := range rows {
		out[r.Version] = r
	}
	return out
}

// TestSyncRecordsVersions: a sync records every snapshot of a synced table (parent, sequence
// number, operation, summary, time) once; a second sync and a refresh add nothing; a snapshot
// expired in the catalog is marked expired by the next sync and kept; a new one is added.
func TestSyncRecordsVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		cat := mustCatalog(t, db)
		ver, err := versions.New(db, cat)
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := newService(t, db, c, tables.WithConnections(connection(l)), tables.WithVersions(ver))
		tbl := l.Create("db.orders", nil)
		const n = 4
		for i := range n {
			tbl = l.Append(tbl, tablestest.Rows(i*10, 10, t0))
		}
		rep := sync(t, svc)
		if len(rep.Connections) != 1 || len(rep.Connections[0].Added) != 1 {
			t.Fatalf("first sync: %+v", rep)
		}
		id := rep.Connections[0].Added[0].AssetID
		got := versionRows(t, db, id)
		if len(got) != n {
			t.Fatalf("first sync: %d versions; want %d", len(got), n)
		}
		for _, snap := range tbl.Metadata().Snapshots() {
			v := got[strconv.FormatInt(snap.SnapshotID, 10)]
			parent := ""
			if snap.ParentSnapshotID != nil {
				parent = strconv.FormatInt(*snap.ParentSnapshotID, 10)
			}
			if v == nil || v.Source != versions.SourceSync || !v.SeenInTable || v.ParentVersion != parent || v.Operation != "append" ||
				v.SequenceNumber == nil || *v.SequenceNumber != snap.SequenceNumber || v.CommittedAt == nil ||
				!v.CommittedAt.Equal(time.UnixMilli(snap.TimestampMs).UTC()) || v.Summary == "" || v.ExpiredAt != nil {
				t.Fatalf("snapshot %d as a version = %+v", snap.SnapshotID, v)
			}
		}
		first := map[string]uuid.UUID{}
		for k, v := range got {
			first[k] = v.ID
		}

		sync(t, svc) // the same metadata: not even read again
		if _, err := svc.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		} // read again: everything known
		again := versionRows(t, db, id)
		if len(again) != n {
			t.Fatalf("after a second sync and a refresh: %d versions; want %d", len(again), n)
		}
		for k, v := range again {
			if first[k] != v.ID || v.Source != versions.SourceSync {
				t.Fatalf("version %s changed identity or source: %+v", k, v)
			}
		}

		// Expire the two oldest snapshots in the catalog itself, then append one.
		snaps := tbl.Metadata().Snapshots()
		old := []int64{snaps[0].SnapshotID, snaps[1].SnapshotID}
		if _, _, err := l.Cat.CommitTable(ctx, table.Identifier{"db", "orders"}, nil,
			[]table.Update{table.NewRemoveSnapshotsUpdate(old, false)}); err != nil {
			t.Fatal(err)
		}
		tbl, err = l.Cat.LoadTable(ctx, table.Identifier{"db", "orders"})
		if err != nil {
			t.Fatal(err)
		}
		tbl = l.Append(tbl, tablestest.Rows(100, 1, t0))
		c.t = t0.Add(time.Hour)
		sync(t, svc)
		after := versionRows(t, db, id)
		if len(after) != n+1 {
			t.Fatalf("after expiry and an append: %d versions; want %d (the expired kept, the new added)", len(after), n+1)
		}
		expired := 0
		for k, v := range after {
			isOld := k == strconv.FormatInt(old[0], 10) || k == strconv.FormatInt(old[1], 10)
			switch {
			case isOld && (v.ExpiredAt == nil || !v.ExpiredAt.Equal(c.t) || v.ExpiredBy != tables.ExpiredBySync):
				t.Fatalf("expired snapshot %s = %+v; want expired by sync at %v", k, v, c.t)
			case !isOld && v.ExpiredAt != nil:
				t.Fatalf("live snapshot %s marked expired: %+v", k, v)
			case isOld:
				expired++
			}
		}
		if cur := tbl.CurrentSnapshot(); expired != 2 || after[strconv.FormatInt(cur.SnapshotID, 10)] == nil {
			t.Fatalf("%d expired, new snapshot recorded: %v", expired, after[strconv.FormatInt(cur.SnapshotID, 10)] != nil)
		}
	})
}

// TestRegisterRecordsVersions: a table registered by its metadata location has its snapshots
// recorded as versions an inspection found.
func TestRegisterRecordsVersions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		cat := mustCatalog(t, db)
		ver, err := versions.New(db, cat)
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := newService(t, db, c, tables.WithVersions(ver))
		tbl := l.Append(l.Append(l.Create("db.events", nil), tablestest.Rows(0, 3, t0)), tablestest.Rows(3, 3, t0))
		reg, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		got := versionRows(t, db, reg.AssetID)
		if len(got) != 2 {
			t.Fatalf("%d versions; want 2", len(got))
		}
		for k, v := range got {
			if v.Source != versions.SourceInspection || !v.SeenInTable || v.CommittedAt == nil {
				t.Fatalf("version %s = %+v", k, v)
			}
		}
	})
}

// TestSyncRecordsVersionsOfUnchangedTables: a table inspected before versions were kept (its
// metadata unchanged since) has its versions recorded by the next sync, once.
func TestSyncRecordsVersionsOfUnchangedTables(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		tbl := l.Append(l.Append(l.Create("db.old", nil), tablestest.Rows(0, 1, t0)), tablestest.Rows(1, 1, t0))
		before, _ := newService(t, db, c, tables.WithConnections(connection(l)))
		rep := sync(t, before)
		id := rep.Connections[0].Added[0].AssetID
		if n := len(versionRows(t, db, id)); n != 0 {
			t.Fatalf("%d versions without a versions service", n)
		}
		ver, err := versions.New(db, mustCatalog(t, db))
		if err != nil {
			t.Fatal(err)
		}
		svc, _ := newService(t, db, c, tables.WithConnections(connection(l)), tables.WithVersions(ver))
		for range 2 {
			rep = sync(t, svc)
			if rep.Connections[0].Unchanged != 1 {
				t.Fatalf("sync: %+v; want the table unchanged", rep.Connections[0])
			}
			got := versionRows(t, db, id)
			if len(got) != 2 || got[strconv.FormatInt(tbl.CurrentSnapshot().SnapshotID, 10)] == nil {
				t.Fatalf("%d versions after syncing the unchanged table; want its 2 snapshots", len(got))
			}
		}
	})
}
