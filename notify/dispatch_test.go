package notify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/outboxmessage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestDispatchRetries: a webhook that fails is retried with backoff until it answers 2xx; the
// delivery state says how it went.
func TestDispatchRetries(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		var mu sync.Mutex
		calls := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls == 1 {
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			}
		}))
		defer srv.Close()
		must(t, e.svc.SetWebhook(e.ctx, "team-events", srv.URL))
		if _, err := e.cat.SetOwner(e.ctx, e.id, catalog.AnyVersion, catalog.OwnerInput{Principal: "team-events"}); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(100 * 24 * time.Hour)
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 {
			t.Fatalf("proposals: %+v", ps)
		}
		if d, f, err := e.svc.Dispatch(e.ctx); err != nil || d != 0 || f != 0 {
			t.Fatalf("first dispatch: %d delivered, %d failed, %v", d, f, err)
		}
		p, _ := e.clean.GetProposal(e.ctx, ps[0].ID)
		if n := p.Notifications[0]; n.State != "pending" || n.Attempts != 1 || !strings.Contains(n.LastError, "503") {
			t.Fatalf("after a failed delivery: %+v", n)
		}
		if d, _, _ := e.svc.Dispatch(e.ctx); d != 0 {
			t.Fatal("retried before the backoff")
		}
		e.clock.Add(31 * time.Second)
		if d, _, err := e.svc.Dispatch(e.ctx); err != nil || d != 1 {
			t.Fatalf("retry: %d %v", d, err)
		}
		p, _ = e.clean.GetProposal(e.ctx, ps[0].ID)
		if n := p.Notifications[0]; n.State != "delivered" || n.Attempts != 2 || n.DeliveredAt == nil {
			t.Fatalf("after the retry: %+v", n)
		}
	})
}

// TestWebhookHardening: a delivery error never shows the webhook URL's secrets; a redirect is
// not followed (it is a failed delivery); a service that refuses private addresses does not
// connect to a loopback receiver.
func TestWebhookHardening(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		var elsewhere atomic.Int64
		target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
		defer target.Close()
		bouncer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/stolen", http.StatusFound)
		}))
		defer bouncer.Close()
		_, err := e.cat.SetOwner(e.ctx, e.id, catalog.AnyVersion, catalog.OwnerInput{Principal: "team", Role: "owner"})
		must(t, err)
		must(t, e.svc.SetWebhook(e.ctx, "team", bouncer.URL+"/hook?token=s3cr3t-value"))
		e.clock.Add(100 * 24 * time.Hour)
		e.propose() // an unused-asset proposal: one notification to the team
		if _, _, err := e.svc.Dispatch(e.ctx); err != nil {
			t.Fatal(err)
		}
		if elsewhere.Load() != 0 {
			t.Fatal("the dispatcher followed a redirect")
		}
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		p, err := e.clean.GetProposal(e.ctx, ps[0].ID)
		must(t, err)
		if len(p.Notifications) != 1 || !strings.Contains(p.Notifications[0].LastError, "302") || strings.Contains(p.Notifications[0].LastError, "s3cr3t") {
			t.Fatalf("delivery: %+v", p.Notifications)
		}
		// An unreachable receiver: the transport error names the URL; the secret stays out.
		must(t, e.svc.SetWebhook(e.ctx, "team", "http://127.0.0.1:1/hook?token=s3cr3t-value"))
		recordRead(t, e, "db.events", e.clock.Now(), "q-1") // withdraws: a second notification
		e.propose()
		e.clock.Add(time.Hour)
		if _, _, err := e.svc.Dispatch(e.ctx); err != nil {
			t.Fatal(err)
		}
		p, err = e.clean.GetProposal(e.ctx, ps[0].ID)
		must(t, err)
		for _, n := range p.Notifications {
			if n.LastError == "" || strings.Contains(n.LastError, "s3cr3t") {
				t.Fatalf("delivery error shows the secret or nothing: %q", n.LastError)
			}
		}

		// Refusing private addresses: a loopback receiver is never contacted.
		var hits atomic.Int64
		local := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
		defer local.Close()
		strict := newService(t, db, e.cat, notify.WithClock(e.clock.Now))
		must(t, strict.SetWebhook(e.ctx, "team", local.URL+"/hook"))
		e.clock.Add(100 * 24 * time.Hour) // unused again: a new proposal, a new notification
		if r, err := e.clean.Propose(e.ctx); err != nil || r.Opened != 1 {
			t.Fatalf("propose: %+v %v", r, err)
		}
		if _, _, err := strict.Dispatch(e.ctx); err != nil {
			t.Fatal(err)
		}
		open := e.proposals(cleanup.KindUnusedAsset, "open")
		p, err = e.clean.GetProposal(e.ctx, open[0].ID)
		must(t, err)
		if hits.Load() != 0 || len(p.Notifications) != 1 || !strings.Contains(p.Notifications[0].LastError, "refused") {
			t.Fatalf("a service refusing private addresses: %d deliveries, %+v", hits.Load(), p.Notifications)
		}
	})
}

// TestReplicasSlowWebhook: three replicas dispatch while the receiver is slow, close to the
// 10 s client timeout: every message is delivered exactly once. Each request moves the shared
// fake clock 3 s, so three replicas sending at once spend about 9 s a request each.
func TestReplicasSlowWebhook(t *testing.T) {
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			c := newCluster(t, backend, 3)
			ctx := context.Background()
			var mu sync.Mutex
			got := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.clock.Add(3 * time.Second)
				mu.Lock()
				got[r.Header.Get("Idempotency-Key")]++
				mu.Unlock()
			}))
			defer srv.Close()
			r0 := c.replicas[0]
			must(t, r0.svc.SetWebhook(ctx, "team", srv.URL))
			if _, err := mustCatalog(t, r0.db).SetOwner(ctx, c.asset, catalog.AnyVersion, catalog.OwnerInput{Principal: "team", Role: "owner"}); err != nil {
				t.Fatal(err)
			}
			// About thirty notifications: proposals opened, then withdrawn and opened again as
			// the confirmed orphans go one by one.
			for i := range 15 {
				c.lake.WriteFile(mustLoad(t, c), fmt.Sprintf("data/n-%d.parquet", i), 10, time.Now().Add(-200*time.Hour))
			}
			for range 2 {
				if _, err := r0.clean.Scan(ctx, c.asset, cleanup.ScanOptions{}); err != nil {
					t.Fatal(err)
				}
				c.clock.Add(2 * time.Hour)
			}
			for i := range 15 {
				if _, err := r0.clean.Propose(ctx); err != nil {
					t.Fatal(err)
				}
				must(t, os.Remove(tablestest.Path(mustLoad(t, c), fmt.Sprintf("data/n-%d.parquet", i))))
				if _, err := r0.clean.Scan(ctx, c.asset, cleanup.ScanOptions{}); err != nil {
					t.Fatal(err)
				}
				c.clock.Add(2 * time.Hour)
			}
			// Every replica's dispatcher keeps polling, as DispatchJob does, until nothing is
			// pending any more.
			var wg sync.WaitGroup
			for _, r := range c.replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 10000 {
						if _, _, err := r.svc.Dispatch(ctx); err != nil && !errors.Is(err, context.Canceled) {
							t.Error(err)
							return
						}
						pending, err := r.db.Client.OutboxMessage.Query().Where(outboxmessage.StateEQ(outboxmessage.StatePending)).Exist(ctx)
						if err != nil || !pending {
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			for k, n := range got {
				if n != 1 {
					t.Fatalf("message %s delivered %d times", k, n)
				}
			}
			if len(got) < 20 {
				t.Fatalf("only %d messages delivered", len(got))
			}
		})
	}
}

// tickClock is a shared fake clock that moves forward a microsecond on every reading, so the
// order of events across replicas is the order of their timestamps; Add jumps it.
type tickClock struct{ ns atomic.Int64 }

func newTickClock() *tickClock {
	c := &tickClock{}
	c.ns.Store(time.Now().UTC().Truncate(time.Second).UnixNano())
	return c
}
func (c *tickClock) Now() time.Time      { return time.Unix(0, c.ns.Add(int64(time.Microsecond))).UTC() }
func (c *tickClock) Add(d time.Duration) { c.ns.Add(int64(d)) }

// replica is one Tidemark process: its own database connection pool and services.
type replica struct {
	db     *storage.DB
	tables *tables.Service
	clean  *cleanup.Service
	svc    *notify.Service
}

// cluster is N replicas over one database and one real Iceberg warehouse.
type cluster struct {
	lake     *tablestest.Lake
	clock    *tickClock
	replicas []*replica
	asset    uuid.UUID
}

// newCluster starts n replicas on a fresh database of the backend, with a partitioned table
// of many shards and old orphans in several of them, synced once.
func newCluster(t *testing.T, backend string, n int) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{lake: tablestest.NewLake(t), clock: newTickClock()}
	tbl := c.lake.Append(c.lake.Create("db.events", tablestest.HourSpec()), tablestest.Rows(0, 12, time.Now().Add(-24*time.Hour)))
	for i := range 6 {
		c.lake.WriteFile(tbl, fmt.Sprintf("data/ts_hour=orphan-%d/leftover.parquet", i), 100+i, time.Now().Add(-200*time.Hour))
	}
	// The replicas share one database (storagetest's: on SQLite a copy of its migrated template).
	for i, db := range storagetest.Replicas(t, backend, n) {
		cat := mustCatalog(t, db, catalog.WithClock(c.clock.Now))
		tbls, err := tables.New(db, cat, tables.WithClock(c.clock.Now), tables.WithWarehouseRoots(os.TempDir()),
			tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, c.lake.Cat)))
		if err != nil {
			t.Fatal(err)
		}
		clean, err := cleanup.New(db, cat, tbls, cleanup.WithClock(c.clock.Now), cleanup.WithHolder(fmt.Sprintf("replica-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		svc := newService(t, db, cat, notify.WithClock(c.clock.Now), notify.WithPrivateWebhooks(true))
		c.replicas = append(c.replicas, &replica{db: db, tables: tbls, clean: clean, svc: svc})
	}
	rep, err := c.replicas[0].tables.Sync(ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	c.asset = rep.Connections[0].Added[0].AssetID
	return c
}

func mustLoad(t *testing.T, c *cluster) *table.Table {
	t.Helper()
	tbl, err := c.lake.Cat.LoadTable(context.Background(), table.Identifier{"db", "events"})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
