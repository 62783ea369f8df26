package catalog_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// fakeClock is a settable clock for the catalog under test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	cat   *catalog.Catalog
	db    *storage.DB
	clock *fakeClock
}

// mustCatalog returns a catalog over db, failing the test if it cannot be built.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// eachBackend runs fn on a fresh catalog over SQLite and over PostgreSQL.
func eachBackend(t *testing.T, fn func(t *testing.T, e env)) {
	t.Helper()
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		clock := &fakeClock{t: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}
		fn(t, env{cat: mustCatalog(t, db, catalog.WithClock(clock.Now)), db: db, clock: clock})
	})
}

func (e env) create(t *testing.T, namespace, name string) catalog.Asset {
	t.Helper()
	res, err := e.cat.Create(context.Background(), catalog.CreateInput{Kind: catalog.KindTable, Namespace: namespace, Name: name})
	if err != nil {
		t.Fatalf("create %s.%s: %v", namespace, name, err)
	}
	if !res.Created {
		t.Fatalf("create %s.%s returned an existing asset", namespace, name)
	}
	return res.Asset
}

// counts returns the row count of every table, to prove a refused request wrote nothing.
func (e env) counts(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"assets", "asset_names", "external_ids", "owners", "audit_events", "idempotency_keys"} {
		var n int
		if err := e.db.SQL.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

func (e env) auditActions(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	evs, _, err := e.cat.Audit(context.Background(), id, uuid.Nil, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Action)
	}
	return out
}
