package usage

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
)

// TestRollupLocksAreBounded: a batch touching 40,000 assets takes at most lockStripes advisory
// locks (one lock an asset exhausted PostgreSQL's shared lock table: "out of shared memory").
func TestRollupLocksAreBounded(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	ctx := context.Background()
	s, err := New(db, catalog.New(db.Client))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for range 40000 {
		set[uuid.NewString()] = true
	}
	tx, err := db.Client.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := s.lockAssets(ctx, tx, set); err != nil {
		t.Fatalf("lock 40,000 assets: %v", err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var n int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 || n > lockStripes {
		t.Fatalf("the transaction holds %d advisory locks, want 1..%d", n, lockStripes)
	}
}
