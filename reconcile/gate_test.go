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
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/usage"
)

// TestGateCountsOnlyWhatARunCompared: a weekend day, the busiest write day and a deploy count
// for the streak only once a clean run started after that day ended; the busiest day is of the
// last 28 days, so a peak before a streak break cannot lock the gate; a weak rule is refused
// without a reason, and a weak rule stored before the floor is held to the floor.
func TestGateCountsOnlyWhatARunCompared(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
		c := &clock{t: mon}
		cat := catalog.New(db.Client, catalog.WithClock(c.Now))
		use, err := usage.New(db, cat, usage.WithClock(c.Now))
		must(t, err)
		svc := reconcile.New(db.Client, cat, nil, use, reconcile.WithClock(c.Now))
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

		writes := func(n int) {
			t.Helper()
			recs := make([]usage.Record, n)
			for i := range recs {
				recs[i] = usage.Record{AssetID: nw.Asset.ID, Kind: "write", Actor: "orders-writer", At: c.Now(), IdempotencyKey: fmt.Sprintf("%s-%d", c.Now().Format(time.RFC3339), i)}
			}
			_, err := use.Record(ctx, recs)
			must(t, err)
		}
		run := func(dups int64) {
			t.Helper()
			_, err := svc.PostRun(ctx, m.ID, []reconcile.WindowFigures{{Start: mon,
				Old: reconcile.SideFigures{Rows: 10, Keys: 10, Checksum: "a"}, New: reconcile.SideFigures{Rows: 10 + dups, Keys: 10, DuplicateKeys: dups, Checksum: "a"}}})
			must(t, err)
		}
		status := func() reconcile.Status {
			t.Helper()
			st, err := svc.Status(ctx, m.ID)
			must(t, err)
			return st
		}
		has := func(st reconcile.Status, part string) bool {
			return slices.ContainsFunc(st.Missing, func(s string) bool { return strings.Contains(s, part) })
		}
		at := func(day, hour int) time.Time { return mon.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour) }

		// Tuesday is the busiest write day so far (100 writes); Wednesday's run breaks the streak.
		c.Set(at(1, 12))
		writes(100)
		c.Set(at(2, 12))
		run(2)
		// Then a clean run every day at noon from Thursday, 10 writes a day, 60 on the Thursday
		// after (day 10); a deploy on Monday the 9th (day 7) at 10:00.
		for d := 3; d <= 30; d++ {
			c.Set(at(d, 9))
			if d == 10 {
				writes(60)
			} else {
				writes(10)
			}
			c.Set(at(d, 12))
			if d == 7 {
				_, err := svc.RecordEvent(ctx, m.ID, reconcile.EventInput{Kind: reconcile.Deploy, At: at(7, 10), Note: "writer 2.0"})
				must(t, err)
			}
			run(0)
			st := status()
			switch d {
			case 5: // Saturday noon: Saturday has not ended, so no run compared all of it
				if st.Weekend || !has(st, "weekend") {
					t.Fatalf("Saturday noon: weekend %v, missing %v; want the weekend still missing", st.Weekend, st.Missing)
				}
			case 6: // Sunday noon: Saturday ended before this run started
				if !st.Weekend || st.WeekendDay == nil || !st.WeekendDay.Equal(at(5, 0)) || has(st, "weekend") {
					t.Fatalf("Sunday noon: weekend %v (%v), missing %v; want Saturday spanned", st.Weekend, st.WeekendDay, st.Missing)
				}
			case 7: // the deploy's day has not ended
				if st.Deploys != 1 || st.SpansDeploy || !has(st, "deploy") {
					t.Fatalf("deploy day: %d deploys, spans %v, missing %v", st.Deploys, st.SpansDeploy, st.Missing)
				}
			case 8:
				if !st.SpansDeploy || st.DeployAt == nil || !st.DeployAt.Equal(at(7, 10)) {
					t.Fatalf("the day after the deploy: spans %v at %v, missing %v", st.SpansDeploy, st.DeployAt, st.Missing)
				}
			case 12, 25: // the busiest day of the last 28 days is Tuesday, before the streak began
				if st.SpansBusiest || st.BusiestDay == nil || !st.BusiestDay.Equal(at(1, 0)) || st.Ready {
					t.Fatalf("day %d: busiest %v, spans %v, ready %v; want Tuesday's peak, not spanned", d, st.BusiestDay, st.SpansBusiest, st.Ready)
				}
			case 30: // Tuesday's peak is older than 28 days: the busiest is day 10, inside the streak
				if !st.SpansBusiest || st.BusiestDay == nil || !st.BusiestDay.Equal(at(10, 0)) || !st.Ready || st.Streak != 28 {
					t.Fatalf("day 30: busiest %v, spans %v, ready %v, missing %v, streak %d", st.BusiestDay, st.SpansBusiest, st.Ready, st.Missing, st.Streak)
				}
			}
		}
		// A new busiest day today is not compared until a run starts after it ends.
		c.Set(at(31, 9))
		writes(500)
		c.Set(at(31, 12))
		run(0)
		if st := status(); st.SpansBusiest || st.Ready || !st.BusiestDay.Equal(at(31, 0)) {
			t.Fatalf("a new peak today: busiest %v, spans %v, ready %v", st.BusiestDay, st.SpansBusiest, st.Ready)
		}
		c.Set(at(32, 12))
		run(0)
		if st := status(); !st.SpansBusiest || !st.Ready {
			t.Fatalf("the day after the new peak: spans %v, ready %v, missing %v", st.SpansBusiest, st.Ready, st.Missing)
		}

		// A migration stored before the floor, with "1 clean run" and no reason, is held to it.
		weak := spec
		weak.Cutover = reconcile.CutoverRule{MinCleanRuns: 1}
		body, err := json.Marshal(weak)
		must(t, err)
		row, err := db.Client.DatasetMigration.Create().SetOldAssetID(old.Asset.ID).SetNewAssetID(nw.Asset.ID).SetOwner("o").
			SetSpec(string(body)).SetCreatedAt(c.Now()).SetUpdatedAt(c.Now()).Save(ctx)
		must(t, err)
		_, err = svc.PostRun(ctx, row.ID, []reconcile.WindowFigures{{Start: mon, Old: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}, New: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}}})
		must(t, err)
		st, err := svc.Status(ctx, row.ID)
		must(t, err)
		if st.Ready || st.Rule.MinCleanRuns != reconcile.FloorCleanRuns || st.Rule.MinDays != reconcile.FloorDays || st.Streak != 1 {
			t.Fatalf("a stored weak rule: ready %v, rule %+v, streak %d; want held to the floor", st.Ready, st.Rule, st.Streak)
		}
	})
}
