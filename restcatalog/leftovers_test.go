package restcatalog_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// shiftClock is the wall clock moved forward by a settable offset: the cleanup bot judges ages
// and gaps by it, while the files and commits keep their real times.
type shiftClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *shiftClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.off) }
func (c *shiftClock) Add(d time.Duration) { c.mu.Lock(); c.off += d; c.mu.Unlock() }

// TestInventoryPassSettlesRejectedCommits: a writer whose commit was rejected (409) left its
// data file, manifest and manifest list; Tidemark recorded them as staged from the write path.
// An inventory pass lists nothing, finds exactly those, and two passes an hour apart confirm
// them; a walk finds them too and, besides, a file nobody recorded (which the inventory cannot
// know). The proposal holds each file once, and executing it deletes them while every row of
// the table stays readable.
func TestInventoryPassSettlesRejectedCommits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now))
		})
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		cat := s.client(t)
		tbl := create(t, cat, "web", "events")
		tbl = s.append(t, tbl, 0, 3)
		stale := tbl
		tbl = s.append(t, tbl, 3, 3)
		if _, err := stale.Append(ctx, s.lake.Record(stale, tablestest.Rows(100, 2, time.Now())), nil); err == nil {
			t.Fatal("a commit from a stale table was accepted")
		}
		id := assetOf(t, s, tbl)
		before := diskFiles(t, s.Warehouse)
		referenced := map[string]bool{}
		for _, snap := range tbl.Metadata().Snapshots() {
			referenced[snap.ManifestList] = true
			for p := range s.lake.Files(tbl, snap) {
				referenced[p] = true
			}
		}
		handWritten := s.lake.WriteFile(tbl, "data/by-hand.parquet", 10, time.Now())

		clock.Add(100 * time.Hour) // older than the 72 h threshold
		inv, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{FromInventory: true})
		if err != nil {
			t.Fatal(err)
		}
		if !inv.FromInventory || inv.Requests.List != 0 || inv.Candidates < 3 || inv.SettledByInventory != inv.Candidates || inv.Confirmed != 0 ||
			!strings.HasPrefix(inv.Summary, "An inventory pass: it listed nothing") {
			t.Fatalf("first inventory pass: %+v", inv)
		}
		clock.Add(2 * time.Hour)
		inv2, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{FromInventory: true})
		if err != nil || inv2.Confirmed != inv.Candidates || inv2.Requests.List != 0 {
			t.Fatalf("second inventory pass: %v %+v", err, inv2)
		}
		for _, p := range inv2.ConfirmedSample {
			if referenced["file://"+p] || referenced[p] || strings.HasSuffix(p, "by-hand.parquet") {
				t.Fatalf("the inventory pass confirmed %s, which it must not", p)
			}
		}
		// A walk: the leftovers are settled by the inventory; it confirms the file nobody recorded.
		var walk cleanup.Report
		for range 2 {
			clock.Add(2 * time.Hour)
			if walk, err = s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if walk.Confirmed != 1 || walk.Unrecorded == nil || *walk.Unrecorded != 1 || walk.SettledByInventory != inv2.Confirmed || walk.SettledByWalk == 0 {
			t.Fatalf("walks: confirmed %d (inventory confirmed %d), unrecorded %v: %s", walk.Confirmed, inv2.Confirmed, walk.Unrecorded, walk.Summary)
		}
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := s.App.Cleanup.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindOrphanFiles, State: "open", Limit: 10})
		if err != nil || len(ps) != 1 || ps[0].Evidence.Files != inv2.Confirmed+1 {
			t.Fatalf("orphan proposals %+v (err %v), want one of %d files", ps, err, inv2.Confirmed+1)
		}
		if _, err := s.App.Cleanup.Approve(catalog.WithActor(ctx, "token:alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(handWritten); !os.IsNotExist(err) {
			t.Fatalf("the file nobody recorded is still there: %v", err)
		}
		after := diskFiles(t, s.Warehouse)
		gone := slices.DeleteFunc(slices.Clone(before), func(p string) bool { return slices.Contains(after, p) })
		if int64(len(gone)) != inv2.Confirmed { // the hand-written file came after "before"
			t.Fatalf("deleted %d of the files that existed before, want the %d leftovers: %v", len(gone), inv2.Confirmed, gone)
		}
		// The record keeps the deleted leftovers: later passes must not propose them again.
		for range 2 {
			clock.Add(2 * time.Hour)
			again, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{FromInventory: true})
			if err != nil || again.Candidates != 0 || again.LeftoversGone != inv2.Confirmed {
				t.Fatalf("an inventory pass after the deletion: %v, %d candidates, %d known gone, want 0 and %d", err, again.Candidates, again.LeftoversGone, inv2.Confirmed)
			}
		}
		loaded, err := cat.LoadTable(ctx, table.Identifier{"web", "events"})
		if err != nil {
			t.Fatal(err)
		}
		if rows, err := s.lake.Intact(loaded); err != nil || rows != 6 {
			t.Fatalf("the table after the deletion: %d rows, %v", rows, err)
		}
	})
}

// diskFiles lists the files under dir.
func diskFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScheduledInventoryPasses: the scheduler walks a served table first, then runs inventory
// passes at the cadence (and a confirming one once the gap has passed), and walks it again only
// after WalkEvery cadences.
func TestScheduledInventoryPasses(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now))
		})
		cat := s.client(t)
		tbl := create(t, cat, "web", "events")
		stale := s.append(t, tbl, 0, 1)
		s.append(t, stale, 1, 1)
		if _, err := stale.Append(ctx, s.lake.Record(stale, tablestest.Rows(100, 2, time.Now())), nil); err == nil {
			t.Fatal("a commit from a stale table was accepted")
		}
		id := assetOf(t, s, tbl)
		clock.Add(100 * time.Hour)
		kinds := func() (walks, inventory int, confirmed int64) {
			t.Helper()
			reps, err := s.App.Cleanup.Scans(ctx, cleanup.ScanFilter{AssetID: id, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if r.FromInventory {
					inventory++
				} else {
					walks++
				}
			}
			return walks, inventory, reps[0].Confirmed
		}
		step := func(advance time.Duration, wantWalks, wantInventory int) int64 {
			t.Helper()
			clock.Add(advance)
			if _, err := s.App.Cleanup.ScanDue(ctx, 24*time.Hour, cleanup.ScanOptions{}); err != nil {
				t.Fatal(err)
			}
			w, i, c := kinds()
			if w != wantWalks || i != wantInventory {
				t.Fatalf("after %s: %d walks and %d inventory passes, want %d and %d", advance, w, i, wantWalks, wantInventory)
			}
			return c
		}
		step(0, 1, 0)                // never walked: a walk
		step(time.Hour, 1, 1)        // no inventory pass yet: one
		c := step(2*time.Hour, 1, 2) // files wait to be confirmed and the gap has passed
		if c < 3 {
			t.Fatalf("the confirming inventory pass confirmed %d files, want the rejected commit's (at least 3)", c)
		}
		step(time.Hour, 1, 2)      // nothing due
		step(24*time.Hour, 1, 3)   // the cadence: an inventory pass, not a walk
		step(7*24*time.Hour, 2, 3) // WalkEvery cadences since the walk: a walk
	})
}
