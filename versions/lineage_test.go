package versions_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/versions"
)

// nodeSet names a graph's nodes as namespace.name@version:depth, sorted.
func nodeSet(g versions.Graph) []string {
	var out []string
	for _, n := range g.Nodes {
		out = append(out, fmt.Sprintf("%s.%s@%s:%d", n.Name.Namespace, n.Name.Name, n.Version, n.Depth))
	}
	slices.Sort(out)
	return out
}

func TestLineageUpstreamReachesTheBadVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		g, err := f.svc.Lineage(f.ctx, c.revenue, rv1, versions.Upstream, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"mart.orders_daily@2002:1", "mart.revenue@rev-1:0", "raw.orders@1002:2"}
		if got := nodeSet(g); !slices.Equal(got, want) {
			t.Fatalf("upstream of revenue %s: %v, want %v", rv1, got, want)
		}
		if g.Truncated || g.MoreBeyondDepth || g.Unknown.Count != 0 {
			t.Errorf("a whole answer says truncated %v, more %v, unknown %d", g.Truncated, g.MoreBeyondDepth, g.Unknown.Count)
		}
		for _, n := range g.Nodes {
			// orders_daily's 2002 was committed before the rename at 3h: it was daily_orders then.
			if n.AssetID == c.daily && (n.NameThen == nil || n.NameThen.Name != "daily_orders") {
				t.Errorf("orders_daily@%s name then %+v, want mart.daily_orders", n.Version, n.NameThen)
			}
			if n.AssetID != c.daily && n.NameThen != nil {
				t.Errorf("%s@%s name then %+v: it was never renamed", n.Name.Name, n.Version, n.NameThen)
			}
		}
		edges := map[string]versions.Edge{}
		for _, e := range g.Edges {
			edges[e.From.Version+">"+e.To.Version] = e
		}
		if e, ok := edges[a2+">"+od2]; !ok || e.RunID != "r2" || e.Job.Name != "build_daily" || e.Input.Label != versions.Reported || e.Output.Label != versions.Inferred {
			t.Errorf("edge a2 > od2: %+v (found %v)", e, ok)
		}
		if e, ok := edges[od2+">"+rv1]; !ok || e.RunID != "r3" || e.Job.ID != c.buildReport || e.Input.Label != versions.Stated || e.Output.Label != versions.Stated {
			t.Errorf("edge od2 > rv1: %+v (found %v)", e, ok)
		}
		if len(g.Edges) != 2 {
			t.Errorf("%d edges, want 2: %+v", len(g.Edges), g.Edges)
		}
	})
}

func TestLineageDownstreamDepthAndCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		g, err := f.svc.Lineage(f.ctx, c.raw, a2, versions.Downstream, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		// Not od3: the rerun read a3.
		if got, want := nodeSet(g), []string{"mart.orders_daily@2002:1", "mart.revenue@rev-1:2", "raw.orders@1002:0"}; !slices.Equal(got, want) {
			t.Fatalf("downstream of a2: %v, want %v", got, want)
		}
		g, err = f.svc.Lineage(f.ctx, c.raw, a2, versions.Downstream, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := nodeSet(g); len(got) != 2 || !g.MoreBeyondDepth || g.Truncated {
			t.Errorf("depth 1: %v, more beyond %v, truncated %v; want 2 nodes and more beyond, not truncated", got, g.MoreBeyondDepth, g.Truncated)
		}
		g, err = f.svc.Lineage(f.ctx, c.revenue, rv1, versions.Downstream, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		if len(g.Nodes) != 1 || g.MoreBeyondDepth || g.Truncated || len(g.Edges) != 0 {
			t.Errorf("downstream of the last layer: %v", nodeSet(g))
		}
	})
}

func TestLineageTruncatesAtTheNodeBound(t *testing.T) {
	caseOn(t, "bound 3 holds the chain", func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		g, err := f.svc.Lineage(f.ctx, c.raw, a2, versions.Downstream, versions.DefaultDepth)
		if err != nil || g.Truncated {
			t.Fatalf("without a bound: %v, truncated %v", err, g.Truncated)
		}
		if len(g.Nodes) != 3 {
			t.Fatalf("want 3 nodes, got %v", nodeSet(g))
		}
	}, versions.WithMaxNodes(3))
	caseOn(t, "bound 2 cuts it", func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		g, err := f.svc.Lineage(f.ctx, c.raw, a2, versions.Downstream, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Truncated || len(g.Nodes) != 2 || !strings.Contains(g.Explanation, "stopped at 2 versions") || !strings.Contains(g.Explanation, "depth 2") {
			t.Errorf("bound 2: nodes %v, truncated %v, %q", nodeSet(g), g.Truncated, g.Explanation)
		}
		for _, e := range g.Edges {
			if e.To.Version == rv1 {
				t.Errorf("an edge to a node left out: %+v", e)
			}
		}
	}, versions.WithMaxNodes(2))
}

func TestLineageCountsEdgesItCannotFollow(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		adhoc := f.asset(catalog.KindJob, "adhoc", "notebook")
		scratch := f.asset(catalog.KindTable, "scratch", "orders_copy")
		audit := f.asset(catalog.KindTable, "mart", "audit")
		// A notebook read raw.orders while a2 was current, and nobody knows which version.
		f.run("r5", adhoc, at(2*h+30*time.Minute), at(2*h+40*time.Minute))
		f.edge("r5", c.raw, versions.Input, "", versions.Unknown, at(2*h+30*time.Minute))
		f.edge("r5", scratch, versions.Output, "s1", versions.Stated, at(2*h+40*time.Minute))
		// A notebook read long after: outside a2's time, not counted.
		f.run("r6", adhoc, at(8*h), at(8*h+time.Minute))
		f.edge("r6", c.raw, versions.Input, "", versions.Unknown, at(8*h))
		// build_report (r3) also wrote an audit table the resolver has not reached.
		f.io("r3", audit, versions.Output, at(3*h+20*time.Minute))
		// And a flagged stated output of a run that read od2.
		f.run("r7", c.buildReport, at(4*h), at(4*h+time.Minute))
		f.edge("r7", c.daily, versions.Input, od2, versions.Stated, at(4*h))
		f.edge("r7", c.revenue, versions.Output, "rev-typo", versions.Stated, at(4*h+time.Minute), flagged)

		g, err := f.svc.Lineage(f.ctx, c.raw, a2, versions.Downstream, versions.DefaultDepth)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]versions.UnknownEdge{}
		for _, u := range g.Unknown.Edges {
			got[u.RunID+"/"+u.Role] = u
		}
		if g.Unknown.Count != 2 || len(got) != 2 || g.Unknown.AtLeast {
			t.Fatalf("unknown edges %d %+v, want the notebook's read and the unresolved audit output", g.Unknown.Count, g.Unknown.Edges)
		}
		if u := got["r5/input"]; u.AssetID != c.raw || u.Job.Name != "notebook" {
			t.Errorf("r5's read: %+v", u)
		}
		if u := got["r3/output"]; u.AssetID != audit || !strings.Contains(u.Reason, "not resolved") {
			t.Errorf("r3's audit output: %+v", u)
		}
		var flaggedEdge *versions.Edge
		for i, e := range g.Edges {
			if e.To.Version == "rev-typo" {
				flaggedEdge = &g.Edges[i]
			}
		}
		if flaggedEdge == nil || !flaggedEdge.Flagged || !flaggedEdge.Output.Flagged || flaggedEdge.Input.Flagged {
			t.Errorf("the flagged output: %+v", flaggedEdge)
		}
	})
}

func TestLineageBadInput(t *testing.T) {
	eachBackend(t, func(t *testing.T, f *fixture) {
		c := f.chain(rerunKnown)
		for _, tc := range []struct {
			name    string
			asset   uuid.UUID
			version string
			dir     versions.Direction
			depth   int
			kind    error
			says    string
		}{
			{"depth 0", c.raw, a2, versions.Downstream, 0, catalog.ErrInvalid, "depth"},
			{"depth 21", c.raw, a2, versions.Downstream, 21, catalog.ErrInvalid, "depth"},
			{"sideways", c.raw, a2, "sideways", 1, catalog.ErrInvalid, "direction"},
			{"unknown version", c.raw, "404", versions.Upstream, 1, catalog.ErrNotFound, `has no version "404"`},
			{"unknown asset", uuid.New(), a2, versions.Upstream, 1, catalog.ErrNotFound, "does not exist"},
		} {
			_, err := f.svc.Lineage(f.ctx, tc.asset, tc.version, tc.dir, tc.depth)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.kind, tc.says)
			}
			_, err = f.svc.Impact(f.ctx, tc.asset, tc.version, tc.depth)
			if tc.name != "sideways" && (!errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says)) {
				t.Errorf("impact, %s: %v, want %v saying %q", tc.name, err, tc.kind, tc.says)
			}
		}
		if _, err := versions.ParseDirection("both"); !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("direction both: %v", err)
		}
		// A version only a run named (never recorded) is still a version.
		f.run("r9", c.buildDaily, at(9*h), at(9*h+time.Minute))
		f.edge("r9", c.daily, versions.Output, "only-stated", versions.Stated, at(9*h+time.Minute))
		if _, err := f.svc.Lineage(f.ctx, c.daily, "only-stated", versions.Upstream, 1); err != nil {
			t.Errorf("a version a run stated: %v", err)
		}
	})
}
