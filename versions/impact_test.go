package versions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/versions"
)

func tableOf(t *testing.T, im versions.Impact, id uuid.UUID) versions.TableImpact {
	t.Helper()
	for _, x := range im.Tables {
		if x.AssetID == id {
			return x
		}
	}
	t.Fatalf("table %s is not in the impact: %+v", id, im.Tables)
	return versions.TableImpact{}
}

func TestImpactOfABadCommit(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		f.read(c.revenue, rv1, "dashboard", at(4*h))             // stated the affected version
		f.read(c.revenue, "", "analyst", at(4*h))                // no version: rv1 was current
		f.read(c.revenue, "", "analyst", at(6*h))                // still current
		f.read(c.daily, "", "bi", at(3*h+30*time.Minute))        // od2 was current
		f.read(c.daily, "", "bi", at(6*h))                       // od3 (rebuilt) was current: not counted
		f.read(c.daily, od3, "bi", at(6*h))                      // stated the rebuilt version: not counted
		f.read(c.raw, "", "loader-check", at(2*h+5*time.Minute)) // a2 itself was current
		f.read(c.raw, a2, "auditor", at(7*h))                    // the bad version, by time travel

		im, err := f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		if im.Truncated || im.MoreBeyondDepth || im.Unknown.Count != 0 {
			t.Errorf("a whole answer says truncated %v, more %v, unknown %d", im.Truncated, im.MoreBeyondDepth, im.Unknown.Count)
		}
		if len(im.Tables) != 2 || im.Tables[0].AssetID != c.daily || im.Tables[1].AssetID != c.revenue {
			t.Fatalf("tables %+v, want orders_daily then revenue", im.Tables)
		}
		daily := tableOf(t, im, c.daily)
		if daily.State != versions.Recovered || daily.Current == nil || daily.Current.Version != od3 || daily.Current.From != versions.CurrentIceberg ||
			daily.Current.Derived || daily.Depth != 1 {
			t.Errorf("orders_daily: %s (%s), current %+v, depth %d; want recovered at 2003 from the Iceberg table", daily.State, daily.Reason, daily.Current, daily.Depth)
		}
		if len(daily.Derived) != 1 || daily.Derived[0].Version != od2 {
			t.Errorf("orders_daily derived versions %+v, want [2002]", daily.Derived)
		}
		if len(daily.Producers) != 1 || daily.Producers[0].RunID != "r4" || daily.Producers[0].Label != versions.Reported ||
			len(daily.Producers[0].Inputs) != 1 || daily.Producers[0].Inputs[0].Version != a3 || daily.Producers[0].Inputs[0].Label != versions.Inferred {
			t.Errorf("orders_daily producers %+v, want r4 from a3 (inferred)", daily.Producers)
		}
		rev := tableOf(t, im, c.revenue)
		if rev.State != versions.Affected || rev.Current == nil || rev.Current.Version != rv1 || rev.Current.From != versions.CurrentCommitted ||
			!rev.Current.Derived || rev.Depth != 2 {
			t.Errorf("revenue: %s (%s), current %+v, depth %d; want affected at rev-1", rev.State, rev.Reason, rev.Current, rev.Depth)
		}
		if !slices.Equal(rev.Owners, []string{"bob", "carol"}) || !slices.Equal(daily.Owners, []string{"alice"}) {
			t.Errorf("owners: revenue %v, orders_daily %v", rev.Owners, daily.Owners)
		}
		if len(im.Repeat) != 1 || im.Repeat[0].RunID != "r3" || im.Repeat[0].Job.Name != "build_report" || im.Repeat[0].Job.ID != c.buildReport ||
			!slices.Equal(im.Repeat[0].Tables, []uuid.UUID{c.revenue}) {
			t.Errorf("runs to repeat %+v, want r3 of build_report only", im.Repeat)
		}
		var owners []string
		for _, o := range im.Owners {
			owners = append(owners, o.Principal)
		}
		if !slices.Equal(owners, []string{"bob", "carol"}) {
			t.Errorf("owners to tell %v, want bob and carol (orders_daily recovered: not alice)", owners)
		}

		reads := map[string]int64{}
		for _, r := range im.Readers {
			for _, x := range r.Readers {
				reads[fmt.Sprintf("%s@%s/%s/%s", r.Name.Name, r.Version, r.How, x.Actor)] += x.Reads
			}
		}
		want := map[string]int64{
			"revenue@rev-1/version/dashboard":        1,
			"revenue@rev-1/while-current/analyst":    2,
			"orders_daily@2002/while-current/bi":     1,
			"orders@1002/while-current/loader-check": 1,
			"orders@1002/version/auditor":            1,
		}
		if fmt.Sprint(reads) != fmt.Sprint(want) {
			t.Errorf("affected reads\n got %v\nwant %v", reads, want)
		}
	})
}

func TestImpactUnknownWhenTheRerunsInputIsUnknown(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunUnknown)
		im, err := f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		daily := tableOf(t, im, c.daily)
		if daily.State != versions.StateUnknown || !strings.Contains(daily.Reason, "without a known version") {
			t.Errorf("orders_daily: %s (%s), want unknown: the rerun's input is unknown", daily.State, daily.Reason)
		}
		if rev := tableOf(t, im, c.revenue); rev.State != versions.Affected {
			t.Errorf("revenue: %s (%s), want affected", rev.State, rev.Reason)
		}
		if len(im.Repeat) != 1 || im.Repeat[0].RunID != "r3" {
			t.Errorf("runs to repeat %+v", im.Repeat)
		}
	})
}

func TestImpactUnknownWhenAnInputMayDeriveThroughUnknownEdges(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		notebook := f.asset(catalog.KindJob, "adhoc", "notebook")
		scratch := f.asset(catalog.KindTable, "scratch", "orders_copy")
		// A notebook copied raw.orders while a2 was current, version unknown; the rerun of
		// build_daily read that copy too.
		f.run("r5", notebook, at(2*h+30*time.Minute), at(2*h+40*time.Minute))
		f.edge("r5", c.raw, versions.Input, "", versions.Unknown, at(2*h+30*time.Minute))
		f.edge("r5", scratch, versions.Output, "s1", versions.Stated, at(2*h+40*time.Minute))
		f.edge("r4", scratch, versions.Input, "s1", versions.Stated, at(5*h+10*time.Minute))

		im, err := f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		if im.Unknown.Count != 1 || im.Unknown.Edges[0].RunID != "r5" {
			t.Errorf("unknown edges %+v, want the notebook's read", im.Unknown)
		}
		daily := tableOf(t, im, c.daily)
		if daily.State != versions.StateUnknown || !strings.Contains(daily.Reason, "scratch.orders_copy") {
			t.Errorf("orders_daily: %s (%s), want unknown: its rebuild read a copy that may derive from a2", daily.State, daily.Reason)
		}
	})
}

func TestImpactBounds(t *testing.T) {
	caseOn(t, "depth 1", func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		im, err := f.svc.Impact(f.ctx, c.raw, a2, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Tables) != 1 || !im.MoreBeyondDepth || im.Truncated {
			t.Fatalf("depth 1: %d tables, more %v, truncated %v", len(im.Tables), im.MoreBeyondDepth, im.Truncated)
		}
		// What lies beyond the depth is below orders_daily, not below the rerun's input.
		if daily := tableOf(t, im, c.daily); daily.State != versions.Recovered {
			t.Errorf("orders_daily at depth 1: %s (%s)", daily.State, daily.Reason)
		}
	})
	caseOn(t, "node bound", func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		// The rerun also read revenue: past the bound, revenue's versions are not followed, so
		// nothing can say the rerun's input is clean.
		f.edge("r4", c.revenue, versions.Input, rv1, versions.Stated, at(5*h+10*time.Minute))
		im, err := f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		if !im.Truncated || !strings.Contains(im.Explanation, "stopped at 2 versions") || len(im.Tables) != 1 {
			t.Fatalf("bound 2: truncated %v (%q), tables %+v", im.Truncated, im.Explanation, im.Tables)
		}
		if daily := tableOf(t, im, c.daily); daily.State != versions.StateUnknown {
			t.Errorf("orders_daily past the bound: %s (%s), want unknown", daily.State, daily.Reason)
		}
	}, versions.WithMaxNodes(2))
	caseOn(t, "affected through an input past the depth", func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		// The rerun also read revenue's rev-1: at depth 2 the walk stops before the rerun's
		// output, yet its input shows orders_daily's current version derives from a2.
		f.edge("r4", c.revenue, versions.Input, rv1, versions.Stated, at(5*h+10*time.Minute))
		im, err := f.svc.Impact(f.ctx, c.raw, a2, 2)
		if err != nil {
			t.Fatal(err)
		}
		daily := tableOf(t, im, c.daily)
		if daily.State != versions.Affected || !strings.Contains(daily.Reason, "built by run r4") || daily.Current.Derived {
			t.Errorf("orders_daily: %s (%s), current %+v; want affected through the rerun's input", daily.State, daily.Reason, daily.Current)
		}
		var order []string
		for _, r := range im.Repeat {
			order = append(order, fmt.Sprintf("%s:%d", r.RunID, r.Depth))
		}
		if !slices.Equal(order, []string{"r3:2", "r4:3"}) {
			t.Errorf("runs to repeat %v, want build_report's r3 before the rerun r4 that read its output", order)
		}
	})
}

func TestImpactCurrentFromTheNewestRunOutput(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		// build_report also writes an export nothing dates: only its runs name its versions.
		export := f.asset(catalog.KindFileSet, "s3", "exports/revenue")
		f.edge("r3", export, versions.Output, "exp-1", versions.Stated, at(3*h+20*time.Minute))
		im, err := f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		x := tableOf(t, im, export)
		if x.State != versions.Affected || x.Current == nil || x.Current.Version != "exp-1" || x.Current.From != versions.CurrentRun {
			t.Errorf("export: %s (%s), current %+v; want affected at exp-1 from the run output", x.State, x.Reason, x.Current)
		}
		// A later run wrote it without a known version: what is current now is unknown.
		f.run("r8", c.buildReport, at(8*h), at(8*h+time.Minute))
		f.edge("r8", export, versions.Output, "", versions.Unknown, at(8*h+time.Minute))
		if im, err = f.svc.Impact(f.ctx, c.raw, a2, versions.DefaultDepth); err != nil {
			t.Fatal(err)
		}
		x = tableOf(t, im, export)
		if x.State != versions.StateUnknown || x.Current == nil || x.Current.Version != "" || !strings.Contains(x.Reason, "names no version") {
			t.Errorf("export after an unknown write: %s (%s), current %+v; want unknown", x.State, x.Reason, x.Current)
		}
		if len(im.Repeat) != 1 || !slices.Equal(im.Repeat[0].Tables, []uuid.UUID{c.revenue}) {
			t.Errorf("runs to repeat %+v: the export is no longer known to be affected", im.Repeat)
		}
	})
}
