package lineage

import (
	"fmt"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

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
	arena := &g.names.b[0]
	for round := 1; round <= 20; round++ {
		set(round)
	}
	if &g.names.b[0] == arena {
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
