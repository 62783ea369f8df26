package usage_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

// hooked is the usage test environment wired as serve wires it: every catalog change resolves
// the records that waited for the changed assets' names. Lateness 30 days, retention 90.
func hooked(t *testing.T, db *storage.DB, c *clock) env {
	t.Helper()
	var use *usage.Service
	cat := mustCatalog(t, db, catalog.WithClock(c.Now),
		catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID, _ map[uuid.UUID]catalog.Summary) {
			use.NamesChanged(ctx, ids)
		}))
	use, err := usage.New(db, cat, usage.WithClock(c.Now), usage.WithLateness(30*24*time.Hour), usage.WithRetention(90*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return env{db: db, cat: cat, use: use, clock: c}
}

func read(ns, name string, at time.Time, q string) usage.Record {
	return usage.Record{Namespace: ns, Name: name, Kind: "read", Actor: "alice", At: at, QueryID: q, Source: "trino"}
}

func (e env) series(t *testing.T, id uuid.UUID, from time.Time) usage.Series {
	t.Helper()
	s, err := e.use.Series(context.Background(), id, from, e.clock.Now(), usage.Daily)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e env) waiting(t *testing.T) map[string]int64 {
	t.Helper()
	names, _, err := e.use.Unresolved(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, w := range names {
		out[w.Namespace+"."+w.Name] = w.Reads + w.Writes
	}
	return out
}

// TestBackfillBeforeFirstSeen: a team connects Tidemark and posts 60 days of its query log at
// once. Reads before the asset was first seen are its first holder's ("before first seen");
// those older than the lateness need the backfill (which reaches the retention), and the days'
// rollups count them.
func TestBackfillBeforeFirstSeen(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		now := t0.Add(100 * 24 * time.Hour)
		e := hooked(t, db, &clock{t: now})
		orders := e.create(t, "warehouse", "orders")
		var log []usage.Record
		for d := 1; d <= 60; d++ {
			log = append(log, read("warehouse", "orders", now.Add(-time.Duration(d)*24*time.Hour), fmt.Sprintf("q%d", d)))
		}
		res := e.record(t, log)
		for d, r := range res {
			old := d+1 > 30
			switch {
			case old && r.Status != usage.StatusRefused:
				t.Fatalf("day -%d without backfill: %+v, want refused (older than the lateness)", d+1, r)
			case !old && (r.Status != usage.StatusAccepted || r.AssetID != orders.ID || r.Resolution != usage.ResolvedBeforeFirstSeen):
				t.Fatalf("day -%d: %+v, want accepted for %s before first seen", d+1, r, orders.ID)
			}
		}
		res, err := e.use.Backfill(context.Background(), log)
		if err != nil {
			t.Fatal(err)
		}
		for d, r := range res {
			want := usage.StatusAccepted
			if d+1 <= 30 {
				want = usage.StatusDuplicate
			}
			if r.Status != want || r.AssetID != orders.ID {
				t.Fatalf("backfill day -%d: %+v, want %s", d+1, r, want)
			}
		}
		if s := e.series(t, orders.ID, now.Add(-61*24*time.Hour)); s.Reads != 60 || len(s.Points) != 60 {
			t.Fatalf("series after the backfill: %d reads on %d days, want 60 on 60", s.Reads, len(s.Points))
		}
		// Past the retention even a backfill is refused.
		res, _ = e.use.Backfill(context.Background(), []usage.Record{read("warehouse", "orders", now.Add(-91*24*time.Hour), "q-old")})
		if res[0].Status != usage.StatusRefused {
			t.Fatalf("a backfill past the retention: %+v", res[0])
		}
	})
}

// TestRenamedBetweenSyncs: an engine renames a table in its Iceberg catalog; reads under the new
// name arrive before the next sync and wait; the sync finds the rename (made after the last
// listing that showed the old name) and the reads land on the asset, under the new name.
func TestRenamedBetweenSyncs(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		c := &clock{t: time.Now().UTC().Add(-2 * time.Hour)}
		start := c.Now()
		e := hooked(t, db, c)
		lake := tablestest.NewLake(t)
		lake.Create("db.orders", nil)
		tbls, err := tables.New(db, e.cat, tables.WithClock(c.Now),
			tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, lake.Cat)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbls.Sync(ctx, nil); err != nil {
			t.Fatal(err)
		}
		ref, err := e.cat.ResolveIn(ctx, catalog.SpaceDataset, "iceberg://lake", "db.orders")
		if err != nil {
			t.Fatalf("db.orders not synced: %v", err)
		}
		orders := ref.Asset.ID

		// The engine renames at start+10m; reads under both names follow.
		if _, err := lake.Cat.RenameTable(ctx, table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		c.Set(start.Add(40 * time.Minute))
		res := e.record(t, []usage.Record{
			read("iceberg://lake", "db.sales_orders", start.Add(20*time.Minute), "new-1"),
			read("iceberg://lake", "db.sales_orders", start.Add(30*time.Minute), "new-2"),
			read("iceberg://lake", "db.orders", start.Add(5*time.Minute), "old-1"),
		})
		if res[0].Status != usage.StatusUnresolved || res[1].Status != usage.StatusUnresolved || res[2].AssetID != orders {
			t.Fatalf("before the sync: %+v", res)
		}
		if w := e.waiting(t); w["iceberg://lake.db.sales_orders"] != 2 {
			t.Fatalf("waiting = %v, want 2 under the new name", w)
		}

		c.Set(start.Add(time.Hour))
		if _, err := tbls.Sync(ctx, nil); err != nil {
			t.Fatal(err)
		}
		s := e.series(t, orders, start.Add(-24*time.Hour))
		if s.Reads != 3 || s.LateRecords != 2 {
			t.Fatalf("after the sync: %d reads, %d attributed late; want 3, 2", s.Reads, s.LateRecords)
		}
		var names []string
		for _, n := range s.NamesSeen {
			names = append(names, n.Name)
		}
		if !slices.Contains(names, "db.sales_orders") || !slices.Contains(names, "db.orders") {
			t.Fatalf("names seen = %v, want both", names)
		}
		if w := e.waiting(t); len(w) != 0 {
			t.Fatalf("still waiting: %v", w)
		}
		// A read under the new name from before the previous listing is not the rename's: the
		// table was listed as db.orders then.
		res = e.record(t, []usage.Record{read("iceberg://lake", "db.sales_orders", start.Add(-time.Minute), "before")})
		if res[0].Status != usage.StatusUnresolved {
			t.Fatalf("a read under the new name before the rename window: %+v", res[0])
		}
	})
}

// TestNamesLaterAndReused: a record for a name nobody holds waits and is attributed when the
// name is created; a name released by a deleted asset and taken by a new one resolves by time to
// whichever held it, and a record in the gap between them stays waiting, listed.
func TestNamesLaterAndReused(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond).Add(-10 * 24 * time.Hour)
		c := &clock{t: now}
		e := hooked(t, db, c)

		// Created later.
		res := e.record(t, []usage.Record{read("warehouse", "future", now.Add(-time.Hour), "f1")})
		if res[0].Status != usage.StatusUnresolved {
			t.Fatalf("read of a name nobody holds: %+v", res[0])
		}
		if w := e.waiting(t); w["warehouse.future"] != 1 {
			t.Fatalf("waiting = %v", w)
		}
		c.Set(now.Add(time.Hour))
		future := e.create(t, "warehouse", "future")
		if s := e.series(t, future.ID, now.Add(-24*time.Hour)); s.Reads != 1 || s.LateRecords != 1 {
			t.Fatalf("after the name was created: %d reads, %d late; want 1, 1", s.Reads, s.LateRecords)
		}

		// Deleted and re-created: A holds w.t on days 1-3, nobody on days 3-5, B from day 5.
		day := func(d float64) time.Time { return now.Add(time.Duration(d * 24 * float64(time.Hour))) }
		c.Set(day(1))
		a := e.create(t, "w", "t")
		c.Set(day(3))
		if _, err := e.cat.Delete(ctx, a.ID, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		c.Set(day(5))
		b := e.create(t, "w", "t")
		c.Set(day(6))
		res = e.record(t, []usage.Record{
			read("w", "t", day(0.5), "before-a"), // before anyone held it: its first holder
			read("w", "t", day(2), "a"),
			read("w", "t", day(4), "gap"),
			read("w", "t", day(5.5), "b"),
		})
		want := []struct {
			id  uuid.UUID
			how string
		}{{a.ID, usage.ResolvedBeforeFirstSeen}, {a.ID, usage.ResolvedExact}, {uuid.Nil, ""}, {b.ID, usage.ResolvedExact}}
		for i, w := range want {
			if res[i].AssetID != w.id || res[i].Resolution != w.how {
				t.Errorf("record %d: %+v, want asset %s resolved %q", i, res[i], w.id, w.how)
			}
		}
		if res[2].Status != usage.StatusUnresolved {
			t.Errorf("the gap's record: %+v, want unresolved", res[2])
		}
		if w := e.waiting(t); w["w.t"] != 1 {
			t.Fatalf("waiting = %v, want the gap's record under w.t", w)
		}
		// A sweep changes nothing for it: nobody held the name then.
		if n, err := e.use.ResolvePending(ctx, nil); err != nil || n != 0 {
			t.Fatalf("sweep attributed %d (%v), want 0", n, err)
		}
	})
}
