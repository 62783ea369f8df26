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
	"github.com/tidemark/tidemark/ent/storage/storagetest"
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

func simulate(t *testing.T, seed, sched uint64, n int) simStats {
	var st simStats
	rng := rand.New(rand.NewPCG(seed, sched))
	crashAt, calls := 0, 0
	db := storagetest.Open(t, "sqlite")
	e := newEnv(t, db, cleanup.WithFault(func(point string) error {
		if calls++; crashAt > 0 && calls == crashAt {
			return errors.New("killed")
		}
		return nil
	}))
	ident := table.Identifier{"db", "events"}
	type pending struct {
		path    string
		written time.Time
	}
	var inFlight []pending // written, not yet committed: a slow writer
	log := []string{}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("schedule %d (seed %d), after steps %v: %s", sched, seed, log, fmt.Sprintf(format, args...))
	}
	commitPending := func(k int) {
		p := inFlight[k]
		e.tbl = e.lake.AddFiles(e.tbl, "file://"+p.path)
		inFlight = append(inFlight[:k], inFlight[k+1:]...)
	}
	mtimes := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, p := range e.lake.DiskFiles() {
			if st, err := os.Stat(p); err == nil {
				out[p] = st.ModTime()
			}
		}
		return out
	}
	for step := range n {
		before := mtimes()
		// Weighted: scans, proposals and executions often enough that files get deleted.
		ops := []int{0, 0, 2, 3, 4, 4, 5, 5, 5, 5, 6, 7, 8, 8, 8, 9, 9, 9, 10, 11, 11}
		op := ops[rng.IntN(len(ops))]
		switch op {
		case 0, 1: // a normal write: data and metadata committed together
			e.tbl = e.lake.Append(e.tbl, tablestest.Rows(step*10, 1+rng.IntN(3), time.Now()))
			log = append(log, "append")
		case 2: // a slow writer writes its data file now and commits it later
			p := e.lake.WriteFile(e.tbl, fmt.Sprintf("data/slow-%d-%d.parquet", sched, step), 100, e.clock.Now())
			inFlight = append(inFlight, pending{p, e.clock.Now()})
			log = append(log, "slow-write")
		case 3: // the slow writer commits
			if len(inFlight) > 0 {
				commitPending(rng.IntN(len(inFlight)))
				log = append(log, "slow-commit")
			}
		case 4: // a crashed job's leftover: never committed, of some age
			age := time.Duration(rng.IntN(200)) * time.Hour
			e.lake.WriteFile(e.tbl, fmt.Sprintf("data/leftover-%d-%d.parquet", sched, step), 50+rng.IntN(50), e.clock.Now().Add(-age))
			log = append(log, fmt.Sprintf("leftover(%s)", age))
		case 5, 6: // a scan, its data shard failing sometimes
			if rng.IntN(8) == 0 {
				e.list.set("/data", 1, rng.IntN(2) == 0)
			} else {
				e.list.set("", 0, rng.IntN(3) == 0)
			}
			r, err := e.svc.Scan(e.ctx, e.id, cleanup.ScanOptions{})
			e.list.set("", 0, false)
			if err != nil {
				fail("scan: %v", err)
			}
			// The oracle: every file any retained snapshot references is still there.
			rc, err := e.svc.CheckRefs(e.ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond})
			if err != nil || rc.DanglingCount != 0 {
				fail("the reference check found %d dangling references (%v): %+v", rc.DanglingCount, err, rc.Dangling)
			}
			st.confirmed += int(r.Confirmed)
			log = append(log, fmt.Sprintf("scan(%d confirmed)", r.Confirmed))
		case 7: // rename in the Iceberg catalog, then sync
			to := table.Identifier{"db", fmt.Sprintf("events_%d", step)}
			if _, err := e.lake.Cat.RenameTable(e.ctx, ident, to); err != nil {
				fail("rename: %v", err)
			}
			ident = to
			if _, err := e.tables.Sync(e.ctx, nil); err != nil {
				fail("sync: %v", err)
			}
			if e.tbl, _ = e.lake.Cat.LoadTable(e.ctx, ident); e.tbl == nil {
				fail("load after rename")
			}
			log = append(log, "rename")
		case 8: // the bot proposes; a person approves what it proposed about files
			if _, err := e.svc.Propose(e.ctx); err != nil {
				fail("propose: %v", err)
			}
			for _, p := range e.proposals(cleanup.KindOrphanFiles, "open") {
				if rng.IntN(3) > 0 {
					if _, err := e.svc.Approve(e.person("alice"), p.ID, ""); err != nil {
						fail("approve: %v", err)
					}
				}
			}
			log = append(log, "propose+approve")
		case 9: // the executor runs, and crashes now and then
			calls, crashAt = 0, 0
			if rng.IntN(2) == 0 {
				crashAt = 1 + rng.IntN(2)
			}
			_, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
			if err != nil && !strings.Contains(err.Error(), "injected crash") {
				fail("execute: %v", err)
			}
			if err != nil {
				st.crashes++
			}
			crashAt = 0
			log = append(log, "execute")
		case 10: // usage
			recordRead(t, e, strings.Join(ident, "."), e.clock.Now(), fmt.Sprintf("q-%d-%d", sched, step))
			log = append(log, "read")
		case 11: // time passes; the slow writer never takes longer than the threshold allows
			e.clock.Add(time.Duration(1+rng.IntN(30*60)) * time.Minute)
			for k := len(inFlight) - 1; k >= 0; k-- {
				if e.clock.Now().Sub(inFlight[k].written) > 48*time.Hour {
					commitPending(k)
				}
			}
			log = append(log, "time")
		}
		// Invariants.
		after := mtimes()
		for p, mt := range before {
			if _, ok := after[p]; ok {
				continue
			}
			st.deleted++
			if age := e.clock.Now().Sub(mt); age < cleanup.DefaultAgeThreshold {
				fail("deleted %s at age %s, younger than the threshold", p, age)
			}
			for _, f := range inFlight {
				if f.path == p {
					fail("deleted %s, a slow writer's file not committed yet", p)
				}
			}
		}
		cur, err := e.lake.Cat.LoadTable(e.ctx, ident)
		if err != nil {
			fail("load: %v", err)
		}
		for _, s := range cur.Metadata().Snapshots() {
			for p := range e.lake.Files(cur, s) {
				if _, ok := after[strings.TrimPrefix(p, "file://")]; !ok {
					fail("snapshot %d references %s, which is gone", s.SnapshotID, p)
				}
			}
		}
		st.steps++
	}
	if testing.Verbose() {
		states := map[string]int{}
		for _, p := range e.proposals("", "") {
			states[p.Kind+"/"+p.State+"/"+p.Reason]++
		}
		t.Logf("schedule %d: %v; proposals %v", sched, log, states)
	}
	return st
}
