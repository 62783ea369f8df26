package cleanup_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestCadenceFromCost: two tables, one whose orphans grow by 1 KiB a day and one by 40 MiB a day.
// Each scan report weighs the scan's request cost against the storage cost of the orphans newly
// confirmed since the scan before, and suggests the break-even cadence sqrt(2C/(p*g)); the
// fast-growing table gets a cadence of about a day, the slow one far beyond a month. With
// WithAutoCadence the scheduler follows each within the bounds.
func TestCadenceFromCost(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, cleanup.WithAutoCadence(6*time.Hour, 30*24*time.Hour))
		fastTbl := e.lake.Append(e.lake.Create("db.clicks", nil), tablestest.Rows(0, 3, time.Now()))
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 1 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		fast := uuid.Nil
		ts, _, err := e.tables.List(e.ctx, uuid.Nil, 10)
		must(t, err)
		for _, tb := range ts {
			if tb.AssetID != e.id {
				fast = tb.AssetID
			}
		}
		slow := e.id
		old := e.clock.Now().Add(-100 * time.Hour)
		scan := func(id uuid.UUID) cleanup.Report {
			t.Helper()
			r, err := e.svc.Scan(e.ctx, id, cleanup.ScanOptions{})
			must(t, err)
			return r
		}
		// Day 0: nothing to weigh yet. Then a day's orphans, seen on day 1, confirmed on day 2.
		for _, id := range []uuid.UUID{slow, fast} {
			if r := scan(id); r.Cadence != nil {
				t.Fatalf("a first scan gave cadence advice: %+v", r.Cadence)
			}
		}
		e.lake.WriteFile(e.tbl, "data/slow-orphan.parquet", 1<<10, old)
		for i := range 40 {
			e.lake.WriteFile(fastTbl, fmt.Sprintf("data/fast-orphan-%d.parquet", i), 1<<20, old)
		}
		var last map[uuid.UUID]cleanup.Report
		for range 2 {
			e.clock.Add(24 * time.Hour)
			last = map[uuid.UUID]cleanup.Report{slow: scan(slow), fast: scan(fast)}
		}
		perByteDay := cleanup.DefaultPrices.StorageGBMonth / 1e9 / 30
		for _, tc := range []struct {
			name   string
			id     uuid.UUID
			growth int64
		}{{"slow", slow, 1 << 10}, {"fast", fast, 40 << 20}} {
			r := last[tc.id]
			a := r.Cadence
			if a == nil || a.NewlyConfirmedBytes != tc.growth || math.Abs(a.DaysSincePrevious-1) > 0.01 || a.ScanCostUSD != r.Cost.Scan || a.ScanCostUSD <= 0 {
				t.Fatalf("%s table's cadence figures: %+v (scan cost %v)", tc.name, a, r.Cost.Scan)
			}
			want := math.Sqrt(2*a.ScanCostUSD/(perByteDay*a.GrowthBytesPerDay)) * 24 * float64(time.Hour)
			if got := float64(a.BreakEvenSeconds) * float64(time.Second); math.Abs(got-want) > float64(time.Minute) {
				t.Fatalf("%s table's break-even %s, want %s", tc.name, a.BreakEven, time.Duration(want))
			}
			t.Logf("%s table: scan cost $%.6f, %d bytes newly confirmed over %.1f days (%.0f B/day, $%.9f/month added a day): break-even cadence %s",
				tc.name, a.ScanCostUSD, a.NewlyConfirmedBytes, a.DaysSincePrevious, a.GrowthBytesPerDay, a.GrowthUSDPerMonth, a.BreakEven)
		}
		fastEvery := time.Duration(last[fast].Cadence.BreakEvenSeconds) * time.Second
		slowEvery := time.Duration(last[slow].Cadence.BreakEvenSeconds) * time.Second
		if fastEvery > 48*time.Hour || slowEvery < 60*24*time.Hour {
			t.Fatalf("break-even cadences: fast %s, slow %s", fastEvery, slowEvery)
		}

		// The scheduler follows them within [6h, 30 days]: the fast table is due after its
		// break-even cadence; the slow one (clamped to 30 days) is not.
		e.clock.Add(fastEvery + time.Minute)
		if n, err := e.svc.ScanDue(e.ctx, 24*time.Hour, cleanup.ScanOptions{}); err != nil || n != 1 {
			t.Fatalf("after the fast table's cadence: %d scans, %v", n, err)
		}
		if scans, _ := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: slow, Limit: 1}); scans[0].ScanID != last[slow].ScanID {
			t.Fatal("the slow table was scanned at the fast table's cadence")
		}
		e.clock.Add(31 * 24 * time.Hour)
		if n, err := e.svc.ScanDue(e.ctx, 24*time.Hour, cleanup.ScanOptions{}); err != nil || n != 2 {
			t.Fatalf("after the longest cadence: %d scans, %v", n, err)
		}
	})
}
