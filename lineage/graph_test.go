package lineage

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

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

// TestTraverseFirstCutsTheLastLevel: where Traverse drops the level that passes the limit,
// TraverseFirst keeps as much of it as fits, with only the edges among the nodes kept; a star of
// 600 consumers gives the first 500 of them, not none.
func TestTraverseFirstCutsTheLastLevel(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	n := ids(5)
	a, b, c, d, x := n[0], n[1], n[2], n[3], n[4]
	g.add([]edgeRef{{1, a, b}, {2, b, c}, {3, c, d}, {4, x, b}})
	tr := g.TraverseFirst(d, Upstream, 10, 4)
	if len(tr.Nodes) != 4 || !tr.Truncated || len(tr.Edges) != 3 || tr.Nodes[3].Depth != 3 {
		t.Fatalf("nodes %d truncated %v edges %d; want 4 (one of a and x), truncated, 3 edges", len(tr.Nodes), tr.Truncated, len(tr.Edges))
	}
	for _, e := range tr.Edges {
		if int(e[0]) >= len(tr.Nodes) || int(e[1]) >= len(tr.Nodes) || !g.hasEdge(tr.Nodes[e[0]].ID, tr.Nodes[e[1]].ID) {
			t.Fatalf("edge %v is not an edge among the nodes returned", e)
		}
	}
	if whole := g.Traverse(d, Upstream, 10, 4); len(whole.Nodes) != 3 {
		t.Fatalf("Traverse returned %d nodes; want the 3 of the whole levels", len(whole.Nodes))
	}

	hub := ids(601)
	var star []edgeRef
	for i, consumer := range hub[1:] {
		star = append(star, edgeRef{int64(100 + i), hub[0], consumer})
	}
	g.add(star)
	tr = g.TraverseFirst(hub[0], Downstream, 3, 501)
	if len(tr.Nodes) != 501 || !tr.Truncated || len(tr.Edges) != 500 {
		t.Fatalf("star: nodes %d truncated %v edges %d; want 501 (the hub and 500 consumers), truncated, 500 edges", len(tr.Nodes), tr.Truncated, len(tr.Edges))
	}
	if len(g.Traverse(hub[0], Downstream, 3, 501).Nodes) != 1 {
		t.Fatal("Traverse kept part of a level")
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
	s := &Service{}
	WithConcurrency(1, 10*time.Millisecond)(s)
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

// TestAdjacencyKeepsLists: lists grow, move and are compacted in one pool; every list still
// holds what was added to it, in order.
func TestAdjacencyKeepsLists(t *testing.T) {
	var a adjacency
	want := make([][]int32, 5000)
	for range want {
		a.grow()
	}
	rng := rand.New(rand.NewSource(1))
	compactions := 0
	for i := range 400_000 {
		u, v := int32(rng.Intn(len(want))), int32(i)
		if rng.Intn(10) == 0 { // a few busy nodes with long lists
			u = int32(rng.Intn(5))
		}
		before := a.waste
		a.add(u, v)
		if a.waste < before {
			compactions++
		}
		want[u] = append(want[u], v)
	}
	if compactions == 0 {
		t.Fatal("the pool was never compacted; the test does not cover compaction")
	}
	for u := range want {
		if got := a.list(int32(u)); !slices.Equal(got, want[u]) {
			t.Fatalf("node %d: list of %d; want %d", u, len(got), len(want[u]))
		}
	}
	if len(a.pool) > 3*400_000+2*len(want) { // room of at most twice each list, a third wasted
		t.Fatalf("pool of %d slots for 400,000 entries: compaction does not bound the waste", len(a.pool))
	}
}

// TestNamesSurviveRenames: renaming nodes many times compacts the name arena; every node keeps
// its current name, and strings handed out before the compaction are unchanged.
func TestNamesSurviveRenames(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ids := make([]uuid.UUID, 2000)
	for i := range ids {
		ids[i] = uuid.New()
	}
	name := func(i, round int) string { return fmt.Sprintf("%s_%d_%d", strings.Repeat("n", 100), i, round) }
	set := func(round int) {
		sums := make([]catalog.Summary, len(ids))
		for i, id := range ids {
			sums[i] = catalog.Summary{ID: id, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "ns", Name: name(i, round)}
		}
		g.setInfo(sums)
	}
	set(0)
	first := g.Traverse(ids[7], Both, 1, 10).Nodes[0].Name
	compactions := 0
	for round := 1; round <= 20; round++ {
		before := g.names.waste
		set(round)
		if g.names.waste < before { // only a compaction forgets waste
			compactions++
		}
	}
	if compactions == 0 {
		t.Fatal("the name arena was never compacted; the test does not cover compaction")
	}
	if len(g.names.b) > 3*len(ids)*len(name(0, 20)) {
		t.Fatalf("arena of %d bytes for %d names: old names are not dropped", len(g.names.b), len(ids))
	}
	for i, id := range ids {
		if got := g.Traverse(id, Both, 1, 10).Nodes[0].Name; got != name(i, 20) {
			t.Fatalf("node %d is named %q; want %q", i, got, name(i, 20))
		}
	}
	if first != name(7, 0) {
		t.Fatalf("a name handed out before the renames changed to %q", first)
	}
}

// TestNamedFollowsRenames: the graph finds an asset by its current name only: not by a name it
// was renamed from, not once deleted, and again when restored; a job and a dataset may share
// a name.
func TestNamedFollowsRenames(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	g.ready.Store(true)
	a, job := uuid.New(), uuid.New()
	sum := func(id uuid.UUID, kind catalog.Kind, status catalog.Status, name string) catalog.Summary {
		return catalog.Summary{ID: id, Kind: kind, Status: status, Namespace: "pg://h:5432", Name: name}
	}
	find := func(space catalog.Space, name string) uuid.UUID {
		id, _ := g.Named(space, "pg://h:5432", name)
		return id
	}
	steps := []struct {
		name    string
		set     []catalog.Summary
		lookups map[string]uuid.UUID // dataset name -> want (uuid.Nil: not found)
	}{
		{"Created", []catalog.Summary{sum(a, catalog.KindTable, catalog.StatusActive, "orders")}, map[string]uuid.UUID{"orders": a, "sales": uuid.Nil}},
		{"Renamed", []catalog.Summary{sum(a, catalog.KindTable, catalog.StatusActive, "sales")}, map[string]uuid.UUID{"orders": uuid.Nil, "sales": a}},
		{"Deleted", []catalog.Summary{sum(a, catalog.KindTable, catalog.StatusDeleted, "sales")}, map[string]uuid.UUID{"sales": uuid.Nil}},
		{"Restored", []catalog.Summary{sum(a, catalog.KindTable, catalog.StatusActive, "sales")}, map[string]uuid.UUID{"sales": a}},
		{"JobOfTheSameName", []catalog.Summary{sum(job, catalog.KindJob, catalog.StatusActive, "sales")}, map[string]uuid.UUID{"sales": a}},
	}
	for _, st := range steps {
		g.setInfo(st.set)
		for name, want := range st.lookups {
			if got := find(catalog.SpaceDataset, name); got != want {
				t.Fatalf("%s: dataset %q is %s; want %s", st.name, name, got, want)
			}
		}
	}
	if got := find(catalog.SpaceJob, "sales"); got != job {
		t.Fatalf("job sales is %s; want %s", got, job)
	}
	g.ready.Store(false)
	if _, ok := g.Named(catalog.SpaceDataset, "pg://h:5432", "sales"); ok {
		t.Fatal("a graph still loading answered a name")
	}
}

func TestNodeRecordIsOneCacheLine(t *testing.T) {
	if size := unsafe.Sizeof(node{}); size != 64 {
		t.Fatalf("a node record is %d bytes; keep it at 64 (one cache line)", size)
	}
}

// viewNodes is a View's nodes as Nodes (without times), to compare with a Traversal's.
func viewNodes(v *View) []Node {
	out := make([]Node, v.Len())
	for i := range out {
		n := v.Node(i)
		out[i] = Node{Summary: catalog.Summary{ID: n.ID, Kind: n.Kind, Status: n.Status, Namespace: n.Namespace, Name: n.Name}, Depth: n.Depth}
	}
	return out
}

// withoutTimes drops what a View leaves out (times, Documented) from Traversal nodes.
func withoutTimes(ns []Node) []Node {
	out := make([]Node, len(ns))
	for i, n := range ns {
		out[i] = Node{Summary: catalog.Summary{ID: n.ID, Kind: n.Kind, Status: n.Status, Namespace: n.Namespace, Name: n.Name}, Depth: n.Depth}
	}
	return out
}

// TestViewIsTraverse: over the wide benchmark graph, a View holds exactly what Traverse
// returns (nodes in the same order with the same values, edges, reached per depth, truncated),
// in every direction, with and without a limit that cuts a level; and a name handed out by a
// View stays right after the arena is compacted under it.
func TestViewIsTraverse(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ds, sums, edges := wideGraph(300, 8)
	g.add(edges)
	// Some nodes without a summary yet (written by another replica since the last Sync), and
	// odd names.
	for i := range sums {
		if i%5 == 0 {
			sums[i].Name = fmt.Sprintf(`od"d\%d`, i) + "\t\u2028"
		}
	}
	g.setInfo(sums[:len(sums)-40])
	for _, dir := range []Direction{Downstream, Upstream, Both} {
		for _, limit := range []int{1, 7, 500, 1_000_000} {
			for _, start := range []uuid.UUID{ds[0][3], ds[4][9], ds[7][1], sums[len(sums)-1].ID, uuid.New()} {
				t.Run(fmt.Sprintf("%s/%d/%s", dir, limit, start.String()[:8]), func(t *testing.T) {
					want := g.Traverse(start, dir, 12, limit)
					v := g.View(start, dir, 12, limit)
					defer v.Release()
					if got := viewNodes(&v); !slices.Equal(got, withoutTimes(want.Nodes)) {
						t.Fatalf("view nodes differ from Traverse's:\n%v\n%v", got, withoutTimes(want.Nodes))
					}
					if !slices.Equal(v.Edges, want.Edges) || !slices.Equal(v.ReachedPerDepth, want.ReachedPerDepth) || v.Truncated != want.Truncated {
						t.Fatalf("view edges %d reached %v truncated %v; Traverse %d %v %v", len(v.Edges), v.ReachedPerDepth, v.Truncated,
							len(want.Edges), want.ReachedPerDepth, want.Truncated)
					}
				})
			}
		}
	}
	v := g.View(ds[0][3], Downstream, 4, 1_000_000)
	before := viewNodes(&v)
	for round := range 30 { // renames of every node until the arena is compacted at least once
		for i := range sums {
			sums[i].Name = fmt.Sprintf("%s_%d_%d", strings.Repeat("r", 200), i, round)
		}
		g.setInfo(sums)
	}
	if got := viewNodes(&v); !slices.Equal(got, before) {
		t.Fatal("a View's names changed after renames compacted the arena")
	}
	v.Release()
}

// TestViewDropsWhatResultDrops: nodes whose asset does not exist are left out of a View with
// their edges, as result leaves them out of a LineageResult.
func TestViewDropsWhatResultDrops(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ds, sums, edges := wideGraph(50, 5)
	g.add(edges)
	var known []catalog.Summary
	for i, s := range sums {
		if i%3 != 1 {
			known = append(known, s)
		}
	}
	g.setInfo(known)
	for _, dir := range []Direction{Downstream, Upstream, Both} {
		start := ds[2][0]
		if g.nodes[g.index[start]].kind == 0 {
			start = ds[2][2]
		}
		want := result(start, g.Traverse(start, dir, 8, 10_000), Freshness{})
		v := g.View(start, dir, 8, 10_000)
		v.dropUnknown()
		if got := viewNodes(&v); !slices.Equal(got, withoutTimes(want.Nodes)) || !slices.Equal(v.Edges, want.Edges) {
			t.Fatalf("%s: view %d nodes %d edges; result %d nodes %d edges", dir, v.Len(), len(v.Edges), len(want.Nodes), len(want.Edges))
		}
		if len(want.Nodes) == 1 {
			t.Fatalf("%s: the walk reached nothing; the test proves nothing", dir)
		}
	}
}

// TestWalkIsReference: the walk answers exactly what the first, simpler walk answered (nodes,
// depths, edges in order, depths reached, truncation) over the wide graph, in every
// direction, whole, truncated, and truncated with the last level cut.
func TestWalkIsReference(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ds, _, edges := wideGraph(200, 8)
	g.add(edges)
	// One set of buffers for every walk, as kept buffers are reused: what a walk left in them
	// must not show in the next.
	b := &walkBufs{}
	for _, dir := range []Direction{Downstream, Upstream, Both} {
		for _, limit := range []int{1, 2, 9, 300, 1_000_000} {
			for _, partial := range []bool{false, true} {
				for _, start := range []uuid.UUID{ds[0][1], ds[3][5], ds[7][0]} {
					for _, depth := range []int{1, 3, 14} {
						s := g.index[start]
						got, want := g.walk(s, dir, depth, limit, partial, b), refWalk(g, s, dir, depth, limit, partial)
						if !slices.Equal(got.order, want.order) || !slices.Equal(got.depths, want.depths) || !slices.Equal(got.edges, want.edges) ||
							!slices.Equal(got.reached, want.reached) || got.truncated != want.truncated {
							t.Fatalf("%s limit %d partial %v depth %d: walk %d nodes %d edges %v %v; reference %d %d %v %v", dir, limit, partial, depth,
								len(got.order), len(got.edges), got.reached, got.truncated, len(want.order), len(want.edges), want.reached, want.truncated)
						}
					}
				}
			}
		}
	}
}

// refWalk is walk as it was first written (edges kept as graph indexes and numbered at the
// end): the reference the faster walk is held to.
func refWalk(g *Graph, s int32, dir Direction, depth, limit int, partial bool) walked {
	res := walked{reached: []int{1}}
	// m numbers the nodes met in the order they are returned; a node met on a level that is
	// then dropped (the limit) gets a number past the end and its edges are left out.
	m := g.marks()
	defer g.putMarks(m)
	m.set(s, 0)
	order := []int32{s}
	depths := []int32{0}
	type walk struct {
		adj      *adjacency
		frontier []int32
		down     bool
	}
	var walks []*walk
	if dir == Downstream || dir == Both {
		walks = append(walks, &walk{adj: &g.out, frontier: []int32{s}, down: true})
	}
	if dir == Upstream || dir == Both {
		walks = append(walks, &walk{adj: &g.in, frontier: []int32{s}})
	}
	var edges [][2]int32 // graph node indexes
	for d := 1; d <= depth; d++ {
		var level []int32
		var levelEdges [][2]int32
		for _, w := range walks {
			var next []int32
			for _, u := range w.frontier {
				for _, v := range w.adj.list(u) {
					e := [2]int32{v, u}
					if w.down {
						e = [2]int32{u, v}
					}
					// Every node met so far is at this depth or shallower, so the edge joins two
					// returned nodes if this level is kept.
					levelEdges = append(levelEdges, e)
					if m.seen(v) {
						continue
					}
					m.set(v, int32(len(order)+len(level)))
					next = append(next, v)
					level = append(level, v)
				}
			}
			w.frontier = next
		}
		if len(level) == 0 {
			edges = append(edges, levelEdges...)
			break
		}
		res.reached = append(res.reached, len(level))
		if len(order)+len(level) > limit {
			res.truncated = true
			if keep := limit - len(order); partial && keep > 0 {
				// The nodes kept are numbered len(order)...; an edge to a node past them is left out.
				end := int32(len(order) + keep)
				order = append(order, level[:keep]...)
				for range keep {
					depths = append(depths, int32(d))
				}
				for _, e := range levelEdges {
					if m.at[e[0]].pos < end && m.at[e[1]].pos < end {
						edges = append(edges, e)
					}
				}
			}
			break
		}
		order = append(order, level...)
		for range level {
			depths = append(depths, int32(d))
		}
		edges = append(edges, levelEdges...)
	}
	res.order, res.depths = order, depths
	res.edges = make([][2]int32, 0, len(edges))
	var dedupe map[[2]int32]struct{}
	if len(walks) > 1 {
		dedupe = make(map[[2]int32]struct{}, len(edges)) // an edge may be met from both ends
	}
	for _, e := range edges {
		if dedupe != nil {
			if _, dup := dedupe[e]; dup {
				continue
			}
			dedupe[e] = struct{}{}
		}
		res.edges = append(res.edges, [2]int32{m.at[e[0]].pos, m.at[e[1]].pos})
	}
	return res
}

// TestViewWhileRenamed: a View is read without the graph's lock while renames append to the name
// arena and compact it: every name read is one the node held (run with -race, a read of a byte
// being written is reported).
func TestViewWhileRenamed(t *testing.T) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ds, sums, edges := wideGraph(100, 4)
	g.add(edges)
	g.setInfo(sums)
	byID := map[uuid.UUID]int{}
	for i, s := range sums {
		byID[s.ID] = i
	}
	name := func(i, round int) string { return fmt.Sprintf("%s_%d_%d", strings.Repeat("n", 300), i, round) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		for round := range 40 {
			renamed := slices.Clone(sums)
			for i := range renamed {
				renamed[i].Name = name(i, round)
			}
			g.setInfo(renamed)
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no View was read while the renames ran")
			}
			return
		default:
		}
		v := g.View(ds[0][0], Downstream, 6, 1_000_000)
		for i := range v.Len() {
			n := v.Node(i)
			var at, round int
			if k := byID[n.ID]; n.Name != sums[k].Name && (!strings.HasPrefix(n.Name, strings.Repeat("n", 300)) ||
				func() bool { _, err := fmt.Sscanf(n.Name[300:], "_%d_%d", &at, &round); return err != nil || at != k }()) {
				t.Fatalf("node %d read as %q", k, n.Name)
			}
		}
		v.Release()
	}
}
