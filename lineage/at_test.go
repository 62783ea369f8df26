package lineage_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// atStory is the history TestLineageAt asks about, hours after t0: job1 reads n.a and writes
// n.b (START at 1, COMPLETE at 2); n.b is renamed n.b2 at 3 and a new asset takes the name n.b
// at 3.5; job2 reads n.b2 and writes n.c (START at 5, COMPLETE at 6); n.c and n.a are deleted at
// 8; the clock says 9.
type atStory struct {
	t0             time.Time
	lin            *lineage.Service
	clock          *testClock
	a, b, c, newB  uuid.UUID
	job1, job2     uuid.UUID
	h              func(hours float64) time.Time
	cat            *catalog.Catalog
	deletedAt      time.Time
	renamedAt      time.Time
	job2FirstEvent time.Time
}

func newAtStory(t *testing.T, db *storage.DB) *atStory {
	t.Helper()
	ctx := context.Background()
	st := &atStory{t0: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), clock: &testClock{}}
	st.h = func(hours float64) time.Time { return st.t0.Add(time.Duration(hours * float64(time.Hour))) }
	st.cat = mustCatalog(t, db, catalog.WithClock(st.clock.now))
	st.lin = mustLineage(t, db, st.cat, lineage.WithClock(st.clock.now))
	st.clock.set(st.h(2)) // the events arrive when job1 completes: the assets are younger than the START
	if err := st.lin.Open(ctx); err != nil {
		t.Fatal(err)
	}
	post := func(run, typ string, at time.Time, job, in, out string) {
		t.Helper()
		ev := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"producer":"p","run":{"runId":%q},"job":{"namespace":"n","name":%q},
			"inputs":[{"namespace":"n","name":%q}],"outputs":[{"namespace":"n","name":%q}]}`, typ, at.Format(time.RFC3339Nano), run, job, in, out)
		if _, err := st.lin.Ingest(ctx, []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	post("r1", "START", st.h(1), "job1", "a", "b")
	post("r1", "COMPLETE", st.h(2), "job1", "a", "b")
	id := func(space catalog.Space, name string) uuid.UUID {
		t.Helper()
		ref, ok, err := st.cat.Lookup(ctx, space, "n", name)
		if err != nil || !ok {
			t.Fatalf("%s n.%s: %v %v", space, name, ok, err)
		}
		return ref.ID
	}
	st.a, st.b, st.job1 = id(catalog.SpaceDataset, "a"), id(catalog.SpaceDataset, "b"), id(catalog.SpaceJob, "job1")
	st.renamedAt = st.h(3)
	st.clock.set(st.renamedAt)
	if _, err := st.cat.Rename(ctx, st.b, catalog.AnyVersion, "n", "b2"); err != nil {
		t.Fatal(err)
	}
	st.clock.set(st.h(3.5))
	res, err := st.cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "n", Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	st.newB = res.Asset.ID
	st.clock.set(st.h(6))
	st.job2FirstEvent = st.h(5)
	post("r2", "START", st.job2FirstEvent, "job2", "b2", "c")
	post("r2", "COMPLETE", st.h(6), "job2", "b2", "c")
	st.c, st.job2 = id(catalog.SpaceDataset, "c"), id(catalog.SpaceJob, "job2")
	st.deletedAt = st.h(8)
	st.clock.set(st.deletedAt)
	for _, del := range []uuid.UUID{st.c, st.a} {
		if _, err := st.cat.Delete(ctx, del, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	st.clock.set(st.h(9))
	return st
}

// named returns the answer's nodes as "name" (with "~" for a former name and "+" for an asset
// deleted since), by ID, and its edges as "from>to" names.
func named(res lineage.LineageResult) (map[uuid.UUID]string, []string) {
	nodes := map[uuid.UUID]string{}
	for _, n := range res.Nodes {
		s := n.Name
		if n.FormerName {
			s += "~"
		}
		if n.DeletedSince != nil {
			s += "+"
		}
		nodes[n.ID] = s
	}
	var edges []string
	for _, e := range res.Edges {
		edges = append(edges, res.Nodes[e[0]].Name+">"+res.Nodes[e[1]].Name)
	}
	slices.Sort(edges)
	return nodes, edges
}

// TestLineageAt: lineage at a time is the graph as it stood then, with the names of then.
func TestLineageAt(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st := newAtStory(t, db)
		for _, tc := range []struct {
			name  string
			start uuid.UUID
			dir   lineage.Direction
			at    time.Time
			nodes map[uuid.UUID]string
			edges []string
		}{
			{"before any event: the asset alone", st.a, lineage.Downstream, st.h(0.5),
				map[uuid.UUID]string{st.a: "a~+"}, nil},
			{"after job1's START, before its assets had names: their first names", st.a, lineage.Downstream, st.h(1.5),
				map[uuid.UUID]string{st.a: "a~+", st.job1: "job1", st.b: "b~"}, []string{"a>job1", "job1>b"}},
			{"before the rename: b's former name, no edge to c", st.a, lineage.Downstream, st.h(2.5),
				map[uuid.UUID]string{st.a: "a~+", st.job1: "job1", st.b: "b~"}, []string{"a>job1", "job1>b"}},
			{"after the rename, before job2's first event: no edge to c", st.a, lineage.Downstream, st.h(4),
				map[uuid.UUID]string{st.a: "a~+", st.job1: "job1", st.b: "b2"}, []string{"a>job1", "job1>b2"}},
			{"at job2's first event: its edges are there", st.b, lineage.Downstream, st.job2FirstEvent,
				map[uuid.UUID]string{st.b: "b2", st.job2: "job2", st.c: "c~+"}, []string{"b2>job2", "job2>c"}},
			{"c deleted after at is there, marked", st.c, lineage.Upstream, st.h(7),
				map[uuid.UUID]string{st.c: "c~+", st.job2: "job2", st.b: "b2", st.job1: "job1", st.a: "a~+"},
				[]string{"a>job1", "b2>job2", "job1>b2", "job2>c"}},
			{"both ways from b before the rename", st.b, lineage.Both, st.h(2.5),
				map[uuid.UUID]string{st.a: "a~+", st.job1: "job1", st.b: "b~"}, []string{"a>job1", "job1>b"}},
			{"the asset that took the name b later has no lineage then", st.newB, lineage.Both, st.h(4),
				map[uuid.UUID]string{st.newB: "b"}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				res, err := st.lin.LineageAt(ctx, tc.start, tc.dir, 10, 100, tc.at)
				if err != nil {
					t.Fatal(err)
				}
				nodes, edges := named(res)
				if fmt.Sprint(nodes) != fmt.Sprint(tc.nodes) || !slices.Equal(edges, tc.edges) {
					t.Fatalf("at %s: nodes %v edges %v;\nwant nodes %v edges %v", tc.at.Format(time.RFC3339), nodes, edges, tc.nodes, tc.edges)
				}
				if res.Root != tc.start || res.Nodes[0].ID != tc.start || res.At == nil || !res.At.Equal(tc.at) || res.Truncated {
					t.Fatalf("root %s first %s at %v truncated %v", res.Root, res.Nodes[0].ID, res.At, res.Truncated)
				}
			})
		}
		// What a deleted asset carries: when it was deleted, and its status now.
		res, err := st.lin.LineageAt(ctx, st.c, lineage.Upstream, 1, 100, st.h(7))
		if err != nil {
			t.Fatal(err)
		}
		if n := res.Nodes[0]; n.DeletedSince == nil || !n.DeletedSince.Equal(st.deletedAt) || n.Status != catalog.StatusDeleted || n.Namespace != "n" {
			t.Fatalf("c at 7h = %+v; want deleted since %s", n, st.deletedAt)
		}
		// Asked after the deletion, the deletion is no news: no DeletedSince.
		if res, err = st.lin.LineageAt(ctx, st.c, lineage.Upstream, 1, 100, st.h(8.5)); err != nil || res.Nodes[0].DeletedSince != nil {
			t.Fatalf("c at 8.5h = %+v, %v; want no DeletedSince", res.Nodes, err)
		}
	})
}

// TestLineageAtLimits: a walk at a time keeps the depth and node limits, whole levels and
// truncated, and refuses times it cannot answer for.
func TestLineageAtLimits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st := newAtStory(t, db)
		res, err := st.lin.LineageAt(ctx, st.a, lineage.Downstream, 10, 2, st.h(7))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Truncated || len(res.Nodes) != 2 || !slices.Equal(res.ReachedPerDepth, []int{1, 1, 1}) || len(res.Edges) != 1 {
			t.Fatalf("limit 2 = %d nodes, reached %v, truncated %v; want a and job1, truncated", len(res.Nodes), res.ReachedPerDepth, res.Truncated)
		}
		if res, err = st.lin.LineageAt(ctx, st.a, lineage.Downstream, 2, 100, st.h(7)); err != nil || len(res.Nodes) != 3 || res.Truncated {
			t.Fatalf("depth 2 = %+v, %v; want a, job1, b", res.Nodes, err)
		}
		for _, tc := range []struct {
			at    time.Time
			depth int
			want  string
		}{
			{st.h(9).Add(time.Second), 3, "in the future"},
			{time.Date(1899, 12, 31, 23, 59, 59, 0, time.UTC), 3, "before 1900"},
			{time.Time{}, 3, "before 1900"},
			{st.h(7), 0, "depth"},
			{st.h(7), lineage.MaxDepth + 1, "depth"},
		} {
			_, err := st.lin.LineageAt(ctx, st.a, lineage.Downstream, tc.depth, 100, tc.at)
			var ce *catalog.Error
			if !errors.As(err, &ce) || ce.Kind != catalog.ErrInvalid || !strings.Contains(ce.Error(), tc.want) {
				t.Errorf("at %s depth %d: %v; want invalid, saying %q", tc.at, tc.depth, err, tc.want)
			}
			if tc.depth == 3 && (ce == nil || ce.Field != "at") {
				t.Errorf("at %s: field %v; want at", tc.at, ce)
			}
			_, _, err = st.lin.MarquezGraphAt(ctx, "dataset:n:a", tc.depth, 100, tc.at)
			if !errors.As(err, &ce) || ce.Kind != catalog.ErrInvalid {
				t.Errorf("Marquez at %s depth %d: %v; want invalid", tc.at, tc.depth, err)
			}
		}
		// The present is a time like any other: at now works.
		if _, err := st.lin.LineageAt(ctx, st.a, lineage.Downstream, 3, 100, st.h(9)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.lin.LineageAt(ctx, uuid.New(), lineage.Downstream, 3, 100, st.h(7)); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown asset: %v; want not found", err)
		}
	})
}

// TestMarquezGraphAt: the Marquez-shaped graph at a time keeps its shape, with node IDs built
// from the names of then; a node ID names the asset that held the name then, even when another
// asset holds it now.
func TestMarquezGraphAt(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		st := newAtStory(t, db)
		ids := func(nodes []lineage.GraphNode) []string {
			var out []string
			for _, n := range nodes {
				out = append(out, n.NodeID+" in:"+strings.Join(n.InEdges, ",")+" out:"+strings.Join(n.OutEdges, ","))
			}
			slices.Sort(out)
			return out
		}
		before := []string{"dataset:n:a in: out:job:n:job1", "dataset:n:b in:job:n:job1 out:", "job:n:job1 in:dataset:n:a out:dataset:n:b"}
		for _, nodeID := range []string{"dataset:n:b", "dataset:n:b2"} { // the name of then; the name now
			nodes, res, err := st.lin.MarquezGraphAt(ctx, nodeID, 20, 100, st.h(2.5))
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(nodes); !slices.Equal(got, before) || res.Root != st.b {
				t.Fatalf("%s at 2.5h: root %s, %v;\nwant %s, %v", nodeID, res.Root, got, st.b, before)
			}
		}
		// At 7h n.b is the newer asset's name (taken at 3.5h): it has no lineage.
		nodes, res, err := st.lin.MarquezGraphAt(ctx, "dataset:n:b", 20, 100, st.h(7))
		if err != nil {
			t.Fatal(err)
		}
		if res.Root != st.newB || len(nodes) != 1 {
			t.Fatalf("dataset:n:b at 7h: root %s (want the new b %s), %v", res.Root, st.newB, ids(nodes))
		}
		nodes, _, err = st.lin.MarquezGraphAt(ctx, "dataset:n:c", 20, 100, st.h(7))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"dataset:n:a in: out:job:n:job1", "dataset:n:b2 in:job:n:job1 out:job:n:job2", "dataset:n:c in:job:n:job2 out:",
			"job:n:job1 in:dataset:n:a out:dataset:n:b2", "job:n:job2 in:dataset:n:b2 out:dataset:n:c"}
		if got := ids(nodes); !slices.Equal(got, want) {
			t.Fatalf("dataset:n:c at 7h: %v; want %v", got, want)
		}
		for _, n := range nodes {
			if deleted := n.ID == st.c || n.ID == st.a; deleted != (n.DeletedSince != nil) {
				t.Errorf("%s deleted since %v", n.NodeID, n.DeletedSince)
			}
		}
		if _, _, err := st.lin.MarquezGraphAt(ctx, "dataset:n:nothing", 20, 100, st.h(7)); !errors.Is(err, catalog.ErrNotFound) {
			t.Fatalf("unknown name: %v; want not found", err)
		}
	})
}
