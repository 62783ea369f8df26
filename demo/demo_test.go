package demo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/demo"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// TestVersionStory: the demo leaves a bad load of db.payments whose blast radius has
// payments_daily recovered and finance_report affected, build_finance_report to repeat, and
// edges labelled as its runs said (stated by facets, inferred where they said nothing); every
// demo table has its snapshots on its timeline.
func TestVersionStory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		if _, err := demo.Setup(ctx, db, t.TempDir(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
			t.Fatal(err)
		}
		// The findings are there when the demo is ready: the hand-deleted file is a dangling
		// reference already, not after the first scheduled check.
		if n, err := db.Client.Proposal.Query().Where(proposal.KindEQ(proposal.KindDanglingReference), proposal.StateEQ(proposal.StateOpen)).Count(ctx); err != nil || n != 1 {
			t.Fatalf("open dangling-reference findings after the demo: %d (%v), want 1", n, err)
		}
		cat, err := catalog.New(db)
		if err != nil {
			t.Fatal(err)
		}
		vers, err := versions.New(db, cat)
		if err != nil {
			t.Fatal(err)
		}
		id := func(name string) catalog.Ref {
			t.Helper()
			ref, ok, err := cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://lake", "db."+name)
			if err != nil || !ok {
				t.Fatalf("db.%s: %v %v", name, ok, err)
			}
			return ref
		}
		timeline := func(name string) []versions.Version {
			t.Helper()
			p, err := vers.Timeline(ctx, id(name).ID, versions.TimelineQuery{})
			if err != nil {
				t.Fatal(err)
			}
			return p.Versions
		}
		for _, name := range []string{"events_hourly", "sales_orders", "customers", "legacy_exports"} {
			if len(timeline(name)) == 0 {
				t.Errorf("db.%s has no versions", name)
			}
		}
		payments := timeline("payments") // newest first: the fix, the bad load, the first load
		if len(payments) != 3 {
			t.Fatalf("db.payments has %d versions, want 3", len(payments))
		}
		readBy := func(v versions.Version) string {
			if len(v.ReadBy.Runs) != 1 {
				return "?"
			}
			return v.ReadBy.Runs[0].Job.Name + " " + v.ReadBy.Runs[0].Label
		}
		for i, want := range []string{"build_payments_daily inferred", "build_payments_daily inferred", "build_payments_daily stated"} {
			if got := readBy(payments[i]); got != want {
				t.Errorf("payments %s is read by %s, want %s", payments[i].Version, got, want)
			}
		}
		daily := timeline("payments_daily")
		var labels []string
		for _, v := range daily {
			for _, r := range v.ProducedBy.Runs {
				labels = append(labels, r.Label)
			}
		}
		if len(daily) != 3 || len(labels) != 3 || labels[0] != versions.Stated || labels[1] != versions.Inferred || labels[2] != versions.Stated {
			t.Errorf("payments_daily: %d versions produced by edges %v, want stated, inferred, stated", len(daily), labels)
		}
		bad := payments[1]
		if len(bad.TimeTravel.Readers) != 1 || bad.TimeTravel.Readers[0].Actor != "auditor" {
			t.Errorf("the bad load's time-travel reads: %+v", bad.TimeTravel)
		}
		im, err := vers.Impact(ctx, id("payments").ID, bad.Version, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		states := map[string]string{}
		for _, x := range im.Tables {
			states[x.Name.Name] = x.State
		}
		if len(im.Tables) != 2 || states["db.payments_daily"] != versions.Recovered || states["db.finance_report"] != versions.Affected {
			t.Errorf("the bad load's tables: %v", states)
		}
		if len(im.Repeat) != 1 || im.Repeat[0].Job.Name != "build_finance_report" || len(im.Owners) != 1 || im.Owners[0].Principal != "team-finance" {
			t.Errorf("repeat %+v, tell %+v", im.Repeat, im.Owners)
		}
		if len(im.Readers) == 0 {
			t.Errorf("nobody read the affected data")
		}
	})
}
