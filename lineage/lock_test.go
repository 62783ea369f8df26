package lineage

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestRetryLocksFacetsExclusively: first attempts lock the assets whose facets they carry side
// by side; a retry waits until every one of them has committed, and a first attempt arriving
// meanwhile waits for the retry.
func TestRetryLocksFacetsExclusively(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	ctx := context.Background()
	cat, err := catalog.New(db)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.New()
	begin := func() *batch {
		tx, err := db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() })
		return newBatch(ctx, s, tx)
	}
	lock := func(b *batch, exclusive bool) chan error {
		done := make(chan error, 1)
		go func() { done <- b.lockFacets(ctx, []uuid.UUID{uuid.New(), id}, exclusive) }()
		return done
	}
	first, second := begin(), begin()
	for _, b := range []*batch{first, second} {
		if err := <-lock(b, false); err != nil {
			t.Fatal(err)
		}
	}
	retry := begin()
	retried := lock(retry, true)
	waitForAdvisory(t, db, 1)
	if err := first.tx.Commit(); err != nil {
		t.Fatal(err)
	}
	waitForAdvisory(t, db, 1) // still waiting for the second
	late := begin()
	lateDone := lock(late, false)
	waitForAdvisory(t, db, 2) // the late first attempt queues behind the retry
	if err := second.tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-retried; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lateDone:
		t.Fatalf("a first attempt locked the asset while a retry held it (err %v)", err)
	default:
	}
	if err := retry.tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-lateDone; err != nil {
		t.Fatal(err)
	}
}

// waitForAdvisory returns once exactly n advisory lock requests of the test's database wait.
func waitForAdvisory(t *testing.T, db *storage.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := db.SQL.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d advisory lock requests wait, want %d", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
