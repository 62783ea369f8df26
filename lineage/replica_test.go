package lineage_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/lineage"
)

// TestReplicasSeeEachOthersEdges: two services over one database stand for two replicas; an
// event ingested by one reaches the other's in-memory graph at its next Sync.
func TestReplicasSeeEachOthersEdges(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := catalog.New(db.Client)
		a, b := lineage.New(db, cat), lineage.New(db, cat)
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
