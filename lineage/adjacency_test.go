package lineage

import (
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
