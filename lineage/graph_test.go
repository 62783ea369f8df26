package lineage

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

func ids(n int) []uuid.UUID {
	out := make([]uuid.UUID, n)
	for i := range out {
		out[i] = uuid.Must(uuid.NewV7())
	}
	return out
}

// chain: a -> b -> c -> d, and a second input x -> b.
func TestTraverse(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	n := ids(5)
	a, b, c, d, x := n[0], n[1], n[2], n[3], n[4]
	g.add([]edgeRef{{1, a, b}, {2, b, c}, {3, c, d}, {4, x, b}, {5, a, b}})
	if f := g.Freshness(); f.Edges != 4 || f.Nodes != 5 {
		t.Fatalf("freshness = %+v; want 4 edges (one repeated) and 5 nodes", f)
	}
	cases := []struct {
		name      string
		start     uuid.UUID
		dir       Direction
		depth     int
		limit     int
		nodes     int
		perDepth  []int
		truncated bool
		edges     int
	}{
		{"Downstream", a, Downstream, 10, 100, 4, []int{1, 1, 1, 1}, false, 3},
		{"DepthLimits", a, Downstream, 2, 100, 3, []int{1, 1, 1}, false, 2},
		{"Upstream", d, Upstream, 10, 100, 5, []int{1, 1, 1, 2}, false, 4},
		{"Both", b, Both, 1, 100, 4, []int{1, 3}, false, 3},
		{"LimitCutsWholeLevels", d, Upstream, 10, 4, 3, []int{1, 1, 1, 2}, true, 2},
		{"UnknownStart", uuid.Must(uuid.NewV7()), Both, 3, 10, 1, []int{1}, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := g.Traverse(tc.start, tc.dir, tc.depth, tc.limit)
			if len(tr.Nodes) != tc.nodes || !slices.Equal(tr.ReachedPerDepth, tc.perDepth) || tr.Truncated != tc.truncated {
				t.Fatalf("nodes %d perDepth %v truncated %v; want %d %v %v", len(tr.Nodes), tr.ReachedPerDepth, tr.Truncated, tc.nodes, tc.perDepth, tc.truncated)
			}
			if tr.Nodes[0].ID != tc.start || tr.Nodes[0].Depth != 0 {
				t.Fatalf("first node %+v is not the start", tr.Nodes[0])
			}
			for _, e := range tr.Edges {
				if int(e[0]) >= len(tr.Nodes) || int(e[1]) >= len(tr.Nodes) {
					t.Fatalf("edge %v joins a node not in the answer", e)
				}
				if from, to := tr.Nodes[e[0]].ID, tr.Nodes[e[1]].ID; !g.hasEdge(from, to) {
					t.Fatalf("edge %v (%s -> %s) is not in the graph", e, from, to)
				}
			}
			if len(tr.Edges) != tc.edges {
				t.Fatalf("%d edges; want %d", len(tr.Edges), tc.edges)
			}
		})
	}
}

// TestTailGaps: an ID seen out of order (a transaction that committed late) is read on the next
// pass; a gap older than the grace period is given up as a rollback.
func TestTailGaps(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newGraph(nil, nil, func() time.Time { return now }, slog.Default())
	n := ids(2)
	g.advance([]edgeRef{{1, n[0], n[1]}, {2, n[0], n[1]}, {5, n[0], n[1]}}, now)
	if g.low != 2 || len(g.gaps) != 2 {
		t.Fatalf("low %d gaps %v; want low 2 below the gap at 3,4", g.low, g.gaps)
	}
	g.advance([]edgeRef{{3, n[0], n[1]}, {5, n[0], n[1]}}, now.Add(time.Second))
	if g.low != 3 {
		t.Fatalf("low %d; want 3 (4 still missing)", g.low)
	}
	g.advance(nil, now.Add(2*gapGrace))
	if g.low != 5 || len(g.gaps) != 0 {
		t.Fatalf("low %d gaps %v; want the stale gap dropped", g.low, g.gaps)
	}
}

// TestBackPressure: with every ingest slot taken, the next ingest is refused as unavailable
// (HTTP 503, which OpenLineage clients retry) rather than queued without bound.
func TestBackPressure(t *testing.T) {
	s := New(nil, nil, WithConcurrency(1, 10*time.Millisecond))
	ctx := t.Context()
	if err := s.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	err := s.acquire(ctx)
	if !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("second acquire = %v, want ErrUnavailable", err)
	}
	<-s.slots
	if err := s.acquire(ctx); err != nil {
		t.Fatalf("after release: %v", err)
	}
}
