package cleanup_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

// catStats are what the catalog simulation did, for the figures in its log.
type catStats struct {
	steps, deleted, approved, rejected, executed, stopped, restored, renames, recreated, foreign, scanErrors, adopted, busy, lost int
}

func (c *catStats) add(o catStats) {
	c.steps += o.steps
	c.deleted += o.deleted
	c.approved += o.approved
	c.rejected += o.rejected
	c.executed += o.executed
	c.stopped += o.stopped
	c.restored += o.restored
	c.renames += o.renames
	c.recreated += o.recreated
	c.foreign += o.foreign
	c.scanErrors += o.scanErrors
	c.adopted += o.adopted
	c.busy += o.busy
	c.lost += o.lost
}

// leftover is the oracle's record of one leftover (see catSim.leftovers).
type leftover struct {
	mtime time.Time
	seen  []time.Time
}

// twoMoments is whether two complete walks that saw l were at least the confirmation gap apart:
// only then may l be deleted.
func (l *leftover) twoMoments() bool {
	for i := range l.seen {
		for j := range l.seen {
			if l.seen[j].Sub(l.seen[i]) >= cleanup.DefaultMinGap {
				return true
			}
		}
	}
	return false
}

// shardOf is the shard of a walk of the table at loc that lists p, "" if p is outside loc.
func shardOf(loc, p string) string {
	rel, ok := strings.CutPrefix(p, strings.TrimPrefix(strings.TrimRight(loc, "/"), "file://")+"/")
	if !ok {
		return ""
	}
	dir, rest, nested := strings.Cut(rel, "/")
	switch {
	case !nested:
		return "*"
	case dir == "data" && !strings.Contains(rest, "/"):
		return "data/*"
	case dir == "data":
		sub, _, _ := strings.Cut(rest, "/")
		return "data/" + sub + "/"
	}
	return dir + "/"
}

// catSim is one schedule of the catalog simulation: the state its steps share.
type catSim struct {
	t           *testing.T
	seed, sched uint64
	rng         *rand.Rand
	st          catStats
	db          *storage.DB
	e           *env
	ctx         context.Context
	second      *cleanup.Service // another replica's executor over the same database
	// The fault hook fails its crashAt-th call, or stalls at its pauseAt-th, since calls was
	// last reset.
	crashAt, pauseAt, calls int
	log                     []string
	foreignLake             *tablestest.Lake
	foreignIdent            table.Identifier
	restored                map[uuid.UUID]bool
	adopted                 map[string]bool // table-uuids that committed a leftover (not Parquet: rows unreadable)
	seq                     int
	// The oracle of two passes: for every leftover (a file no table references), the times of
	// complete walks of its shard that saw it as it is now. A leftover may be deleted only when
	// two such walks were at least the confirmation gap apart.
	leftovers map[string]*leftover
	retired   map[uuid.UUID]bool // retirements whose metadata step the oracle has checked
	// failing is set while the sim makes data/ listings fail: the oracle then trusts no data
	// shard walk, whatever the report says.
	failing bool
}

// simulateCatalog runs one random schedule over a catalog of several tables: one nested in
// another's location, engine-side renames followed by a new table under the old name (which
// iceberg-go puts in the same directory), a table of a catalog Tidemark does not know living in
// a known table's location, drops, retired tables registered again during their grace period,
// reads (some posted late, after an approval), rejections, and a person who approves nearly
// everything the bot proposes. After every step: every table of either catalog, and every
// table registered again, loads and has every file its retained snapshots reference; no
// deleted file was younger than the threshold.
func simulateCatalog(t *testing.T, seed, sched uint64, n int) catStats {
	s := newCatSim(t, seed, sched)
	for step := range n {
		before := s.mtimes()
		ops := []int{0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 7, 7, 8, 8, 8, 9, 10, 11, 12, 13, 13, 14}
		executed := s.do(ops[s.rng.IntN(len(ops))], step)
		s.checkStep(before, executed)
		s.st.steps++
	}
	s.checkRows()
	if testing.Verbose() {
		s.logProposals()
	}
	return s.st
}

// newCatSim opens the schedule's store with db.events, a table that opts into snapshot expiry
// and one nested in db.events' location, and two executors: one that crashes or stalls on cue,
// and a second replica's.
func newCatSim(t *testing.T, seed, sched uint64) *catSim {
	s := &catSim{t: t, seed: seed, sched: sched, rng: rand.New(rand.NewPCG(seed, sched^0x5eed))}
	s.db = storagetest.Open(t, "sqlite")
	s.e = newEnv(t, s.db, cleanup.WithFault(func(string) error {
		s.calls++
		if s.crashAt > 0 && s.calls == s.crashAt {
			return errors.New("killed")
		}
		if s.pauseAt > 0 && s.calls == s.pauseAt {
			// This executor stalls past its lease; the other replica's executor takes over
			// meanwhile, and this one must notice when it wakes.
			s.pauseAt = 0
			s.e.clock.Add(cleanup.DefaultLeaseTTL + time.Second)
			if _, err := s.second.Execute(s.e.ctx, uuid.Nil, nil); err != nil {
				return fmt.Errorf("the other executor: %w", err)
			}
		}
		return nil
	}))
	e := s.e
	// A second replica over the same database, executing now and then at the same time.
	s.second = mustCleanup(t, s.db, e.cat, e.tables, cleanup.WithClock(e.clock.Now),
		cleanup.WithUsage(e.usage, nil), cleanup.WithHolder("second-replica"))
	s.log = []string{}
	s.ctx = e.ctx
	events, err := e.lake.Cat.LoadTable(s.ctx, table.Identifier{"db", "events"})
	if err != nil {
		s.fail("load: %v", err)
	}
	// A table that opts into snapshot expiry, and one nested in db.events' location.
	t0 := e.lake.Create("db.t0", nil, icecat.WithProperties(map[string]string{
		cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "2", cleanup.PropertySnapshotMaxAge: "1h"}))
	e.lake.Append(t0, tablestest.Rows(0, 2, time.Now()))
	nested := e.lake.Create("db.nested", nil, icecat.WithLocation(events.Location()+"/nested"))
	e.lake.Append(nested, tablestest.Rows(0, 2, time.Now()))
	if _, err := e.tables.Sync(s.ctx, nil); err != nil {
		s.fail("sync: %v", err)
	}
	s.restored = map[uuid.UUID]bool{}
	s.adopted = map[string]bool{}
	s.leftovers = map[string]*leftover{}
	s.retired = map[uuid.UUID]bool{}
	return s
}

// fail stops the schedule, naming the seed and the last steps that led here.
func (s *catSim) fail(format string, args ...any) {
	s.t.Helper()
	if len(s.log) > 40 {
		s.log = append([]string{"..."}, s.log[len(s.log)-40:]...)
	}
	s.t.Fatalf("catalog schedule %d (seed %d), after steps %v: %s", s.sched, s.seed, s.log, fmt.Sprintf(format, args...))
}

// observeWalks records, for every leftover unchanged since the oracle learnt of it, that the
// complete walks of r saw it.
func (s *catSim) observeWalks(r cleanup.Report) {
	complete := map[string]bool{}
	for _, sh := range r.Shards {
		complete[sh.Shard] = sh.Outcome == "complete" && !(s.failing && strings.HasPrefix(sh.Shard, "data"))
	}
	for p, l := range s.leftovers {
		if sh := shardOf(r.Location, p); sh != "" && complete[sh] {
			if info, err := os.Stat(p); err == nil && info.ModTime().Equal(l.mtime) {
				l.seen = append(l.seen, r.StartedAt)
			}
		}
	}
}

// lakeTables lists the tables of the engine's catalog.
func (s *catSim) lakeTables() []table.Identifier {
	var out []table.Identifier
	for id, err := range s.e.lake.Cat.ListTables(s.ctx, table.Identifier{"db"}) {
		if err != nil {
			s.fail("list: %v", err)
		}
		out = append(out, id)
	}
	return out
}

// pick is a random table of the engine's catalog, nil if there is none.
func (s *catSim) pick() table.Identifier {
	ts := s.lakeTables()
	if len(ts) == 0 {
		return nil
	}
	return ts[s.rng.IntN(len(ts))]
}

// mtimes is what is in the warehouse now, so a step's deletions show as files gone since.
func (s *catSim) mtimes() map[string]time.Time {
	out := map[string]time.Time{}
	for _, root := range []string{s.e.lake.Warehouse} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					out[p] = info.ModTime()
				}
			}
			return nil
		})
	}
	return out
}

// check fails unless the table loaded and has every file its retained snapshots reference.
func (s *catSim) check(where string, tbl *table.Table, err error) {
	s.t.Helper()
	if err != nil {
		s.fail("%s does not load: %v", where, err)
	}
	if err := s.e.lake.Missing(tbl); err != nil {
		s.fail("%s lost a file it references: %v", where, err)
	}
}

// do runs the step's operation op and says whether the executor ran.
func (s *catSim) do(op, step int) (executed bool) {
	switch op {
	case 0: // a write
		s.write(step)
	case 1: // a crashed job's leftover, old; named to be listed first, so a walk that fails
		// after its first entry has seen it
		s.writeLeftover(step)
	case 2: // scheduled scans of every known live table, an hour or two after the last ones
		// (and often right after a sync); a shard failing now and then
		s.scanAll()
	case 3: // catalog sync
		if _, err := s.e.tables.Sync(s.ctx, nil); err != nil {
			s.fail("sync: %v", err)
		}
		s.log = append(s.log, "sync")
	case 4: // the bot proposes; a person approves nearly everything, rejects the rest
		s.proposeAndDecide()
	case 5: // the executor, crashing now and then
		s.execute()
		executed = true
	case 6: // an engine-side rename, then often a new table under the old name
		s.rename(step)
	case 7: // a read, now or posted late (up to three days after it happened)
		s.read(step)
	case 8: // time passes
		d := time.Duration(1+s.rng.IntN(30)) * time.Hour
		if s.rng.IntN(8) == 0 {
			d = time.Duration(20+s.rng.IntN(80)) * 24 * time.Hour
		}
		s.e.clock.Add(d)
		s.log = append(s.log, "time +"+d.String())
	case 9: // a retired table registered again during its grace period
		s.reRegister()
	case 10: // a table of a catalog Tidemark does not know moves into a known table's location
		s.strangerMovesIn()
	case 11: // a drop in the engine, without purge
		if ts := s.lakeTables(); len(ts) > 2 {
			id := ts[s.rng.IntN(len(ts))]
			if err := s.e.lake.Cat.DropTable(s.ctx, id); err != nil {
				s.fail("drop: %v", err)
			}
			s.log = append(s.log, "drop "+strings.Join(id, "."))
		}
	case 13: // a slow writer commits a file it wrote long ago: a leftover becomes referenced,
		// by its own table or by one sharing the directory (data before metadata)
		s.adopt()
	case 14: // a job rewrites a leftover in place (same size, written now)
		for p := range s.leftovers {
			now := s.e.clock.Now()
			if err := os.Chtimes(p, now, now); err == nil {
				info, _ := os.Stat(p)
				s.leftovers[p] = &leftover{mtime: info.ModTime()}
				s.log = append(s.log, "rewrite a leftover")
			}
			break
		}
	case 12: // the stranger writes
		if s.foreignLake != nil {
			ft, err := s.foreignLake.Cat.LoadTable(s.ctx, s.foreignIdent)
			s.check("the stranger", ft, err)
			s.foreignLake.Append(ft, tablestest.Rows(step, 1, time.Now()))
			s.log = append(s.log, "stranger append")
		}
	}
	return executed
}

// write appends to a random table.
func (s *catSim) write(step int) {
	if id := s.pick(); id != nil {
		tbl, err := s.e.lake.Cat.LoadTable(s.ctx, id)
		if err != nil {
			s.fail("load %v: %v", id, err)
		}
		s.e.lake.Append(tbl, tablestest.Rows(step*10, 1+s.rng.IntN(2), time.Now()))
		s.log = append(s.log, "append "+strings.Join(id, "."))
	}
}

// writeLeftover leaves an old file no table references in a random table's data directory, for
// the oracle of two passes to follow.
func (s *catSim) writeLeftover(step int) {
	if id := s.pick(); id != nil {
		tbl, _ := s.e.lake.Cat.LoadTable(s.ctx, id)
		p := s.e.lake.WriteFile(tbl, fmt.Sprintf("data/0000-leftover-%d.parquet", step), 50, s.e.clock.Now().Add(-time.Duration(80+s.rng.IntN(200))*time.Hour))
		info, _ := os.Stat(p)
		s.leftovers[p] = &leftover{mtime: info.ModTime()}
		s.log = append(s.log, "leftover "+strings.Join(id, "."))
	}
}

// scanAll is a scheduled round of scans of every known live table, its walks shown to the oracle.
func (s *catSim) scanAll() {
	e := s.e
	if s.rng.IntN(2) > 0 { // or right after the last ones
		e.clock.Add(time.Hour + time.Duration(s.rng.IntN(60))*time.Minute)
	}
	if s.rng.IntN(2) == 0 {
		if _, err := e.tables.Sync(s.ctx, nil); err != nil {
			s.fail("sync: %v", err)
		}
	}
	if s.rng.IntN(6) == 0 {
		e.list.set("/data", 1, false)
		s.failing = true
	}
	ts, _, err := e.tables.List(s.ctx, uuid.Nil, 100)
	if err != nil {
		s.fail("list: %v", err)
	}
	confirmed := 0
	for _, tb := range ts {
		if tb.GoneAt != nil {
			continue
		}
		r, err := e.svc.Scan(s.ctx, tb.AssetID, cleanup.ScanOptions{})
		if err != nil {
			s.st.scanErrors++ // a table dropped in its catalog and not yet synced, for one
			if testing.Verbose() {
				s.t.Logf("scan error: %v", err)
			}
			continue
		}
		s.observeWalks(r)
		confirmed += int(r.Confirmed)
		if len(r.Foreign) > 0 {
			s.st.foreign++
		}
	}
	e.list.set("", 0, false)
	s.failing = false
	s.log = append(s.log, fmt.Sprintf("scan(%d confirmed)", confirmed))
}

// proposeAndDecide has the bot propose; a person leaves some proposals undecided, approves
// most of the rest and rejects the others.
func (s *catSim) proposeAndDecide() {
	e := s.e
	if _, err := e.svc.Propose(s.ctx); err != nil {
		s.fail("propose: %v", err)
	}
	for _, p := range e.proposals("", "open") {
		if !p.Executable || s.rng.IntN(2) == 0 {
			continue // undecided for now: the bot may withdraw it
		}
		if s.rng.IntN(5) > 0 {
			if _, err := e.svc.Approve(e.person("alice"), p.ID, ""); err != nil {
				s.fail("approve: %v", err)
			}
			s.st.approved++
		} else {
			if _, err := e.svc.Reject(e.person("bob"), p.ID, "not now"); err != nil {
				s.fail("reject: %v", err)
			}
			s.st.rejected++
		}
	}
	s.log = append(s.log, "propose+decide")
}

// execute runs the executor, set now and then to crash or to stall past its lease, and half
// the time the second replica's executor beside it.
func (s *catSim) execute() {
	s.calls, s.crashAt, s.pauseAt = 0, 0, 0
	switch s.rng.IntN(6) {
	case 0, 1:
		s.crashAt = 1 + s.rng.IntN(3)
	case 2, 3:
		s.pauseAt = 1 + s.rng.IntN(3)
	}
	// Half the time (when this one does not stall) a second replica's executor runs at the
	// same moment.
	var r2 cleanup.ExecuteReport
	var err2 error
	var wg sync.WaitGroup
	if s.pauseAt == 0 && s.rng.IntN(2) == 0 {
		wg.Add(1)
		go func() { defer wg.Done(); r2, err2 = s.second.Execute(s.ctx, uuid.Nil, nil) }()
	}
	r, err := s.e.svc.Execute(s.ctx, uuid.Nil, nil)
	wg.Wait()
	if err != nil && !strings.Contains(err.Error(), "injected crash") {
		s.fail("execute: %v", err)
	}
	if err2 != nil {
		s.fail("second executor: %v", err2)
	}
	r.Deleted += r2.Deleted
	r.Executed += r2.Executed
	r.Stopped += r2.Stopped
	s.st.busy += r.Busy + r2.Busy
	s.st.lost += r.Lost
	s.crashAt, s.pauseAt = 0, 0
	s.st.executed += r.Executed
	s.st.stopped += r.Stopped
	s.log = append(s.log, fmt.Sprintf("execute(%d deleted, %d stopped)", r.Deleted, r.Stopped))
}

// rename renames a random table in the engine, and often creates a new one under the old name.
func (s *catSim) rename(step int) {
	if id := s.pick(); id != nil {
		s.seq++
		to := table.Identifier{"db", fmt.Sprintf("r%d", s.seq)}
		if _, err := s.e.lake.Cat.RenameTable(s.ctx, id, to); err != nil {
			s.fail("rename: %v", err)
		}
		s.st.renames++
		s.log = append(s.log, "rename "+strings.Join(id, ".")+" to "+strings.Join(to, "."))
		if s.rng.IntN(3) > 0 {
			s.e.lake.Append(s.e.lake.Create(strings.Join(id, "."), nil), tablestest.Rows(step, 1, time.Now()))
			s.st.recreated++
			s.log = append(s.log, "recreate "+strings.Join(id, "."))
		}
	}
}

// read records a read of a random table, now or up to three days ago.
func (s *catSim) read(step int) {
	if id := s.pick(); id != nil {
		at := s.e.clock.Now()
		if s.rng.IntN(2) == 0 {
			at = at.Add(-time.Duration(s.rng.IntN(72)) * time.Hour)
		}
		// The name as of the read's time may be another; the engine's current one is what a
		// query log holds for a recent read, and usage resolves it by time.
		_, err := s.e.usage.Record(s.ctx, []usage.Record{{Namespace: "iceberg://lake", Name: strings.Join(id, "."), Kind: "read",
			Actor: "bob", At: at, QueryID: fmt.Sprintf("q-%d-%d", s.sched, step), Source: "trino"}})
		if err != nil {
			s.fail("read: %v", err)
		}
		s.log = append(s.log, "read "+strings.Join(id, "."))
	}
}

// reRegister registers again the first table a retirement in progress has retired.
func (s *catSim) reRegister() {
	for _, p := range s.e.proposals(cleanup.KindUnusedAsset, "executing") {
		tb, err := s.e.tables.Get(s.ctx, p.AssetID)
		if err != nil || tb.GoneAt == nil {
			continue
		}
		if _, _, err := s.e.tables.Register(s.ctx, tables.RegisterInput{MetadataLocation: tb.MetadataLocation}); err == nil {
			s.restored[p.AssetID] = true
			s.st.restored++
			s.log = append(s.log, "re-register")
		}
		break
	}
}

// strangerMovesIn, once a schedule at most, creates a table of another catalog in a random
// known table's location.
func (s *catSim) strangerMovesIn() {
	if s.foreignLake == nil && s.rng.IntN(3) == 0 {
		if id := s.pick(); id != nil {
			host, _ := s.e.lake.Cat.LoadTable(s.ctx, id)
			dir := s.t.TempDir()
			s.foreignLake = tablestest.NewLakeOn(s.t, dir, "sqlite", "file:"+filepath.Join(dir, "foreign.db")+"?_pragma=busy_timeout(5000)")
			s.foreignIdent = table.Identifier{"db", "stranger"}
			ft := s.foreignLake.Create("db.stranger", nil, icecat.WithLocation(host.Location()))
			s.foreignLake.Append(ft, tablestest.Rows(0, 2, time.Now()))
			s.log = append(s.log, "stranger in "+strings.Join(id, "."))
		}
	}
}

// adopt commits one of the leftovers in a random table's data directory to that table.
func (s *catSim) adopt() {
	if id := s.pick(); id != nil {
		tbl, _ := s.e.lake.Cat.LoadTable(s.ctx, id)
		matches, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "0000-leftover-*.parquet"))
		if len(matches) > 0 {
			f := matches[s.rng.IntN(len(matches))]
			s.e.lake.AddFiles(tbl, "file://"+f)
			delete(s.leftovers, f) // referenced now: the Missing invariant guards it
			s.adopted[tbl.Metadata().TableUUID().String()] = true
			s.st.adopted++
			s.log = append(s.log, "adopt into "+strings.Join(id, "."))
		}
	}
}

// checkStep checks the invariants after a step: no file deleted since before was young or not
// seen by two passes far enough apart, no decision was overridden, and every table of either
// catalog and every one registered again loads with all the files it references.
func (s *catSim) checkStep(before map[string]time.Time, executed bool) {
	e := s.e
	for _, p := range deletedSince(before, s.mtimes(), e.clock.Now(), s.fail) {
		s.st.deleted++
		if l := s.leftovers[p]; l != nil {
			if !l.twoMoments() {
				s.fail("deleted %s, which complete walks saw only at %v: not two passes at least %s apart", p, l.seen, cleanup.DefaultMinGap)
			}
			delete(s.leftovers, p)
		}
	}
	decisionsHold(s.t, e, s.db, executed, s.retired, s.fail)
	for _, id := range s.lakeTables() {
		tbl, err := e.lake.Cat.LoadTable(s.ctx, id)
		s.check(strings.Join(id, "."), tbl, err)
	}
	if s.foreignLake != nil {
		ft, err := s.foreignLake.Cat.LoadTable(s.ctx, s.foreignIdent)
		s.check("the stranger", ft, err)
	}
	for id := range s.restored {
		tb, err := e.tables.Get(s.ctx, id)
		if err != nil || tb.GoneAt != nil || tb.Connection != "" {
			continue // retired again since, by a later approval
		}
		tbl, err := table.NewFromLocation(s.ctx, table.Identifier{"restored"}, tb.MetadataLocation, icebergio.LoadFSFunc(nil, tb.MetadataLocation), nil)
		s.check("re-registered "+tb.MetadataLocation, tbl, err)
	}
}

// checkRows checks at the end that every table that never adopted a leftover reads back whole.
func (s *catSim) checkRows() {
	for _, id := range s.lakeTables() {
		tbl, err := s.e.lake.Cat.LoadTable(s.ctx, id)
		if err != nil {
			s.fail("load %v: %v", id, err)
		}
		if s.adopted[tbl.Metadata().TableUUID().String()] {
			continue
		}
		if _, err := s.e.lake.Intact(tbl); err != nil {
			s.fail("rows of %v: %v", id, err)
		}
	}
}

// logProposals logs how the schedule's proposals and their files ended, and why any failed or
// stopped.
func (s *catSim) logProposals() {
	states := map[string]int{}
	for _, p := range s.e.proposals("", "") {
		full, _ := s.e.svc.GetProposal(s.ctx, p.ID)
		for k, v := range full.Files {
			states["file:"+k] += v
		}
		states[p.Kind+"/"+p.State]++
		if p.State == "failed" || p.State == "stopped" {
			s.t.Logf("  %s %s: %s", p.Kind, p.State, p.Reason)
		}
	}
	s.t.Logf("catalog schedule %d: %d steps; proposals %v", s.sched, s.st.steps, states)
}

// decisionsHold checks that no person's decision was overridden: only proposals a person
// approved have deleted files; a retirement's metadata step found no read since its evidence
// window began; a proposal reopened within a rejection's quiet period names that rejection and,
// for orphans, lists none of the rejected files.
func decisionsHold(t *testing.T, e *env, db *storage.DB, executedNow bool, retired map[uuid.UUID]bool, fail func(string, ...any)) {
	t.Helper()
	ctx := e.ctx
	ps, err := e.svc.Proposals(ctx, cleanup.ProposalFilter{Limit: 1000})
	if err != nil {
		fail("proposals: %v", err)
	}
	rejected := map[string][]cleanup.Proposal{}
	for _, p := range ps {
		if p.State == "rejected" {
			rejected[p.AssetID.String()+p.Kind] = append(rejected[p.AssetID.String()+p.Kind], p)
		}
	}
	for _, p := range ps {
		files, err := db.Client.ProposalFile.Query().Where(proposalfile.ProposalID(p.ID)).All(ctx)
		if err != nil {
			fail("files: %v", err)
		}
		for _, f := range files {
			if f.State == proposalfile.StateDeleted && (p.DecidedBy == "" || p.State == "open" || p.State == "rejected" || p.State == "withdrawn" || p.State == "expired") {
				fail("proposal %s (%s, %s, decided by %q) deleted %s", p.ID, p.Kind, p.State, p.DecidedBy, f.Path)
			}
		}
		if p.State == "open" {
			for _, r := range rejected[p.AssetID.String()+p.Kind] {
				if r.DecidedAt == nil || e.clock.Now().Sub(*r.DecidedAt) >= cleanup.DefaultPolicy.RejectQuiet || p.CreatedAt.Before(*r.DecidedAt) {
					continue
				}
				if p.Evidence.Reopens == nil {
					fail("proposal %s (%s) reopens rejected %s without saying so", p.ID, p.Kind, r.ID)
				}
				if p.Kind == cleanup.KindOrphanFiles {
					rf, _ := db.Client.ProposalFile.Query().Where(proposalfile.ProposalID(r.ID)).All(ctx)
					for _, a := range rf {
						for _, b := range files {
							if a.Path == b.Path {
								fail("proposal %s proposes %s again, which a person rejected in %s", p.ID, a.Path, r.ID)
							}
						}
					}
				}
			}
		}
		// Only for retirements this step made: a read posted later, for a time before the
		// retirement, is one the retirement could not have seen.
		if executedNow && p.Kind == cleanup.KindUnusedAsset && p.Evidence.From != nil && !retired[p.ID] {
			full, err := e.svc.GetProposal(ctx, p.ID)
			if err != nil {
				fail("proposal: %v", err)
			}
			for _, st := range full.Steps {
				if st.Step != "retire_metadata" {
					continue
				}
				retired[p.ID] = true
				real, err := e.usage.Real(ctx, p.AssetID, *p.Evidence.From, e.clock.Now(), nil)
				if err != nil {
					fail("usage: %v", err)
				}
				if real.Reads > 0 {
					fail("retired asset %s although it was read %d times since %s", p.AssetID, real.Reads, p.Evidence.From)
				}
			}
		}
	}
}
