package lineage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/lineageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestEventPrincipal: every stored event carries the principal that posted it, as the context
// names it (the API puts "token:<name>" there), through one event and through a batch; without
// one the service's own actor, "system", is stored.
func TestEventPrincipal(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := mustLineage(t, db, mustCatalog(t, db))
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ev := func(run string) []byte {
			return fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","producer":"p","run":{"runId":%q},
				"job":{"namespace":"n","name":"j"},"inputs":[{"namespace":"n","name":"a"}],"outputs":[{"namespace":"n","name":"b"}]}`, run)
		}
		one, err := lin.Ingest(catalog.WithActor(ctx, "token:ci"), ev("r1"))
		if err != nil {
			t.Fatal(err)
		}
		items, err := lin.IngestBatch(catalog.WithActor(ctx, "token:airflow"), [][]byte{ev("r2"), ev("r3")})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := lin.Ingest(ctx, ev("r4"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[uuid.UUID]string{one.EventID: "token:ci", items[0].Result.EventID: "token:airflow",
			items[1].Result.EventID: "token:airflow", plain.EventID: "system"}
		for id, principal := range want {
			row, err := db.Client.LineageEvent.Query().Where(lineageevent.ID(id)).Only(ctx)
			if err != nil {
				t.Fatalf("event %s: %v", id, err)
			}
			if row.Principal != principal {
				t.Errorf("event of run %s stored principal %q; want %q", row.RunID, row.Principal, principal)
			}
		}
		// A redelivery by another principal changes nothing: the event keeps who posted it first.
		again, err := lin.Ingest(catalog.WithActor(ctx, "token:other"), ev("r1"))
		if err != nil || !again.Duplicate {
			t.Fatalf("redelivery = %+v, %v; want a duplicate", again, err)
		}
		if n, err := db.Client.LineageEvent.Query().Where(lineageevent.Principal("token:other")).Count(ctx); err != nil || n != 0 {
			t.Fatalf("%d events by token:other, %v; want none", n, err)
		}
	})
}
