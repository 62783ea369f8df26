package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/usage"
)

// TestGateCountsOnlyWhatARunCompared: a weekend day, the busiest write day and a deploy count
// for the streak only once a clean run started after that day ended; the busiest day is of the
// last 28 days, so a peak before a streak break cannot lock the gate; a weak rule is refused
// without a reason, and a weak rule stored before the floor is held to the floor.
func TestGateCountsOnlyWhatARunCompared(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		g := newGate(t, db)

		// Tuesday is the busiest write day so far (100 writes); Wednesday's run breaks the streak.
		g.c.Set(g.at(1, 12))
		g.writes(100)
		g.c.Set(g.at(2, 12))
		g.run(2)
		// Then a clean run every day at noon from Thursday, 10 writes a day, 60 on the Thursday
		// after (day 10); a deploy on Monday the 9th (day 7) at 10:00.
		for d := 3; d <= 30; d++ {
			g.c.Set(g.at(d, 9))
			if d == 10 {
				g.writes(60)
			} else {
				g.writes(10)
			}
			g.c.Set(g.at(d, 12))
			if d == 7 {
				_, err := g.svc.RecordEvent(g.ctx, g.m.ID, reconcile.EventInput{Kind: reconcile.Deploy, At: g.at(7, 10), Note: "writer 2.0"})
				must(t, err)
			}
			g.run(0)
			g.checkDay(d, g.status())
		}
		// A new busiest day today is not compared until a run starts after it ends.
		g.c.Set(g.at(31, 9))
		g.writes(500)
		g.c.Set(g.at(31, 12))
		g.run(0)
		if st := g.status(); st.SpansBusiest || st.Ready || !st.BusiestDay.Equal(g.at(31, 0)) {
			t.Fatalf("a new peak today: busiest %v, spans %v, ready %v", st.BusiestDay, st.SpansBusiest, st.Ready)
		}
		g.c.Set(g.at(32, 12))
		g.run(0)
		if st := g.status(); !st.SpansBusiest || !st.Ready {
			t.Fatalf("the day after the new peak: spans %v, ready %v, missing %v", st.SpansBusiest, st.Ready, st.Missing)
		}

		g.storedWeakRuleHeldToFloor()
	})
}

// gate is TestGateCountsOnlyWhatARunCompared's world: a migration between two external tables
// whose runs are posted, with a clock starting on a Monday.
type gate struct {
	t    *testing.T
	ctx  context.Context
	db   *storage.DB
	mon  time.Time
	c    *clock
	use  *usage.Service
	svc  *reconcile.Service
	old  catalog.CreateResult
	nw   catalog.CreateResult
	spec reconcile.Spec
	m    reconcile.Migration
}

// newGate sets up the services and the two tables, checks "reconcile once the night before
// cutover" is refused without a stated reason, and creates the migration with a rule of 3 clean
// runs over 7 days that asks for a weekend, the busiest day and a deploy.
func newGate(t *testing.T, db *storage.DB) *gate {
	t.Helper()
	ctx := context.Background()
	mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	c := &clock{t: mon}
	cat := mustCatalog(t, db, catalog.WithClock(c.Now))
	use, err := usage.New(db, cat, usage.WithClock(c.Now))
	must(t, err)
	svc := mustReconcile(t, db, cat, nil, use, reconcile.WithClock(c.Now))
	old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: "orders"})
	must(t, err)
	nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "lake", Name: "orders"})
	must(t, err)
	spec := reconcile.Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: mon,
		DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins,
		Cutover: reconcile.CutoverRule{MinCleanRuns: 1, MinDays: 0, IncludeWeekend: true, IncludeBusiestDay: true, IncludeDeploy: true},
		Old:     reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}
	// "Reconcile once the night before cutover" is refused without a stated reason.
	if _, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: spec}); !errors.Is(err, catalog.ErrInvalid) {
		t.Fatalf("1 clean run over 0 days: %v; want refused", err)
	}
	spec.Cutover.MinCleanRuns, spec.Cutover.MinDays = 3, 7
	m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: spec})
	must(t, err)
	return &gate{t: t, ctx: ctx, db: db, mon: mon, c: c, use: use, svc: svc, old: old, nw: nw, spec: spec, m: m}
}

// writes records n writes to the new table now.
func (g *gate) writes(n int) {
	g.t.Helper()
	recs := make([]usage.Record, n)
	for i := range recs {
		recs[i] = usage.Record{AssetID: g.nw.Asset.ID, Kind: "write", Actor: "orders-writer", At: g.c.Now(), IdempotencyKey: fmt.Sprintf("%s-%d", g.c.Now().Format(time.RFC3339), i)}
	}
	_, err := g.use.Record(g.ctx, recs)
	must(g.t, err)
}

// run posts a run of Monday's window with dups duplicate keys on the new side (0: clean).
func (g *gate) run(dups int64) {
	g.t.Helper()
	_, err := g.svc.PostRun(g.ctx, g.m.ID, []reconcile.WindowFigures{{Start: g.mon,
		Old: reconcile.SideFigures{Rows: 10, Keys: 10, Checksum: "a"}, New: reconcile.SideFigures{Rows: 10 + dups, Keys: 10, DuplicateKeys: dups, Checksum: "a"}}})
	must(g.t, err)
}

// status is the migration's status now.
func (g *gate) status() reconcile.Status {
	g.t.Helper()
	st, err := g.svc.Status(g.ctx, g.m.ID)
	must(g.t, err)
	return st
}

// at is hour:00 on the day that is day days after the first Monday.
func (g *gate) at(day, hour int) time.Time {
	return g.mon.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour)
}

// missingHas reports whether one of the things st says are missing mentions part.
func missingHas(st reconcile.Status, part string) bool {
	return slices.ContainsFunc(st.Missing, func(s string) bool { return strings.Contains(s, part) })
}

// checkDay checks the status after the clean run at noon of day d, on the days that show
// what a run has compared.
func (g *gate) checkDay(d int, st reconcile.Status) {
	g.t.Helper()
	switch d {
	case 5: // Saturday noon: Saturday has not ended, so no run compared all of it
		if st.Weekend || !missingHas(st, "weekend") {
			g.t.Fatalf("Saturday noon: weekend %v, missing %v; want the weekend still missing", st.Weekend, st.Missing)
		}
	case 6: // Sunday noon: Saturday ended before this run started
		if !st.Weekend || st.WeekendDay == nil || !st.WeekendDay.Equal(g.at(5, 0)) || missingHas(st, "weekend") {
			g.t.Fatalf("Sunday noon: weekend %v (%v), missing %v; want Saturday spanned", st.Weekend, st.WeekendDay, st.Missing)
		}
	case 7: // the deploy's day has not ended
		if st.Deploys != 1 || st.SpansDeploy || !missingHas(st, "deploy") {
			g.t.Fatalf("deploy day: %d deploys, spans %v, missing %v", st.Deploys, st.SpansDeploy, st.Missing)
		}
	case 8:
		if !st.SpansDeploy || st.DeployAt == nil || !st.DeployAt.Equal(g.at(7, 10)) {
			g.t.Fatalf("the day after the deploy: spans %v at %v, missing %v", st.SpansDeploy, st.DeployAt, st.Missing)
		}
	case 12, 25: // the busiest day of the last 28 days is Tuesday, before the streak began
		if st.SpansBusiest || st.BusiestDay == nil || !st.BusiestDay.Equal(g.at(1, 0)) || st.Ready {
			g.t.Fatalf("day %d: busiest %v, spans %v, ready %v; want Tuesday's peak, not spanned", d, st.BusiestDay, st.SpansBusiest, st.Ready)
		}
	case 30: // Tuesday's peak is older than 28 days: the busiest is day 10, inside the streak
		if !st.SpansBusiest || st.BusiestDay == nil || !st.BusiestDay.Equal(g.at(10, 0)) || !st.Ready || st.Streak != 28 {
			g.t.Fatalf("day 30: busiest %v, spans %v, ready %v, missing %v, streak %d", st.BusiestDay, st.SpansBusiest, st.Ready, st.Missing, st.Streak)
		}
	}
}

// storedWeakRuleHeldToFloor checks a migration stored before the floor, with "1 clean run" and
// no reason, is held to it.
func (g *gate) storedWeakRuleHeldToFloor() {
	g.t.Helper()
	weak := g.spec
	weak.Cutover = reconcile.CutoverRule{MinCleanRuns: 1}
	body, err := json.Marshal(weak)
	must(g.t, err)
	row, err := g.db.Client.DatasetMigration.Create().SetOldAssetID(g.old.Asset.ID).SetNewAssetID(g.nw.Asset.ID).SetOwner("o").
		SetSpec(string(body)).SetCreatedAt(g.c.Now()).SetUpdatedAt(g.c.Now()).Save(g.ctx)
	must(g.t, err)
	_, err = g.svc.PostRun(g.ctx, row.ID, []reconcile.WindowFigures{{Start: g.mon, Old: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}, New: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}}})
	must(g.t, err)
	st, err := g.svc.Status(g.ctx, row.ID)
	must(g.t, err)
	if st.Ready || st.Rule.MinCleanRuns != reconcile.FloorCleanRuns || st.Rule.MinDays != reconcile.FloorDays || st.Streak != 1 {
		g.t.Fatalf("a stored weak rule: ready %v, rule %+v, streak %d; want held to the floor", st.Ready, st.Rule, st.Streak)
	}
}
