package restcatalog_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

var (
	servedSchedules = flag.Int("served-sim.schedules", servedSimDefault, "random schedules TestServedSafetySimulation runs a store (default 4, 2 under -race; the issue's figure: 500)")
	servedSteps     = flag.Int("served-sim.steps", 40, "steps per schedule")
	servedSeed      = flag.Uint64("served-sim.seed", 20261203, "seed of the served-table safety simulation")
)

// TestServedSafetySimulation runs random schedules against a table engines commit through
// Tidemark: appends, writers that lose the race (409, leaving what they wrote), writers that
// lose it and retry (their staged files then committed), commits interrupted before the swap
// and settled as abandoned, files nobody recorded, inventory passes, walks, proposals approved
// and executed, and clock jumps. After every step, every file any retained snapshot references
// is on disk and every committed row reads back: nothing live was deleted.
func TestServedSafetySimulation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var st servedStats
		sim := newServedSim(t, db)
		for sched := range *servedSchedules {
			sim.run(t, *servedSeed, uint64(sched), *servedSteps, &st)
			if t.Failed() {
				return
			}
		}
		t.Logf("served-table simulation: %d schedules, %d steps: %d commits rejected, %d retried after a 409, %d interrupted and abandoned, %d inventory passes confirming %d files, %d walks, %d files deleted; no live file deleted",
			*servedSchedules, st.steps, st.rejected, st.retried, st.abandoned, st.inventory, st.invConfirmed, st.walks, st.deleted)
		if *servedSchedules >= 2 && (st.deleted == 0 || st.invConfirmed == 0) {
			t.Fatal("the simulation never deleted a leftover the inventory settled: it tests nothing")
		}
	})
}

type servedStats struct {
	steps, rejected, retried, abandoned, inventory, walks, deleted int
	invConfirmed                                                   int64
}

// servedSim is one Tidemark the schedules share (each writes a table of its own), with a
// movable clock for the cleanup bot and a switch that stops the next commit before its swap.
type servedSim struct {
	s     *server
	clock *shiftClock
	crash *atomic.Bool
}

func newServedSim(t *testing.T, db *storage.DB) *servedSim {
	sim := &servedSim{clock: &shiftClock{}, crash: &atomic.Bool{}}
	sim.s = newServerWith(t, db, func(c *app.Config, _ *handlers.Config) {
		c.Cleanup = append(c.Cleanup, cleanup.WithClock(sim.clock.Now))
		c.Tables = append(c.Tables, tables.WithFaults(tables.Faults{BeforeSwap: func(context.Context, []string) error {
			if sim.crash.CompareAndSwap(true, false) {
				return errors.New("injected: the process stops before the swap")
			}
			return nil
		}}))
	})
	if err := sim.s.App.Lineage.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sim
}

func (sim *servedSim) run(t *testing.T, seed, sched uint64, steps int, st *servedStats) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, sched))
	s, clock, crash := sim.s, sim.clock, sim.crash
	cat := s.client(t)
	name := fmt.Sprintf("t%d", sched)
	ident := table.Identifier{"sim", name}
	tbl := create(t, cat, "sim", name)
	id := assetOf(t, s, tbl)
	rows := int64(0)
	stale := tbl
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("schedule %d (seed %d), after %s: %s", sched, seed, strings.Join(log, " "), fmt.Sprintf(format, args...))
	}
	appendRows := func(on *table.Table, n int) (*table.Table, error) {
		return on.Append(ctx, s.lake.Record(on, tablestest.Rows(int(rows), n, time.Now())), nil)
	}
	setRetries := func(on bool) {
		v := "0"
		if on {
			v = "1000"
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: v, table.CommitMinRetryWaitMsKey: "1", table.CommitMaxRetryWaitMsKey: "5"}); err != nil {
			fail("set properties: %v", err)
		}
		var err error
		if tbl, err = tx.Commit(ctx); err != nil {
			fail("set properties: %v", err)
		}
	}
	for step := range steps {
		st.steps++
		switch op := rng.IntN(10); op {
		case 0, 1: // an append
			if rng.IntN(3) == 0 {
				stale = tbl // a writer that reads now and commits later
			}
			n := 1 + rng.IntN(3)
			next, err := appendRows(tbl, n)
			if err != nil {
				fail("append: %v", err)
			}
			tbl, rows = next, rows+int64(n)
			log = append(log, "append")
		case 2: // a writer that read the table earlier: 409, or a retry when the table says so
			if stale.MetadataLocation() == tbl.MetadataLocation() {
				continue
			}
			retry := rng.IntN(2) == 0
			setRetries(retry)
			if retry {
				// A writer that reads the table with retries on, then loses the race: it
				// refreshes and replays, so what its first attempt staged is committed.
				var err error
				if stale, err = cat.LoadTable(ctx, ident); err != nil {
					fail("load: %v", err)
				}
				if tbl, err = appendRows(tbl, 1); err != nil {
					fail("append: %v", err)
				}
				rows++
			}
			// Whether it retries follows the properties the writer read, as in iceberg-go.
			if next, err := appendRows(stale, 2); err == nil {
				tbl, stale, rows, st.retried = next, next, rows+2, st.retried+1
				log = append(log, "retried")
			} else {
				st.rejected++
				log = append(log, "rejected")
			}
			setRetries(false)
		case 3: // a commit interrupted before the swap, settled as abandoned later
			crash.Store(true)
			if _, err := appendRows(tbl, 1); err == nil {
				fail("an interrupted commit succeeded")
			}
			crash.Store(false)
			if _, err := s.App.Tables.ResolvePending(ctx, 0); err != nil {
				fail("resolve pending: %v", err)
			}
			var err error
			if tbl, err = cat.LoadTable(ctx, ident); err != nil {
				fail("load: %v", err)
			}
			st.abandoned++
			log = append(log, "abandoned")
		case 4: // a file nobody recorded
			s.lake.WriteFile(tbl, fmt.Sprintf("data/by-hand-%d.parquet", step), 10, time.Now().Add(-time.Duration(rng.IntN(200))*time.Hour))
			log = append(log, "by-hand")
		case 5: // an inventory pass
			r, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{FromInventory: true})
			if err != nil {
				fail("inventory pass: %v", err)
			}
			st.inventory++
			st.invConfirmed += r.Confirmed
			log = append(log, fmt.Sprintf("inventory(%d)", r.Confirmed))
		case 6: // a walk
			if _, err := s.App.Cleanup.Scan(ctx, id, cleanup.ScanOptions{}); err != nil {
				fail("walk: %v", err)
			}
			st.walks++
			log = append(log, "walk")
		case 7: // the bot proposes, a person approves, the executor deletes
			if _, err := s.App.Cleanup.Propose(ctx); err != nil {
				fail("propose: %v", err)
			}
			ps, err := s.App.Cleanup.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindOrphanFiles, State: "open", Limit: 10})
			if err != nil {
				fail("proposals: %v", err)
			}
			for _, p := range ps {
				if p.AssetID != id {
					continue
				}
				if _, err := s.App.Cleanup.Approve(catalog.WithActor(ctx, "token:alice"), p.ID, ""); err != nil {
					fail("approve: %v", err)
				}
			}
			r, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil)
			if err != nil {
				fail("execute: %v", err)
			}
			st.deleted += int(r.Deleted)
			log = append(log, fmt.Sprintf("execute(%d)", r.Deleted))
		default: // time passes
			d := time.Duration(1+rng.IntN(40)) * time.Hour
			clock.Add(d)
			log = append(log, "+"+d.String())
		}
		loaded, err := cat.LoadTable(ctx, ident)
		if err != nil {
			fail("load: %v", err)
		}
		if err := s.lake.Missing(loaded); err != nil {
			fail("a file the table references is gone: %v", err)
		}
		if n, err := s.lake.Intact(loaded); err != nil || n != rows {
			fail("the table reads %d rows (%v), want %d", n, err, rows)
		}
	}
}
