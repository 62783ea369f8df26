package cleanup_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

var (
	simSchedules = flag.Int("sim.schedules", 8, "random schedules the safety simulation runs (CI uses the default; try 500)")
	simSteps     = flag.Int("sim.steps", 50, "steps per schedule")
	simSeed      = flag.Uint64("sim.seed", 20261129, "seed of the safety simulation")
)

// TestSafetySimulation runs random schedules of writes, slow commits, leftover files, scans
// with failing shards, renames, usage, proposals, approvals, executions with crashes and clock
// jumps against a real table, and after every step checks the invariants: every file a
// retained snapshot references exists (so nothing referenced was deleted and no dangling
// reference was created), no deleted file was younger than the threshold or part of a write in
// flight, and no reference check found a dangling reference.
//
// Each schedule also runs the catalog simulation (simulateCatalog): several tables sharing and
// nesting locations, renames with a new table under the old name, a table Tidemark does not
// know, retirements undone during their grace period, late reads and rejections.
func TestSafetySimulation(t *testing.T) {
	var total simStats
	var cat catStats
	var mu sync.Mutex // guards total and cat
	// Schedules are independent (each its own store, table and clock), so they run side by side:
	// under -race the simulation is the package's longest test and would leave a core idle.
	t.Run("schedules", func(t *testing.T) {
		for sched := range *simSchedules {
			t.Run(fmt.Sprint(sched), func(t *testing.T) {
				t.Parallel()
				st := simulate(t, *simSeed, uint64(sched), *simSteps)
				if t.Failed() {
					return
				}
				c := simulateCatalog(t, *simSeed, uint64(sched), *simSteps)
				mu.Lock()
				defer mu.Unlock()
				total.add(st)
				cat.add(c)
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("safety simulation: %d schedules, %d steps, seed %d: %d orphans confirmed, %d files deleted, %d executor crashes; no invariant broken",
		*simSchedules, total.steps, *simSeed, total.confirmed, total.deleted, total.crashes)
	t.Logf("catalog simulation: %d schedules, %d steps: %d files deleted, %d proposals approved, %d rejected, %d executed, %d stopped on re-verification, "+
		"%d renames (%d with a new table under the old name), %d retirements undone, %d leftovers committed late, %d scans that met a foreign table, %d scans that failed, "+
		"%d proposals left to the other executor running at the same time, %d executions that lost their lease to it; no invariant broken",
		*simSchedules, cat.steps, cat.deleted, cat.approved, cat.rejected, cat.executed, cat.stopped, cat.renames, cat.recreated, cat.restored, cat.adopted, cat.foreign, cat.scanErrors, cat.busy, cat.lost)
	if *simSchedules >= 4 && (total.deleted == 0 || cat.deleted == 0 || cat.approved == 0) {
		t.Fatal("the simulation never deleted anything: it tests nothing")
	}
}

type simStats struct{ steps, deleted, crashes, confirmed int }

func (s *simStats) add(o simStats) {
	s.steps += o.steps
	s.deleted += o.deleted
	s.crashes += o.crashes
	s.confirmed += o.confirmed
}

// slowFile is a data file a slow writer has written and not yet committed.
type slowFile struct {
	path    string
	written time.Time
}

// safetySim is one schedule of the safety simulation: the state its steps share.
type safetySim struct {
	t           *testing.T
	seed, sched uint64
	rng         *rand.Rand
	e           *env
	ident       table.Identifier
	inFlight    []slowFile // written, not yet committed: a slow writer
	log         []string
	st          simStats
	// The executor's fault hook fails its crashAt-th call since calls was last reset.
	crashAt, calls int
}

// simulate runs one random schedule against a table of its own, checking after every step.
func simulate(t *testing.T, seed, sched uint64, n int) simStats {
	s := newSafetySim(t, seed, sched)
	for step := range n {
		before := s.mtimes()
		// Weighted: scans, proposals and executions often enough that files get deleted.
		ops := []int{0, 0, 2, 3, 4, 4, 5, 5, 5, 5, 6, 7, 8, 8, 8, 9, 9, 9, 10, 11, 11}
		op := ops[s.rng.IntN(len(ops))]
		s.do(op, step)
		s.checkInvariants(before)
		s.st.steps++
	}
	if testing.Verbose() {
		states := map[string]int{}
		for _, p := range s.e.proposals("", "") {
			states[p.Kind+"/"+p.State+"/"+p.Reason]++
		}
		t.Logf("schedule %d: %v; proposals %v", sched, s.log, states)
	}
	return s.st
}

// newSafetySim opens the schedule's own store and table, with an executor that crashes on cue.
func newSafetySim(t *testing.T, seed, sched uint64) *safetySim {
	s := &safetySim{t: t, seed: seed, sched: sched, rng: rand.New(rand.NewPCG(seed, sched))}
	db := storagetest.Open(t, "sqlite")
	s.e = newEnv(t, db, cleanup.WithFault(func(point string) error {
		if s.calls++; s.crashAt > 0 && s.calls == s.crashAt {
			return errors.New("killed")
		}
		return nil
	}))
	s.ident = table.Identifier{"db", "events"}
	s.log = []string{}
	return s
}

// fail stops the schedule, naming the seed and the steps that led here so it can be replayed.
func (s *safetySim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("schedule %d (seed %d), after steps %v: %s", s.sched, s.seed, s.log, fmt.Sprintf(format, args...))
}

// commitPending is the slow writer committing the k-th file it wrote.
func (s *safetySim) commitPending(k int) {
	p := s.inFlight[k]
	s.e.tbl = s.e.lake.AddFiles(s.e.tbl, "file://"+p.path)
	s.inFlight = append(s.inFlight[:k], s.inFlight[k+1:]...)
}

// mtimes is what is on disk now, so a step's deletions show as files gone since before it.
func (s *safetySim) mtimes() map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range s.e.lake.DiskFiles() {
		if st, err := os.Stat(p); err == nil {
			out[p] = st.ModTime()
		}
	}
	return out
}

// do runs the step's operation op.
func (s *safetySim) do(op, step int) {
	e := s.e
	switch op {
	case 0, 1: // a normal write: data and metadata committed together
		e.tbl = e.lake.Append(e.tbl, tablestest.Rows(step*10, 1+s.rng.IntN(3), time.Now()))
		s.log = append(s.log, "append")
	case 2: // a slow writer writes its data file now and commits it later
		p := e.lake.WriteFile(e.tbl, fmt.Sprintf("data/slow-%d-%d.parquet", s.sched, step), 100, e.clock.Now())
		s.inFlight = append(s.inFlight, slowFile{p, e.clock.Now()})
		s.log = append(s.log, "slow-write")
	case 3: // the slow writer commits
		if len(s.inFlight) > 0 {
			s.commitPending(s.rng.IntN(len(s.inFlight)))
			s.log = append(s.log, "slow-commit")
		}
	case 4: // a crashed job's leftover: never committed, of some age
		age := time.Duration(s.rng.IntN(200)) * time.Hour
		e.lake.WriteFile(e.tbl, fmt.Sprintf("data/leftover-%d-%d.parquet", s.sched, step), 50+s.rng.IntN(50), e.clock.Now().Add(-age))
		s.log = append(s.log, fmt.Sprintf("leftover(%s)", age))
	case 5, 6: // a scan, its data shard failing sometimes
		s.scan()
	case 7: // rename in the Iceberg catalog, then sync
		s.rename(step)
	case 8: // the bot proposes; a person approves what it proposed about files
		s.proposeAndApprove()
	case 9: // the executor runs, and crashes now and then
		s.execute()
	case 10: // usage
		recordRead(s.t, e, strings.Join(s.ident, "."), e.clock.Now(), fmt.Sprintf("q-%d-%d", s.sched, step))
		s.log = append(s.log, "read")
	case 11: // time passes; the slow writer never takes longer than the threshold allows
		e.clock.Add(time.Duration(1+s.rng.IntN(30*60)) * time.Minute)
		for k := len(s.inFlight) - 1; k >= 0; k-- {
			if e.clock.Now().Sub(s.inFlight[k].written) > 48*time.Hour {
				s.commitPending(k)
			}
		}
		s.log = append(s.log, "time")
	}
}

// scan scans the table, its listings failing sometimes, and then asks the oracle whether every
// file a retained snapshot references is still there.
func (s *safetySim) scan() {
	e := s.e
	if s.rng.IntN(8) == 0 {
		e.list.set("/data", 1, s.rng.IntN(2) == 0)
	} else {
		e.list.set("", 0, s.rng.IntN(3) == 0)
	}
	r, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{})
	e.list.set("", 0, false)
	if err != nil {
		s.fail("scan: %v", err)
	}
	// The oracle: every file any retained snapshot references is still there.
	rc, err := e.svc.CheckRefs(e.ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond})
	if err != nil || rc.DanglingCount != 0 {
		s.fail("the reference check found %d dangling references (%v): %+v", rc.DanglingCount, err, rc.Dangling)
	}
	s.st.confirmed += int(r.Confirmed)
	s.log = append(s.log, fmt.Sprintf("scan(%d confirmed)", r.Confirmed))
}

// rename renames the table in the Iceberg catalog behind Tidemark's back, then syncs.
func (s *safetySim) rename(step int) {
	e := s.e
	to := table.Identifier{"db", fmt.Sprintf("events_%d", step)}
	if _, err := e.lake.Cat.RenameTable(e.ctx, s.ident, to); err != nil {
		s.fail("rename: %v", err)
	}
	s.ident = to
	if _, err := e.tables.Sync(e.ctx, nil); err != nil {
		s.fail("sync: %v", err)
	}
	if e.tbl, _ = e.lake.Cat.LoadTable(e.ctx, s.ident); e.tbl == nil {
		s.fail("load after rename")
	}
	s.log = append(s.log, "rename")
}

// proposeAndApprove has the bot propose and a person approve most of its orphan proposals.
func (s *safetySim) proposeAndApprove() {
	e := s.e
	if _, err := e.svc.Propose(e.ctx); err != nil {
		s.fail("propose: %v", err)
	}
	for _, p := range e.proposals(cleanup.KindOrphanFiles, "open") {
		if s.rng.IntN(3) > 0 {
			if _, err := e.svc.Approve(e.person("alice"), p.ID, ""); err != nil {
				s.fail("approve: %v", err)
			}
		}
	}
	s.log = append(s.log, "propose+approve")
}

// execute runs the executor, half the time set to crash at its first or second fault point.
func (s *safetySim) execute() {
	s.calls, s.crashAt = 0, 0
	if s.rng.IntN(2) == 0 {
		s.crashAt = 1 + s.rng.IntN(2)
	}
	_, err := s.e.svc.Execute(s.e.ctx, uuid.Nil, nil)
	if err != nil && !strings.Contains(err.Error(), "injected crash") {
		s.fail("execute: %v", err)
	}
	if err != nil {
		s.st.crashes++
	}
	s.crashAt = 0
	s.log = append(s.log, "execute")
}

// deletedSince returns the files in before (path to modification time) that after no longer
// holds, failing on any that was deleted younger than the age threshold at now. Both
// simulations check every step this way.
func deletedSince(before, after map[string]time.Time, now time.Time, fail func(string, ...any)) []string {
	var gone []string
	for p, mt := range before {
		if _, ok := after[p]; ok {
			continue
		}
		gone = append(gone, p)
		if age := now.Sub(mt); age < cleanup.DefaultAgeThreshold {
			fail("deleted %s at age %s, younger than the threshold", p, age)
		}
	}
	return gone
}

// checkInvariants checks, after a step, that no file deleted since before (the mtimes before
// the step) was young or a slow writer's, and that every retained snapshot's files exist.
func (s *safetySim) checkInvariants(before map[string]time.Time) {
	e := s.e
	after := s.mtimes()
	for _, p := range deletedSince(before, after, e.clock.Now(), s.fail) {
		s.st.deleted++
		for _, f := range s.inFlight {
			if f.path == p {
				s.fail("deleted %s, a slow writer's file not committed yet", p)
			}
		}
	}
	cur, err := e.lake.Cat.LoadTable(e.ctx, s.ident)
	if err != nil {
		s.fail("load: %v", err)
	}
	for _, sn := range cur.Metadata().Snapshots() {
		for p := range e.lake.Files(cur, sn) {
			if _, ok := after[strings.TrimPrefix(p, "file://")]; !ok {
				s.fail("snapshot %d references %s, which is gone", sn.SnapshotID, p)
			}
		}
	}
}
