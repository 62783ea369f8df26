package usage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/usage"
)

// TestBacklogAddsWhatACrashLeft: rollups after commit fail (as a crash between a batch's commit
// and its rollups leaves it, on PostgreSQL); the events stay stored and the batch answers
// accepted. The backlog then adds them exactly once: not before BacklogAge, once when several
// sweeps race, and before any "real usage" answer. SQLite writes rollups in the batch's own
// transaction, so nothing is left behind there.
func TestBacklogAddsWhatACrashLeft(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		var assets []usage.Seen
		for i := range 3 {
			a := e.create(t, "w", fmt.Sprintf("t%d", i))
			assets = append(assets, usage.Seen{ID: a.ID, Namespace: "w", Name: a.Name})
		}
		job := uuid.New()
		e.clock.Set(t0.Add(3 * 24 * time.Hour))
		runs := func(prefix string, n int) []usage.RunUsage {
			var out []usage.RunUsage
			for i := range n {
				out = append(out, usage.RunUsage{RunID: fmt.Sprintf("%s-%d", prefix, i), JobID: job, At: t0.Add(time.Duration(24+i) * time.Hour),
					Actor: fmt.Sprintf("u%d", i%2), Inputs: assets[:2], Outputs: assets[2:]})
			}
			return out
		}
		if err := e.use.FromRuns(ctx, runs("ok", 4)); err != nil {
			t.Fatal(err)
		}
		e.rollupsMatchEvents(t)

		usage.SetRollFault(e.use, func() error { return errors.New("injected: the process stopped after the commit") })
		for b := range 3 {
			if err := e.use.FromRuns(ctx, runs(fmt.Sprintf("lost%d", b), 5)); err != nil {
				t.Fatalf("a batch whose rollups fail after its commit answered %v; its events are stored", err)
			}
		}
		usage.SetRollFault(e.use, nil)
		stored, err := e.db.Client.UsageEvent.Query().Count(ctx)
		if err != nil || stored != 4*3+3*5*3 {
			t.Fatalf("%d events stored (%v), want %d", stored, err, 4*3+3*5*3)
		}
		backlog, err := e.db.Client.UsageBacklog.Query().Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if e.db.Dialect == "sqlite3" {
			if backlog != 0 {
				t.Fatalf("SQLite left %d backlog rows; it adds rollups in the batch's transaction", backlog)
			}
			e.rollupsMatchEvents(t)
			return
		}
		if backlog != 3 {
			t.Fatalf("%d backlog rows after 3 batches whose rollups failed, want 3", backlog)
		}
		s, err := e.use.Series(ctx, assets[0].ID, t0, t0.Add(3*24*time.Hour), usage.Daily)
		if err != nil || s.Reads != 4 {
			t.Fatalf("before the sweep: %d reads (%v), want the 4 rolled up", s.Reads, err)
		}
		if n, err := e.use.RollBacklog(ctx); err != nil || n != 0 {
			t.Fatalf("a sweep before BacklogAge added %d events (%v), want 0: those rollups may still be running", n, err)
		}

		e.clock.Set(t0.Add(3*24*time.Hour + usage.BacklogAge))
		// The sweeps race for one row: a transaction holds the backlog until all four wait on it.
		hold, err := e.db.SQL.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hold.ExecContext(ctx, "SELECT id FROM usage_backlogs FOR UPDATE"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		added := make([]int, 4)
		for i := range added {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if added[i], err = e.use.RollBacklog(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		waitForLockWaits(t, e, len(added))
		if err := hold.Rollback(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if total := added[0] + added[1] + added[2] + added[3]; total != 3*5*3 {
			t.Fatalf("racing sweeps added %v = %d events, want each of the %d once", added, total, 3*5*3)
		}
		e.rollupsMatchEvents(t)

		// A rollup left behind counts in "real usage" without waiting for the usage job.
		usage.SetRollFault(e.use, func() error { return errors.New("injected") })
		if err := e.use.FromRuns(ctx, runs("late", 2)); err != nil {
			t.Fatal(err)
		}
		usage.SetRollFault(e.use, nil)
		e.clock.Set(t0.Add(3*24*time.Hour + 2*usage.BacklogAge))
		real, err := e.use.Real(ctx, assets[0].ID, t0, t0.Add(3*24*time.Hour), nil)
		if err != nil || real.Reads != 4+15+2 {
			t.Fatalf("real usage %d reads (%v), want %d", real.Reads, err, 4+15+2)
		}
		e.rollupsMatchEvents(t)
	})
}

// waitForLockWaits returns once n sessions of e's database wait on a lock (PostgreSQL).
func waitForLockWaits(t *testing.T, e env, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := e.db.SQL.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
	}
	t.Fatalf("fewer than %d sessions came to wait on the held backlog within a minute", n)
}
