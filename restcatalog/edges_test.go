package restcatalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestInventoryPassEdges: the leftovers of a rejected commit are confirmed by inventory passes
// only when both edges hold: a pass at 71 h and one at 71 h 55 min confirm nothing (younger
// than the 72 h threshold), the next past 72 h confirms them; on another table, passes 59 min
// apart confirm nothing (the confirmation gap is an hour), the next an hour later confirms.
// A retry that committed what its first attempt staged leaves nothing to confirm.
func TestInventoryPassEdges(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) { c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now)) })
		cat := s.client(t)
		leftovers := func(name string) uuid.UUID {
			tbl := s.append(t, create(t, cat, "e", name), 0, 2)
			stale := tbl
			tbl = s.append(t, tbl, 2, 2)
			if _, err := stale.Append(ctx, s.lake.Record(stale, tablestest.Rows(9, 1, time.Now())), nil); err == nil {
				t.Fatal("a stale commit was accepted")
			}
			return assetOf(t, s, tbl)
		}
		pass := func(id uuid.UUID, at time.Duration) cleanup.Report {
			t.Helper()
			clock.Set(at)
			rep, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{FromInventory: true})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		age := leftovers("age")
		for _, at := range []time.Duration{71 * time.Hour, 71*time.Hour + 55*time.Minute} {
			if r := pass(age, at); r.Confirmed != 0 {
				t.Fatalf("a pass at %s confirmed %d files younger than the 72 h threshold", at, r.Confirmed)
			}
		}
		pass(age, 73*time.Hour)
		if r := pass(age, 74*time.Hour+5*time.Minute); r.Confirmed < 3 {
			t.Fatalf("passes at 73 h and 74 h 5 min confirmed %d files, want the data file, manifest and manifest list: %s", r.Confirmed, r.Summary)
		}

		gap := leftovers("gap")
		g1 := pass(gap, 200*time.Hour)
		if g1.Candidates < 3 {
			t.Fatalf("the rejected commit left %d candidates, want its data file, manifest and manifest list", g1.Candidates)
		}
		if r := pass(gap, 200*time.Hour+59*time.Minute); r.Confirmed != 0 {
			t.Fatalf("a pass 59 min after the first confirmed %d", r.Confirmed)
		}
		if r := pass(gap, 201*time.Hour+time.Minute); r.Confirmed != g1.Candidates {
			t.Fatalf("a pass 61 min after the first confirmed %d of %d", r.Confirmed, g1.Candidates)
		}

		// A writer that lost the race and retried: what it staged is committed, not a leftover.
		tbl := s.append(t, create(t, cat, "e", "retry", retrying), 0, 2)
		stale := tbl
		s.append(t, tbl, 2, 1)
		if _, err := stale.Append(ctx, s.lake.Record(stale, tablestest.Rows(5, 1, time.Now())), nil); err != nil {
			t.Fatalf("the retrying writer: %v", err)
		}
		loaded, err := cat.LoadTable(ctx, tbl.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		referenced := map[string]bool{}
		for _, snap := range loaded.Metadata().Snapshots() {
			referenced[snap.ManifestList] = true
			for p := range s.lake.Files(loaded, snap) {
				referenced[p] = true
			}
		}
		id := assetOf(t, s, loaded)
		pass(id, 300*time.Hour)
		r := pass(id, 302*time.Hour)
		// Staged: the first attempt's data file, manifest and manifest list; the retry committed
		// the first two, so only the list it replaced is a leftover.
		if r.Confirmed != 1 || len(r.ConfirmedSample) != 1 {
			t.Fatalf("over a retried commit: %d confirmed %v, want only the replaced manifest list: %s", r.Confirmed, r.ConfirmedSample, r.Summary)
		}
		for _, p := range r.ConfirmedSample {
			if referenced[p] || referenced["file://"+p] {
				t.Fatalf("confirmed %s, which the table references", p)
			}
		}
	})
}

// Set moves the clock to the real now plus off.
func (c *shiftClock) Set(off time.Duration) { c.mu.Lock(); c.off = off; c.mu.Unlock() }
