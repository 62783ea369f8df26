package cleanup_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/cleanupshardwalk"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

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
	svc    *cleanup.Service
}

// cluster is N replicas over one database and one real Iceberg warehouse.
type cluster struct {
	lake     *tablestest.Lake
	clock    *tickClock
	replicas []*replica
	asset    uuid.UUID
	orphans  []string
}

// newCluster starts n replicas on a fresh database of the backend, with a partitioned table
// of many shards and old orphans in several of them, synced once. wrap, when set, wraps a
// replica's storage listing.
func newCluster(t *testing.T, backend string, n int, wrap func(i int) func(icebergio.ListableIO) icebergio.ListableIO) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{lake: tablestest.NewLake(t), clock: newTickClock()}
	tbl := c.lake.Append(c.lake.Create("db.events", tablestest.HourSpec()), tablestest.Rows(0, 12, time.Now().Add(-24*time.Hour)))
	for i := range 6 {
		c.orphans = append(c.orphans, c.lake.WriteFile(tbl, fmt.Sprintf("data/ts_hour=orphan-%d/leftover.parquet", i), 100+i, time.Now().Add(-200*time.Hour)))
	}
	// The replicas share one database (storagetest's: on SQLite a copy of its migrated template).
	for i, db := range storagetest.Replicas(t, backend, n) {
		cat := mustCatalog(t, db, catalog.WithClock(c.clock.Now))
		tbls, err := tables.New(db, cat, tables.WithClock(c.clock.Now), tables.WithWarehouseRoots(os.TempDir()),
			tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, c.lake.Cat)))
		if err != nil {
			t.Fatal(err)
		}
		opts := []cleanup.Option{cleanup.WithClock(c.clock.Now), cleanup.WithHolder(fmt.Sprintf("replica-%d", i))}
		if wrap != nil {
			if w := wrap(i); w != nil {
				opts = append(opts, cleanup.WithListingWrapper(w))
			}
		}
		c.replicas = append(c.replicas, &replica{db: db, tables: tbls, svc: mustCleanup(t, db, cat, tbls, opts...)})
	}
	rep, err := c.replicas[0].tables.Sync(ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	c.asset = rep.Connections[0].Added[0].AssetID
	return c
}

// completeWalksNeverOverlap checks that no two complete walks of one shard overlapped in time.
func completeWalksNeverOverlap(t *testing.T, c *cluster) {
	t.Helper()
	walks, err := c.replicas[0].db.Client.CleanupShardWalk.Query().Where(cleanupshardwalk.OutcomeEQ(cleanupshardwalk.OutcomeComplete)).All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byShard := map[string][]time.Time{}
	for _, w := range walks {
		byShard[w.Shard] = append(byShard[w.Shard], w.StartedAt, *w.FinishedAt)
	}
	for shard := range byShard {
		var spans [][2]time.Time
		for _, w := range walks {
			if w.Shard == shard {
				spans = append(spans, [2]time.Time{w.StartedAt, *w.FinishedAt})
			}
		}
		slices.SortFunc(spans, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
		for i := 1; i < len(spans); i++ {
			if spans[i][0].Before(spans[i-1][1]) {
				t.Fatalf("two complete walks of %s overlapped: %v and %v", shard, spans[i-1], spans[i])
			}
		}
	}
}

// TestReplicasScanAndExecute: three replicas scan one table at once, twice, an hour apart:
// every scan finishes, no shard is walked twice at once, each orphan is confirmed; then three
// replicas execute the approved proposal at once: it runs once, its journal equals what was
// deleted and the audit log.
func TestReplicasScanAndExecute(t *testing.T) {
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			c := newCluster(t, backend, 3, nil)
			ctx := context.Background()
			for round := range 2 {
				var wg sync.WaitGroup
				errs := make([]error, len(c.replicas))
				for i, r := range c.replicas {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = r.svc.Scan(ctx, c.asset, cleanup.ScanOptions{})
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Fatalf("round %d: replica %d's scan failed: %v", round, i, err)
					}
				}
				c.clock.Add(2 * time.Hour)
			}
			scans, err := c.replicas[0].db.Client.CleanupScan.Query().All(ctx)
			if err != nil || len(scans) != 6 {
				t.Fatalf("%d scans, %v", len(scans), err)
			}
			for _, sc := range scans {
				if sc.State != cleanupscan.StateFinished {
					t.Fatalf("scan %s is %s: %s", sc.ID, sc.State, sc.Error)
				}
			}
			completeWalksNeverOverlap(t, c)
			if _, err := c.replicas[1].svc.Propose(catalog.WithActor(ctx, cleanup.BotActor)); err != nil {
				t.Fatal(err)
			}
			ps, err := c.replicas[2].svc.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindOrphanFiles, Limit: 10})
			if err != nil || len(ps) != 1 || ps[0].Evidence.Files != int64(len(c.orphans)) {
				t.Fatalf("orphan proposals: %+v %v", ps, err)
			}
			if _, err := c.replicas[0].svc.Approve(catalog.WithActor(ctx, "token:alice"), ps[0].ID, ""); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			reps := make([]cleanup.ExecuteReport, len(c.replicas))
			errs := make([]error, len(c.replicas))
			for i, r := range c.replicas {
				wg.Add(1)
				go func() {
					defer wg.Done()
					reps[i], errs[i] = r.svc.Execute(ctx, uuid.Nil, nil)
				}()
			}
			wg.Wait()
			var deleted int64
			executed := 0
			for i := range reps {
				if errs[i] != nil {
					t.Fatalf("replica %d: %v", i, errs[i])
				}
				deleted += reps[i].Deleted
				executed += reps[i].Executed
			}
			p, err := c.replicas[0].svc.GetProposal(ctx, ps[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if executed != 1 || deleted != int64(len(c.orphans)) || p.State != "executed" || p.Files["deleted"] != len(c.orphans) || p.Files["gone"] != 0 || p.Version != 4 { // open 1, approved 2, executing 3, executed 4: once
				t.Fatalf("executed %d times, %d deleted; proposal %s v%d, journal %v", executed, deleted, p.State, p.Version, p.Files)
			}
			audited := 0
			events, _, err := mustCatalog(t, c.replicas[0].db).Audit(ctx, c.asset, uuid.Nil, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range events {
				if ev.Action == "cleanup.delete_files" {
					var body struct {
						Count int `json:"count"`
					}
					if err := json.Unmarshal(ev.After, &body); err != nil {
						t.Fatal(err)
					}
					audited += body.Count
				}
			}
			if audited != len(c.orphans) {
				t.Fatalf("the audit log records %d deletions, the journal %d", audited, len(c.orphans))
			}
			for _, o := range c.orphans {
				if exists(o) {
					t.Fatalf("%s is still there", o)
				}
			}
		})
	}
}

// pausing wraps a listing: the first walk of a root ending in pauseAt stops after its first
// file until released, as a process stopped with SIGSTOP would.
type pausing struct {
	icebergio.ListableIO
	pauseAt string
	once    sync.Once
	paused  chan struct{}
	resume  chan struct{}
}

func (p *pausing) WalkDir(root string, fn fs.WalkDirFunc) error {
	hit := strings.HasSuffix(root, p.pauseAt)
	return p.ListableIO.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && hit && !d.IsDir() {
			p.once.Do(func() {
				close(p.paused)
				<-p.resume
			})
		}
		return fn(path, d, err)
	})
}

// TestReplicaLosesLease: a walker paused past its shard lease, while another replica walks and
// completes the same shard, stops when it wakes: its walk is not recorded as complete. A scan
// whose worker died (its database gone, as after kill -9) is marked abandoned and restarted by
// another replica within two lease periods.
func TestReplicaLosesLease(t *testing.T) {
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			p := &pausing{pauseAt: "/data/ts_hour=orphan-0", paused: make(chan struct{}), resume: make(chan struct{})}
			q := &pausing{pauseAt: "/nowhere", paused: make(chan struct{}), resume: make(chan struct{})}
			c := newCluster(t, backend, 3, func(i int) func(icebergio.ListableIO) icebergio.ListableIO {
				w := map[int]*pausing{0: p, 1: q}[i]
				if w == nil {
					return nil
				}
				return func(l icebergio.ListableIO) icebergio.ListableIO { w.ListableIO = l; return w }
			})
			ctx := context.Background()
			var a cleanup.Report
			var aErr error
			done := make(chan struct{})
			go func() {
				defer close(done)
				a, aErr = c.replicas[0].svc.Scan(ctx, c.asset, cleanup.ScanOptions{})
			}()
			<-p.paused
			c.clock.Add(cleanup.DefaultLeaseTTL + time.Second) // the paused walker's lease lapses
			b, err := c.replicas[1].svc.Scan(ctx, c.asset, cleanup.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			shard := "data/ts_hour=orphan-0/"
			if got := shardOutcome(b, shard); got != "complete" {
				t.Fatalf("the other replica's walk of %s: %s", shard, got)
			}
			close(p.resume)
			<-done
			if aErr != nil {
				t.Fatal(aErr)
			}
			if got := shardOutcome(a, shard); got == "complete" {
				t.Fatalf("the paused walker recorded %s as complete after losing its lease", shard)
			}
			completeWalksNeverOverlap(t, c)

			// kill -9: a scan whose worker vanished (its connections closed mid-walk) stays
			// running until another replica sees its heartbeat stop.
			dead := make(chan struct{})
			p.once = sync.Once{}
			p.pauseAt, p.paused, p.resume = "/data/ts_hour=orphan-1", make(chan struct{}), make(chan struct{})
			go func() {
				defer close(dead)
				_, _ = c.replicas[0].svc.Scan(ctx, c.asset, cleanup.ScanOptions{})
			}()
			<-p.paused
			c.replicas[0].db.Close() // the process is gone: nothing it writes lands any more
			close(p.resume)
			<-dead
			c.clock.Add(2*cleanup.DefaultLeaseTTL + time.Second)
			n, err := c.replicas[1].svc.ScanDue(ctx, 24*time.Hour, cleanup.ScanOptions{})
			if err != nil || n != 1 {
				t.Fatalf("takeover: %d scans, %v", n, err)
			}
			scans, err := c.replicas[1].svc.Scans(ctx, cleanup.ScanFilter{AssetID: c.asset, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if scans[0].State != "finished" || scans[1].State != "abandoned" || !strings.Contains(scans[1].Error, "abandoned") {
				t.Fatalf("after the takeover: newest %s, then %s (%s)", scans[0].State, scans[1].State, scans[1].Error)
			}

			// SIGTERM: a day later the table is due; the replica scanning it is told to stop: the
			// scan stops and says so, and another replica takes the table over at once.
			c.clock.Add(25 * time.Hour)
			stopped := make(chan struct{})
			q.pauseAt = "/data/ts_hour=orphan-2"
			sigterm, cancel := context.WithCancel(ctx)
			go func() {
				defer close(stopped)
				_, _ = c.replicas[1].svc.ScanDue(sigterm, 24*time.Hour, cleanup.ScanOptions{})
			}()
			<-q.paused
			cancel()
			close(q.resume)
			<-stopped
			scans, err = c.replicas[2].svc.Scans(ctx, cleanup.ScanFilter{AssetID: c.asset, Limit: 1})
			if err != nil || scans[0].State != "stopped" {
				t.Fatalf("a scan stopped by SIGTERM: %+v %v", scans, err)
			}
			if n, err := c.replicas[2].svc.ScanDue(ctx, 24*time.Hour, cleanup.ScanOptions{}); err != nil || n != 1 {
				t.Fatalf("takeover after SIGTERM: %d scans, %v", n, err)
			}
		})
	}
}

func shardOutcome(r cleanup.Report, shard string) string {
	for _, s := range r.Shards {
		if s.Shard == shard {
			return s.Outcome
		}
	}
	return "absent"
}
