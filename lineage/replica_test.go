package lineage_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestReplicasSeeEachOthersEdges: two services over one database stand for two replicas; an
// event ingested by one reaches the other's in-memory graph at its next Sync.
func TestReplicasSeeEachOthersEdges(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		a, b := mustLineage(t, db, cat), mustLineage(t, db, cat)
		for _, s := range []*lineage.Service{a, b} {
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ev := []byte(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},
			"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"in"}],"outputs":[{"namespace":"n","name":"out"}]}`)
		res, err := a.Ingest(ctx, ev)
		if err != nil || res.Duplicate {
			t.Fatalf("ingest: %+v %v", res, err)
		}
		if got := a.Graph().Freshness().Edges; got != 2 {
			t.Fatalf("writer sees %d edges at once, want 2", got)
		}
		if got := b.Graph().Freshness().Edges; got != 0 {
			t.Fatalf("reader sees %d edges before syncing", got)
		}
		// The other replica, not synced yet, sees the same edges in a later run: it finds them in
		// the database (one lookup per exact pair) and widens them instead of writing them twice.
		later := []byte(`{"eventType":"COMPLETE","eventTime":"2024-01-02T00:00:00Z","run":{"runId":"r2"},
			"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"in"}],"outputs":[{"namespace":"n","name":"out"}]}`)
		if _, err := b.Ingest(ctx, later); err != nil {
			t.Fatalf("the same edges through the other replica: %v", err)
		}
		edges, err := db.Client.LineageEdge.Query().All(ctx)
		if err != nil || len(edges) != 2 {
			t.Fatalf("edges in the database: %d (%v); want 2", len(edges), err)
		}
		for _, e := range edges {
			if e.LastRunID != "r2" || !e.LastSeen.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("edge %+v: not widened to the later run", e)
			}
		}
		if err := b.Graph().Sync(ctx); err != nil {
			t.Fatal(err)
		}
		in, err := cat.Resolve(ctx, "n", "in")
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Lineage(ctx, in.Asset.ID, lineage.Downstream, 5, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Nodes) != 3 || len(got.Edges) != 2 {
			t.Fatalf("reader after sync: %d nodes, %d edges; want 3 and 2", len(got.Nodes), len(got.Edges))
		}
		again, err := b.Ingest(ctx, ev)
		if err != nil || !again.Duplicate || again.EventID != res.EventID {
			t.Fatalf("redelivery through the other replica: %+v %v", again, err)
		}
	})
}

// TestReplicasSeeEachOthersSchemas: a schema written through one replica shows in the other's
// Marquez graph after its next Sync, and in a new process's once it has loaded.
func TestReplicasSeeEachOthersSchemas(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		a, b := mustLineage(t, db, cat), mustLineage(t, db, cat)
		for _, s := range []*lineage.Service{a, b} {
			if err := s.Open(ctx); err != nil {
				t.Fatal(err)
			}
		}
		ev := []byte(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},
			"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"in"}],
			"outputs":[{"namespace":"n","name":"out","facets":{"schema":{"fields":[{"name":"id","type":"BIGINT"}]}}}]}`)
		if _, err := a.Ingest(ctx, ev); err != nil {
			t.Fatal(err)
		}
		fields := func(s *lineage.Service) int {
			t.Helper()
			nodes, _, err := s.MarquezGraph(ctx, "dataset:n:out", 2, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range nodes {
				if n.Name == "out" {
					return len(n.Fields)
				}
			}
			t.Fatalf("out is not in its own graph: %+v", nodes)
			return 0
		}
		if got := fields(a); got != 1 {
			t.Fatalf("the writer's graph shows %d fields of out; want 1", got)
		}
		if err := b.Graph().Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if got := fields(b); got != 1 {
			t.Fatalf("the other replica's graph shows %d fields of out after its sync; want 1", got)
		}
		c := mustLineage(t, db, cat)
		if err := c.Open(ctx); err != nil {
			t.Fatal(err)
		}
		if got := fields(c); got != 1 {
			t.Fatalf("a new process's graph shows %d fields of out; want 1", got)
		}
	})
}
