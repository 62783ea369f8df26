package cleanup_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
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

// faulty wraps the storage listing: it can fail the walk of chosen roots and repeat entries.
type faulty struct {
	icebergio.ListableIO
	mu     sync.Mutex
	fail   string // a root suffix whose walks fail after their first entry...
	pass   int    // ...once this many walks of it went through (discovery lists data/ too)
	repeat bool   // every file is listed twice
}

func (f *faulty) set(fail string, pass int, repeat bool) {
	f.mu.Lock()
	f.fail, f.pass, f.repeat = fail, pass, repeat
	f.mu.Unlock()
}

func (f *faulty) WalkDir(root string, fn fs.WalkDirFunc) error {
	f.mu.Lock()
	fail, repeat := f.fail, f.repeat
	if fail != "" && strings.HasSuffix(root, fail) && f.pass > 0 {
		f.pass--
		fail = ""
	}
	f.mu.Unlock()
	n := 0
	return f.ListableIO.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(p, d, err)
		}
		if fail != "" && strings.HasSuffix(root, fail) && !d.IsDir() {
			if n++; n > 1 {
				return errors.New("connection reset by peer")
			}
		}
		if err := fn(p, d, nil); err != nil || d.IsDir() || !repeat {
			return err
		}
		return fn(p, d, nil)
	})
}

type env struct {
	t      *testing.T
	ctx    context.Context
	lake   *tablestest.Lake
	tbl    *table.Table
	id     uuid.UUID
	clock  *clock
	tables *tables.Service
	svc    *cleanup.Service
	list   *faulty
	hook   func(shard string)
	cat    *catalog.Catalog
	usage  *usage.Service
}

// newEnv is a real table synced from a real Iceberg SQL catalog, and a cleanup service whose
// clock starts at the real now (the files' mtimes are real).
func newEnv(t *testing.T, db *storage.DB, opts ...cleanup.Option) *env {
	ctx := context.Background()
	e := &env{t: t, ctx: ctx, lake: tablestest.NewLake(t), clock: &clock{t: time.Now().UTC()}, list: &faulty{}}
	e.tbl = e.lake.Append(e.lake.Create("db.events", nil), tablestest.Rows(0, 5, time.Now()))
	e.tbl = e.lake.Append(e.tbl, tablestest.Rows(5, 5, time.Now()))
	cat := mustCatalog(t, db, catalog.WithClock(e.clock.Now))
	var err error
	e.tables, err = tables.New(db, cat, tables.WithClock(e.clock.Now), tables.WithWarehouseRoots(os.TempDir()),
		tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, e.lake.Cat)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.tables.Sync(ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	e.id = rep.Connections[0].Added[0].AssetID
	e.cat = cat
	e.usage, err = usage.New(db, cat, usage.WithClock(e.clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	e.svc = mustCleanup(t, db, cat, e.tables, append([]cleanup.Option{cleanup.WithClock(e.clock.Now),
		cleanup.WithListingWrapper(func(l icebergio.ListableIO) icebergio.ListableIO { e.list.ListableIO = l; return e.list }),
		cleanup.WithShardHook(func(s string) {
			if e.hook != nil {
				e.hook(s)
			}
		}), cleanup.WithUsage(e.usage, nil)}, opts...)...)
	return e
}

func (e *env) scan(opt cleanup.ScanOptions) cleanup.Report {
	e.t.Helper()
	rep, err := e.svc.Scan(e.ctx, e.id, opt)
	if err != nil {
		e.t.Fatalf("scan: %v", err)
	}
	if strings.Contains(strings.ToLower(rep.Summary), "clean") || strings.Contains(rep.Summary, "complete inventory") {
		e.t.Fatalf("the report claims too much: %s", rep.Summary)
	}
	return rep
}

func shard(r cleanup.Report, name string) cleanup.ShardReport {
	for _, s := range r.Shards {
		if s.Shard == name {
			return s
		}
	}
	return cleanup.ShardReport{}
}

// TestTwoPasses: an old unreferenced file is confirmed only by two consecutive complete walks
// of its shard; a failed walk in between confirms nothing, shows as a hole and breaks the chain;
// repeated listing entries change nothing.
func TestTwoPasses(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		old := e.lake.WriteFile(e.tbl, "data/orphan-1.parquet", 2048, e.clock.Now().Add(-100*time.Hour))
		e.lake.WriteFile(e.tbl, "data/young.parquet", 10, e.clock.Now())

		r1 := e.scan(cleanup.ScanOptions{})
		if r1.Candidates != 1 || r1.Confirmed != 0 || r1.TooYoung != 1 || r1.CandidateBytes != 2048 {
			t.Fatalf("first scan: candidates %d (%d bytes), confirmed %d, too young %d\n%s", r1.Candidates, r1.CandidateBytes, r1.Confirmed, r1.TooYoung, r1.Summary)
		}
		if len(r1.Holes) != 0 || r1.ShardsComplete != len(r1.Shards) || shard(r1, "data/*").Outcome != "complete" || shard(r1, "metadata/").Outcome != "complete" {
			t.Fatalf("first scan shards: %+v holes %+v", r1.Shards, r1.Holes)
		}
		// A scan lists; checking references by key is the reference check's job.
		if r1.Requests.List == 0 || r1.Requests.Head != 0 {
			t.Fatalf("first scan requests %+v", r1.Requests)
		}
		if r1.MinGap != "1h0m0s" || r1.Pacing.PageSize != cleanup.DefaultPageSize {
			t.Fatalf("first scan: min gap %q, pacing %+v", r1.MinGap, r1.Pacing)
		}

		// Two passes mean two moments: a walk right after the first confirms nothing, and does
		// not break the chain either.
		e.clock.Add(59 * time.Minute)
		r1b := e.scan(cleanup.ScanOptions{})
		if r1b.Confirmed != 0 || r1b.Candidates != 1 || r1b.TooSoonShards == 0 || !shard(r1b, "data/*").TooSoon || !strings.Contains(r1b.Summary, "confirmed nothing") {
			t.Fatalf("back-to-back scan: confirmed %d, candidates %d, too soon %d\n%s", r1b.Confirmed, r1b.Candidates, r1b.TooSoonShards, r1b.Summary)
		}
		if ps := e.propose(); ps.Opened != 0 {
			t.Fatalf("the bot proposed after one walk and a back-to-back one: %+v", ps)
		}

		// A listing that repeats every entry changes nothing: the second pass, an hour after
		// the first, confirms.
		e.list.set("", 0, true)
		e.clock.Add(time.Hour)
		r2 := e.scan(cleanup.ScanOptions{})
		if r2.Confirmed != 1 || r2.ConfirmedBytes != 2048 || len(r2.ConfirmedSample) != 1 || !strings.HasSuffix(r2.ConfirmedSample[0], "/data/orphan-1.parquet") {
			t.Fatalf("second scan: confirmed %d (%d bytes) %v", r2.Confirmed, r2.ConfirmedBytes, r2.ConfirmedSample)
		}
		if r2.DuplicateListed == 0 || r2.EntriesListed != r1.EntriesListed {
			t.Fatalf("repeats: %d duplicates, %d distinct entries (first scan %d)", r2.DuplicateListed, r2.EntriesListed, r1.EntriesListed)
		}
		if r2.Cost.OrphansPerMonth <= 0 || r2.Cost.Scan <= 0 {
			t.Fatalf("cost: %+v", r2.Cost)
		}
		e.list.set("", 0, false)

		// A second orphan; the walk of its shard fails in the next scan: not confirmed, a hole.
		e.lake.WriteFile(e.tbl, "data/orphan-2.parquet", 100, e.clock.Now().Add(-100*time.Hour))
		e.clock.Add(time.Hour)
		r3 := e.scan(cleanup.ScanOptions{})
		if r3.Candidates != 2 || r3.Confirmed != 1 {
			t.Fatalf("third scan: candidates %d confirmed %d", r3.Candidates, r3.Confirmed)
		}
		e.list.set("/data", 1, false) // discovery lists data/ first; the shard walk fails
		e.clock.Add(time.Hour)
		r4 := e.scan(cleanup.ScanOptions{})
		if r4.Confirmed != 0 || len(r4.Holes) != 1 || r4.Holes[0].Shard != "data/*" || r4.Holes[0].Outcome != "failed" || r4.Holes[0].LastCompleteAt == nil {
			t.Fatalf("scan with a failed shard: confirmed %d, holes %+v", r4.Confirmed, r4.Holes)
		}
		if !strings.Contains(r4.Summary, "holes") {
			t.Fatalf("summary does not mention the hole: %s", r4.Summary)
		}
		// The chain is broken: the next complete walk starts it again; the one after confirms.
		e.list.set("", 0, false)
		e.clock.Add(time.Hour)
		r5 := e.scan(cleanup.ScanOptions{})
		e.clock.Add(time.Hour)
		r6 := e.scan(cleanup.ScanOptions{})
		if r5.Confirmed != 0 || r6.Confirmed != 2 || r6.ConfirmedBytes != 2148 {
			t.Fatalf("after the failed walk: confirmed %d, then %d (%d bytes); want 0, then 2", r5.Confirmed, r6.Confirmed, r6.ConfirmedBytes)
		}
		// A confirmed orphan removed by someone else is simply no longer observed.
		if err := os.Remove(old); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(time.Hour)
		if r7 := e.scan(cleanup.ScanOptions{}); r7.Confirmed != 1 || r7.Candidates != 1 {
			t.Fatalf("after removal: %d candidates, %d confirmed", r7.Candidates, r7.Confirmed)
		}
		scans, err := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: e.id, Limit: 100})
		if err != nil || len(scans) != 8 || scans[0].ScanID != r6.ScanID && scans[0].State != "finished" {
			t.Fatalf("stored scans: %d, %v", len(scans), err)
		}
	})
}

// TestMidWalkCommit: a file written before the walk and committed while it runs (between two
// shards) is never a candidate.
func TestMidWalkCommit(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		pending := e.lake.WriteFile(e.tbl, "data/pending.parquet", 512, e.clock.Now().Add(-100*time.Hour))
		var committed bool
		e.hook = func(s string) {
			if s == "data/*" && !committed {
				committed = true
				e.tbl = e.lake.AddFiles(e.tbl, "file://"+pending)
			}
		}
		r := e.scan(cleanup.ScanOptions{})
		if !committed || r.Candidates != 0 || r.MidWalk == 0 || r.ReferencesReused {
			t.Fatalf("mid-walk commit: committed %v, candidates %d, mid-walk %d, references reused %v", committed, r.Candidates, r.MidWalk, r.ReferencesReused)
		}
		// Nothing committed during this walk: the references read before it stand for after.
		if r2 := e.scan(cleanup.ScanOptions{}); r2.Candidates != 0 || r2.Confirmed != 0 || !r2.ReferencesReused {
			t.Fatalf("next scan: %d candidates, references reused %v", r2.Candidates, r2.ReferencesReused)
		}
	})
}

// TestSlowWriter: files written eight hours before their commit are never confirmed with the
// default threshold.
func TestSlowWriter(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		written := e.clock.Now()
		var paths []string
		for _, n := range []string{"a", "b"} {
			paths = append(paths, "file://"+e.lake.WriteFile(e.tbl, "data/slow-"+n+".parquet", 4096, written))
		}
		for h := 1; h <= 8; h++ {
			e.clock.Set(written.Add(time.Duration(h) * time.Hour))
			if h == 8 {
				e.tbl = e.lake.AddFiles(e.tbl, paths...) // the writer finally commits
			}
			r := e.scan(cleanup.ScanOptions{})
			if r.Candidates != 0 || r.Confirmed != 0 {
				t.Fatalf("hour %d: %d candidates, %d confirmed", h, r.Candidates, r.Confirmed)
			}
			if h < 8 && r.TooYoung != 2 {
				t.Fatalf("hour %d: too young %d, want 2", h, r.TooYoung)
			}
		}
		// A threshold under 24h needs the explicit override, which the report shows.
		if _, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{AgeThreshold: time.Hour}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("1h threshold without override: %v", err)
		}
		if r := e.scan(cleanup.ScanOptions{AgeThreshold: time.Hour, AllowYoung: true}); !r.ThresholdOverride || r.AgeThreshold != "1h0m0s" {
			t.Fatalf("override not on the report: %+v", r)
		}
	})
}

// TestPathForms: file: URIs and plain paths name the same file; a referenced path under an
// unknown authority stops the table's scan.
func TestPathForms(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		old := e.clock.Now().Add(-100 * time.Hour)
		plain := e.lake.WriteFile(e.tbl, "data/plain.parquet", 10, old)
		single := e.lake.WriteFile(e.tbl, "data/single.parquet", 10, old)
		e.tbl = e.lake.AddFiles(e.tbl, plain, "file:"+single)
		if r := e.scan(cleanup.ScanOptions{}); r.Candidates != 0 {
			t.Fatalf("plain and file: paths: %d candidates", r.Candidates)
		}
		if r := e.checkRefs(); r.DanglingCount != 0 {
			t.Fatalf("plain and file: paths: %d dangling %+v", r.DanglingCount, r.Dangling)
		}
		other := e.lake.WriteFile(e.tbl, "data/other-host.parquet", 10, old)
		e.tbl = e.lake.AddFiles(e.tbl, "file://otherhost"+other)
		r, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{})
		if err == nil || !strings.Contains(err.Error(), "another scheme or authority") || r.State != "failed" || shard(r, "data/*").Outcome != "failed" {
			t.Fatalf("authority mismatch: err %v, state %s, shards %+v", err, r.State, r.Shards)
		}
		if r.Candidates != 0 || r.Confirmed != 0 {
			t.Fatalf("a stopped scan reported candidates: %+v", r)
		}
	})
}

// TestStopAndResume: a scan stopped between shards records what it walked and says it
// stopped; resuming walks only the shards it did not complete.
func TestStopAndResume(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db, cleanup.WithShardParallel(1)) // stopped after the first shard of two
		ctx, cancel := context.WithCancel(e.ctx)
		e.hook = func(s string) { cancel() }
		r, err := e.svc.Scan(ctx, e.id, cleanup.ScanOptions{})
		if !errors.Is(err, context.Canceled) || r.State != "stopped" || len(r.Planned) != 2 || len(r.Shards) != 2 || r.Shards[0].Outcome != "complete" {
			t.Fatalf("stopped scan: %v, state %s, planned %v, shards %+v", err, r.State, r.Planned, r.Shards)
		}
		// The shard it never reached is in the report, a hole, and counted in the summary.
		unreached := r.Shards[1]
		if unreached.Outcome != "not_reached" || r.ShardsComplete != 1 || r.ShardsNotReached != 1 || len(r.Holes) != 1 ||
			r.Holes[0].Shard != unreached.Shard || r.Holes[0].Outcome != "not_reached" ||
			!strings.Contains(r.Summary, "Planned 2 shards: 1 walked to completion, 0 failed or stopped, 1 not reached") {
			t.Fatalf("the unreached shard: %+v, holes %+v, summary %q", unreached, r.Holes, r.Summary)
		}
		stored, err := e.svc.GetScan(e.ctx, r.ScanID)
		if err != nil || stored.State != "stopped" {
			t.Fatalf("stored: %+v %v", stored.State, err)
		}
		e.hook = nil
		r2 := e.scan(cleanup.ScanOptions{Resume: r.ScanID})
		if len(r2.Shards) != 1 || r2.Shards[0].Shard != unreached.Shard || r2.Shards[0].Outcome != "complete" {
			t.Fatalf("resumed scan walked %+v after %+v", r2.Shards, r.Shards)
		}
		if _, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{Resume: r2.ScanID}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("resuming a finished scan: %v", err)
		}
	})
}

// TestConfirmingPass: a confirming pass walks only the shards whose last walk found candidates,
// with shards walked in parallel, and says what it left alone.
func TestConfirmingPass(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		old := e.clock.Now().Add(-100 * time.Hour)
		for _, d := range []string{"a", "b", "c", "d", "e"} {
			e.lake.WriteFile(e.tbl, "data/"+d+"/quiet.txt", 1, e.clock.Now()) // young: never a candidate
		}
		e.lake.WriteFile(e.tbl, "data/c/orphan.parquet", 10, old)
		e.lake.WriteFile(e.tbl, "data/e/orphan.parquet", 20, old)
		r1 := e.scan(cleanup.ScanOptions{})
		if r1.Candidates != 2 || len(r1.Shards) != 7 || r1.ShardsComplete != 7 || r1.Pacing.ShardParallel != cleanup.DefaultShardParallel {
			t.Fatalf("first scan: %d candidates, %d of %d shards complete, pacing %+v", r1.Candidates, r1.ShardsComplete, len(r1.Shards), r1.Pacing)
		}
		if !slices.IsSortedFunc(r1.Shards, func(a, b cleanup.ShardReport) int { return strings.Compare(a.Shard, b.Shard) }) {
			t.Fatalf("shards are not reported in the planned order: %+v", r1.Shards)
		}
		if _, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{ConfirmOnly: true, Shards: []string{"data/a/"}}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("confirming pass with shards: %v", err)
		}
		e.clock.Add(time.Hour)
		r2 := e.scan(cleanup.ScanOptions{ConfirmOnly: true})
		var walked []string
		for _, sh := range r2.Shards {
			walked = append(walked, sh.Shard)
		}
		if !slices.Equal(walked, []string{"data/c/", "data/e/"}) || r2.Confirmed != 2 || !r2.ConfirmOnly || r2.NothingToConfirm != 5 ||
			!strings.Contains(r2.Summary, "left 5 shards") {
			t.Fatalf("confirming pass walked %v, confirmed %d, left %d\n%s", walked, r2.Confirmed, r2.NothingToConfirm, r2.Summary)
		}
		e.clock.Add(time.Hour)
		if r3 := e.scan(cleanup.ScanOptions{ConfirmOnly: true}); len(r3.Shards) != 0 || r3.NothingToConfirm != 7 || r3.State != "finished" {
			t.Fatalf("a confirming pass with everything confirmed walked %+v, left %d, state %s", r3.Shards, r3.NothingToConfirm, r3.State)
		}
	})
}

// TestScheduled: due tables are scanned at their cadence; a table property sets its own or
// turns it off.
func TestScheduled(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		for name, v := range map[string]string{"db.quiet": "off", "db.hot": "1h"} {
			tbl := e.lake.Append(e.lake.Create(name, nil), tablestest.Rows(0, 1, time.Now()))
			txn := tbl.NewTransaction()
			if err := txn.SetProperties(map[string]string{cleanup.PropertyScanInterval: v}); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(e.ctx); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 2 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		opt := cleanup.ScanOptions{}
		due := func() int {
			t.Helper()
			n, err := e.svc.ScanDue(e.ctx, 24*time.Hour, opt)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := due(); n != 2 { // events (default cadence) and hot; quiet is off
			t.Fatalf("first round scanned %d tables, want 2", n)
		}
		if n := due(); n != 0 {
			t.Fatalf("an immediate second round scanned %d", n)
		}
		e.clock.Add(2 * time.Hour)
		if n := due(); n != 1 {
			t.Fatalf("after 2h: %d scanned, want 1 (hot)", n)
		}
		e.clock.Add(23 * time.Hour)
		if n := due(); n != 2 {
			t.Fatalf("after 25h: %d scanned, want 2", n)
		}
	})
}

// TestScheduledConfirmingPass: between full walks at the cadence, the scheduler runs a
// confirming pass once the minimum gap has passed, and only while files wait to be confirmed.
func TestScheduledConfirmingPass(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		e.lake.WriteFile(e.tbl, "data/c/orphan.parquet", 10, e.clock.Now().Add(-100*time.Hour))
		opt := cleanup.ScanOptions{}
		due := func() int {
			t.Helper()
			n, err := e.svc.ScanDue(e.ctx, 24*time.Hour, opt)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := due(); n != 1 {
			t.Fatalf("first round ran %d scans, want the full walk", n)
		}
		e.clock.Add(30 * time.Minute)
		if n := due(); n != 0 {
			t.Fatalf("before the minimum gap: %d scans", n)
		}
		// Each confirming pass may see a new orphan, which the next one confirms.
		for i, orphan := range []string{"data/c/orphan2.parquet", ""} {
			if orphan != "" {
				e.lake.WriteFile(e.tbl, orphan, 10, e.clock.Now().Add(-100*time.Hour))
			}
			e.clock.Add(31 * time.Minute)
			if i > 0 {
				e.clock.Add(30 * time.Minute)
			}
			if n := due(); n != 1 {
				t.Fatalf("after the minimum gap: %d scans, want a confirming pass", n)
			}
			scans, err := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: e.id, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if len(scans) != 2+i || !scans[0].ConfirmOnly || scans[0].Confirmed != int64(1+i) || len(scans[0].Shards) != 1 { // confirmed: every orphan confirmed there now
				t.Fatalf("pass %d: confirm-only %v, confirmed %d, shards %+v", i, scans[0].ConfirmOnly, scans[0].Confirmed, scans[0].Shards)
			}
		}
		e.clock.Add(2 * time.Hour)
		if n := due(); n != 0 {
			t.Fatalf("nothing left to confirm, yet %d scans ran", n)
		}
		// The cadence counts from the last full walk, not from the confirming passes since.
		e.clock.Add(20 * time.Hour)
		if n := due(); n != 1 {
			t.Fatalf("at the cadence: %d scans, want the full walk", n)
		}
		if scans, _ := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: e.id, Limit: 1}); scans[0].ConfirmOnly {
			t.Fatal("the walk at the cadence was a confirming pass, not a full walk")
		}
	})
}

// TestS3: the same scan over a real S3-protocol server: LIST requests counted, an orphan
// object confirmed by two walks, an s3a:// reference matching its s3:// listing, and a deleted
// object reported as dangling by the reference check.
func TestS3(t *testing.T) {
	srv := tablestest.StartS3(t)
	db := storagetest.Open(t, "sqlite")
	ctx := context.Background()
	lake := tablestest.NewLakeS3(t, srv)
	tbl := lake.Append(lake.Create("db.events", nil), tablestest.Rows(0, 5, time.Now()))
	c := &clock{t: time.Now().UTC()}
	cat := mustCatalog(t, db, catalog.WithClock(c.Now))
	tbls, err := tables.New(db, cat, tables.WithClock(c.Now), tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", srv.Props, lake.Cat)))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := tbls.Sync(ctx, nil); err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	id := mustTable(t, tbls)
	svc := mustCleanup(t, db, cat, tbls, cleanup.WithClock(c.Now))
	// Objects cannot be back-dated: judge them young-or-not against a 1ns threshold (override).
	opt := cleanup.ScanOptions{AgeThreshold: time.Nanosecond, AllowYoung: true}
	loc := tbl.Location()
	srv.Put(t, loc+"/data/orphan.parquet", 300)
	srv.Put(t, loc+"/data/extra.parquet", 10)
	tbl = lake.AddFiles(tbl, strings.Replace(loc, "s3://", "s3a://", 1)+"/data/extra.parquet")
	c.Add(time.Second)
	scan := func() cleanup.Report {
		t.Helper()
		r, err := svc.Scan(ctx, id, opt)
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		return r
	}
	r1 := scan()
	if r1.Candidates != 1 || r1.Requests.List == 0 {
		t.Fatalf("first S3 scan: candidates %d, LIST %d\n%s", r1.Candidates, r1.Requests.List, r1.Summary)
	}
	check := func() cleanup.RefCheckReport {
		t.Helper()
		r, err := svc.CheckRefs(ctx, id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond})
		if err != nil {
			t.Fatalf("reference check: %v", err)
		}
		return r
	}
	// By key: the metadata file, two manifest lists, two manifests and two data files.
	if rc := check(); rc.DanglingCount != 0 || rc.FilesChecked != 7 || rc.Requests.Head != 7 {
		t.Fatalf("first S3 reference check: dangling %d, checked %d, HEAD %d\n%s", rc.DanglingCount, rc.FilesChecked, rc.Requests.Head, rc.Summary)
	}
	c.Add(time.Hour) // two passes, two moments
	r2 := scan()
	if r2.Confirmed != 1 || r2.ConfirmedBytes != 300 || !strings.HasPrefix(r2.ConfirmedSample[0], "s3://tidemark-test/") {
		t.Fatalf("second S3 scan: confirmed %d (%d bytes) %v", r2.Confirmed, r2.ConfirmedBytes, r2.ConfirmedSample)
	}
	fs, _ := tbl.FS(ctx)
	mfs, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	deleted := ""
	for _, m := range mfs {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			if p := e.DataFile().FilePath(); deleted == "" && strings.HasPrefix(p, "s3://") {
				srv.Delete(t, p)
				deleted = p
			}
		}
	}
	if r3 := check(); r3.DanglingCount != 1 || r3.Dangling[0].Path != deleted || r3.Requests.Head != 8 {
		t.Fatalf("after deleting a referenced object: dangling %d, HEAD %d\n%+v", r3.DanglingCount, r3.Requests.Head, r3.Dangling)
	}
}

func mustTable(t *testing.T, tbls *tables.Service) uuid.UUID {
	t.Helper()
	ts, _, err := tbls.List(context.Background(), uuid.Nil, 10)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tables: %v %v", ts, err)
	}
	return ts[0].AssetID
}
