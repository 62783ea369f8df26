package restcatalog_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestRecordedWithTheSwap: a commit's versions and its write in the table's usage are recorded
// in the swap's transaction, each on its own: when one of them fails part-way (a table it writes
// is gone), what it had written is rolled back, the other is kept, and the commit stands.
func TestRecordedWithTheSwap(t *testing.T) {
	cases := []struct {
		name        string
		broken      string // a table the failing part writes (usage: after it stored the record)
		versions    bool   // the commit's snapshot is recorded as a version
		usageWrites int    // the table's write records after the commit
	}{
		{name: "usage fails", broken: "usage_actor_monthlies", versions: true, usageWrites: 1},
		{name: "versions fail", broken: "dataset_versions", versions: false, usageWrites: 2},
		{name: "nothing fails", versions: true, usageWrites: 2},
	}
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				tbl := s.append(t, create(t, s.client(t), "along", "t"+strconv.Itoa(i)), 0, 3)
				asset := assetOf(t, s, tbl)
				if tc.broken != "" {
					rename(t, db, tc.broken, tc.broken+"_away")
				}
				tbl = s.append(t, tbl, 3, 2) // must succeed whatever fails alongside
				if tc.broken != "" {
					rename(t, db, tc.broken+"_away", tc.broken)
				}
				loaded, err := s.client(t).LoadTable(ctx, tbl.Identifier())
				if err != nil {
					t.Fatal(err)
				}
				snap := loaded.Metadata().CurrentSnapshot()
				if snap == nil || snap.SnapshotID != tbl.Metadata().CurrentSnapshot().SnapshotID {
					t.Fatalf("the commit did not stand: current snapshot %v", snap)
				}
				n, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset),
					datasetversion.Version(strconv.FormatInt(snap.SnapshotID, 10))).Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got := n == 1; got != tc.versions {
					t.Errorf("the commit's snapshot recorded as a version: %v, want %v", got, tc.versions)
				}
				writes, err := db.Client.UsageEvent.Query().Where(usageevent.AssetID(asset), usageevent.KindEQ(usageevent.KindWrite)).Count(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if writes != tc.usageWrites {
					t.Errorf("%d write records, want %d (a failed part keeps nothing it wrote)", writes, tc.usageWrites)
				}
			})
		}
	})
}

// rename renames a table of the store (a fault: what writes it fails until it is back).
func rename(t *testing.T, db *storage.DB, from, to string) {
	t.Helper()
	if _, err := db.SQL.ExecContext(context.Background(), "ALTER TABLE "+from+" RENAME TO "+to); err != nil {
		t.Fatal(err)
	}
}
