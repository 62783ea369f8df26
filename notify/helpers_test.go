package notify_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newService is a notify service over db, or the test stops.
func newService(t *testing.T, db *storage.DB, cat *catalog.Catalog, opts ...notify.Option) *notify.Service {
	t.Helper()
	svc, err := notify.New(db, cat, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// env is a real table synced from a real Iceberg SQL catalog, the cleanup bot that proposes
// what to do with it (its proposals write the outbox messages) and the notify service that
// delivers them; both clocks start at the real now (the files' mtimes are real).
type env struct {
	t      *testing.T
	ctx    context.Context
	lake   *tablestest.Lake
	id     uuid.UUID
	clock  *clock
	cat    *catalog.Catalog
	tables *tables.Service
	usage  *usage.Service
	clean  *cleanup.Service
	svc    *notify.Service
}

func newEnv(t *testing.T, db *storage.DB) *env {
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, lake: tablestest.NewLake(t), clock: &clock{t: time.Now().UTC()}}
	tbl := e.lake.Append(e.lake.Create("db.events", nil), tablestest.Rows(0, 5, time.Now()))
	e.lake.Append(tbl, tablestest.Rows(5, 5, time.Now()))
	e.cat = mustCatalog(t, db, catalog.WithClock(e.clock.Now))
	var err error
	e.tables, err = tables.New(db, e.cat, tables.WithClock(e.clock.Now), tables.WithWarehouseRoots(os.TempDir()),
		tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, e.lake.Cat)))
	must(t, err)
	rep, err := e.tables.Sync(ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	e.id = rep.Connections[0].Added[0].AssetID
	e.usage, err = usage.New(db, e.cat, usage.WithClock(e.clock.Now))
	must(t, err)
	e.clean, err = cleanup.New(db, e.cat, e.tables, cleanup.WithClock(e.clock.Now), cleanup.WithUsage(e.usage, nil))
	must(t, err)
	e.svc = newService(t, db, e.cat, notify.WithClock(e.clock.Now),
		notify.WithPrivateWebhooks(true)) // the test receivers listen on loopback
	return e
}

func (e *env) propose() cleanup.ProposeReport {
	e.t.Helper()
	r, err := e.clean.Propose(e.ctx)
	if err != nil {
		e.t.Fatalf("propose: %v", err)
	}
	return r
}

func (e *env) proposals(kind, state string) []cleanup.Proposal {
	e.t.Helper()
	ps, err := e.clean.Proposals(e.ctx, cleanup.ProposalFilter{Kind: kind, State: state, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return ps
}

func recordRead(t *testing.T, e *env, name string, at time.Time, query string) {
	t.Helper()
	res, err := e.usage.Record(e.ctx, []usage.Record{{Namespace: "iceberg://lake", Name: name, Kind: "read", Actor: "bob", At: at, QueryID: query, Source: "trino"}})
	if err != nil || res[0].Status != usage.StatusAccepted {
		t.Fatalf("record read of %s: %+v %v", name, res, err)
	}
}

// mustCatalog returns a catalog over db, or the test stops.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}
