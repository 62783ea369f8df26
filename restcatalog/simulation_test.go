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
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
)

var (
	servedSchedules = flag.Int("served-sim.schedules", servedSimDefault, "random schedules TestServedSafetySimulation runs a store (default 4, 2 under -race; the issue's figure: 500)")
	servedSteps     = flag.Int("served-sim.steps", 40, "steps per schedule")
	servedSeed      = flag.Uint64("served-sim.seed", 20261203, "seed of the served-table safety simulation")
)

// TestServedSafetySimulation runs random schedules against a table engines commit through
// Tidemark: a hostile committer with a write token (naming another table's files, pointing its
// data path into another table, encoding '..' into locations, racing creates for one location,
// retrying with one key and reusing it), appends, writers that lose the race (409, leaving what they wrote), writers that
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
		t.Logf("served-table simulation: %d schedules, %d steps: %d commits rejected, %d retried after a 409, %d interrupted and abandoned, %d hostile requests refused, %d inventory passes confirming %d files, %d walks, %d files deleted; no live file deleted",
			*servedSchedules, st.steps, st.rejected, st.retried, st.abandoned, st.hostile, st.inventory, st.invConfirmed, st.walks, st.deleted)
		if *servedSchedules >= 2 && (st.deleted == 0 || st.invConfirmed == 0) {
			t.Fatal("the simulation never deleted a leftover the inventory settled: it tests nothing")
		}
	})
}

type servedStats struct {
	steps, rejected, retried, abandoned, hostile, inventory, walks, deleted int
	invConfirmed                                                            int64
}

// servedSim is one Tidemark the schedules share (each writes a table of its own), with a
// movable clock for the cleanup bot and a switch that stops the next commit before its swap.
type servedSim struct {
	s     *testServer
	clock *shiftClock
	crash *atomic.Bool
	// neighbor is another live table the hostile committer aims at; it must stay whole.
	neighbor *table.Table
}

func newServedSim(t *testing.T, db *storage.DB) *servedSim {
	sim := &servedSim{clock: &shiftClock{}, crash: &atomic.Bool{}}
	sim.s = newServerWith(t, db, func(c *app.Config, _ *server.Config) {
		c.Cleanup = append(c.Cleanup, cleanup.WithClock(sim.clock.Now))
		c.Warehouse = append(c.Warehouse, warehouse.WithFaults(warehouse.Faults{BeforeSwap: func(context.Context, []string) error {
			if sim.crash.CompareAndSwap(true, false) {
				return errors.New("injected: the process stops before the swap")
			}
			return nil
		}}))
	})
	if err := sim.s.App.Lineage.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	sim.neighbor = sim.s.append(t, create(t, sim.s.client(t), "sim", "neighbor"), 0, 3)
	return sim
}

// servedRun is one schedule of the served-table simulation: its table, and the state its
// steps share.
type servedRun struct {
	t           *testing.T
	ctx         context.Context
	seed, sched uint64
	rng         *rand.Rand
	st          *servedStats
	s           *testServer
	clock       *shiftClock
	crash       *atomic.Bool
	cat         icecat.Catalog
	ident       table.Identifier
	neighbor    *table.Table
	tbl         *table.Table
	id          uuid.UUID
	rows        int64        // rows committed: what the table must read back
	stale       *table.Table // the table as a writer read it earlier, to commit later
	log         []string
}

// run runs one random schedule on a table of its own, checking the table after every step.
func (sim *servedSim) run(t *testing.T, seed, sched uint64, steps int, st *servedStats) {
	r := sim.newRun(t, seed, sched, st)
	for step := range steps {
		st.steps++
		if !r.do(r.rng.IntN(11), step) {
			continue // the step did nothing, and is not checked
		}
		r.check()
	}
}

// newRun creates the schedule's own table.
func (sim *servedSim) newRun(t *testing.T, seed, sched uint64, st *servedStats) *servedRun {
	r := &servedRun{t: t, ctx: context.Background(), seed: seed, sched: sched, st: st}
	r.rng = rand.New(rand.NewPCG(seed, sched))
	r.s, r.clock, r.crash, r.neighbor = sim.s, sim.clock, sim.crash, sim.neighbor
	r.cat = r.s.client(t)
	name := fmt.Sprintf("t%d", sched)
	r.ident = table.Identifier{"sim", name}
	r.tbl = create(t, r.cat, "sim", name)
	r.id = assetOf(t, r.s, r.tbl)
	r.stale = r.tbl
	return r
}

// fail stops the schedule, naming the seed and the steps that led here so it can be replayed.
func (r *servedRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("schedule %d (seed %d), after %s: %s", r.sched, r.seed, strings.Join(r.log, " "), fmt.Sprintf(format, args...))
}

// appendRows commits n new rows on the table as on holds it.
func (r *servedRun) appendRows(on *table.Table, n int) (*table.Table, error) {
	return on.Append(r.ctx, r.s.lake.Record(on, tablestest.Rows(int(r.rows), n, time.Now())), nil)
}

// setRetries sets the table's properties that make iceberg-go's writers retry a lost commit, or not.
func (r *servedRun) setRetries(on bool) {
	v := "0"
	if on {
		v = "1000"
	}
	tx := r.tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: v, table.CommitMinRetryWaitMsKey: "1", table.CommitMaxRetryWaitMsKey: "5"}); err != nil {
		r.fail("set properties: %v", err)
	}
	var err error
	if r.tbl, err = tx.Commit(r.ctx); err != nil {
		r.fail("set properties: %v", err)
	}
}

// do runs the step's operation op; it is false if there was nothing to do.
func (r *servedRun) do(op, step int) bool {
	s, st := r.s, r.st
	switch op {
	case 0, 1: // an append
		if r.rng.IntN(3) == 0 {
			r.stale = r.tbl // a writer that reads now and commits later
		}
		n := 1 + r.rng.IntN(3)
		next, err := r.appendRows(r.tbl, n)
		if err != nil {
			r.fail("append: %v", err)
		}
		r.tbl, r.rows = next, r.rows+int64(n)
		r.log = append(r.log, "append")
	case 2: // a writer that read the table earlier: 409, or a retry when the table says so
		return r.staleWrite()
	case 3: // a commit interrupted before the swap, settled as abandoned later
		r.interruptedCommit()
	case 4: // a file nobody recorded
		s.lake.WriteFile(r.tbl, fmt.Sprintf("data/by-hand-%d.parquet", step), 10, time.Now().Add(-time.Duration(r.rng.IntN(200))*time.Hour))
		r.log = append(r.log, "by-hand")
	case 5: // an inventory pass
		rep, err := s.App.Cleanup.Scan(r.ctx, r.id, cleanup.ScanOptions{FromInventory: true})
		if err != nil {
			r.fail("inventory pass: %v", err)
		}
		st.inventory++
		st.invConfirmed += rep.Confirmed
		r.log = append(r.log, fmt.Sprintf("inventory(%d)", rep.Confirmed))
	case 6: // a walk
		if _, err := s.App.Cleanup.Scan(r.ctx, r.id, cleanup.ScanOptions{}); err != nil {
			r.fail("walk: %v", err)
		}
		st.walks++
		r.log = append(r.log, "walk")
	case 7: // the bot proposes, a person approves, the executor deletes
		r.cleanUp()
	case 10: // a hostile committer with a write token
		r.hostile(step)
	default: // time passes
		d := time.Duration(1+r.rng.IntN(40)) * time.Hour
		r.clock.Add(d)
		r.log = append(r.log, "+"+d.String())
	}
	return true
}

// staleWrite commits on the table as a writer read it earlier, half the time with retries on;
// it is false if the table has not moved since.
func (r *servedRun) staleWrite() bool {
	if r.stale.MetadataLocation() == r.tbl.MetadataLocation() {
		return false
	}
	retry := r.rng.IntN(2) == 0
	r.setRetries(retry)
	if retry {
		// A writer that reads the table with retries on, then loses the race: it
		// refreshes and replays, so what its first attempt staged is committed.
		var err error
		if r.stale, err = r.cat.LoadTable(r.ctx, r.ident); err != nil {
			r.fail("load: %v", err)
		}
		if r.tbl, err = r.appendRows(r.tbl, 1); err != nil {
			r.fail("append: %v", err)
		}
		r.rows++
	}
	// Whether it retries follows the properties the writer read, as in iceberg-go.
	if next, err := r.appendRows(r.stale, 2); err == nil {
		r.tbl, r.stale, r.rows, r.st.retried = next, next, r.rows+2, r.st.retried+1
		r.log = append(r.log, "retried")
	} else {
		r.st.rejected++
		r.log = append(r.log, "rejected")
	}
	r.setRetries(false)
	return true
}

// interruptedCommit stops a commit before its swap and has Tidemark settle it as abandoned.
func (r *servedRun) interruptedCommit() {
	r.crash.Store(true)
	if _, err := r.appendRows(r.tbl, 1); err == nil {
		r.fail("an interrupted commit succeeded")
	}
	r.crash.Store(false)
	if _, err := r.s.App.Warehouse.ResolvePending(r.ctx, 0); err != nil {
		r.fail("resolve pending: %v", err)
	}
	var err error
	if r.tbl, err = r.cat.LoadTable(r.ctx, r.ident); err != nil {
		r.fail("load: %v", err)
	}
	r.st.abandoned++
	r.log = append(r.log, "abandoned")
}

// cleanUp has the bot propose, a person approve the schedule's orphan proposals, and the
// executor run.
func (r *servedRun) cleanUp() {
	c := r.s.App.Cleanup
	if _, err := c.Propose(r.ctx); err != nil {
		r.fail("propose: %v", err)
	}
	ps, err := c.Proposals(r.ctx, cleanup.ProposalFilter{Kind: cleanup.KindOrphanFiles, State: "open", Limit: 10})
	if err != nil {
		r.fail("proposals: %v", err)
	}
	for _, p := range ps {
		if p.AssetID != r.id {
			continue
		}
		if _, err := c.Approve(catalog.WithActor(r.ctx, "token:alice"), p.ID, ""); err != nil {
			r.fail("approve: %v", err)
		}
	}
	rep, err := c.Execute(r.ctx, uuid.Nil, nil)
	if err != nil {
		r.fail("execute: %v", err)
	}
	r.st.deleted += int(rep.Deleted)
	r.log = append(r.log, fmt.Sprintf("execute(%d)", rep.Deleted))
}

// check checks after a step that every file the table references is there and every committed
// row reads back.
func (r *servedRun) check() {
	loaded, err := r.cat.LoadTable(r.ctx, r.ident)
	if err != nil {
		r.fail("load: %v", err)
	}
	if err := r.s.lake.Missing(loaded); err != nil {
		r.fail("a file the table references is gone: %v", err)
	}
	if n, err := r.s.lake.Intact(loaded); err != nil || n != r.rows {
		r.fail("the table reads %d rows (%v), want %d", n, err, r.rows)
	}
	nb, err := r.cat.LoadTable(r.ctx, r.neighbor.Identifier())
	if err != nil {
		r.fail("load the neighbor: %v", err)
	}
	if err := r.s.lake.Missing(nb); err != nil {
		r.fail("a file the neighbor references is gone: %v", err)
	}
	if n, err := r.s.lake.Intact(nb); err != nil || n != 3 {
		r.fail("the neighbor reads %d rows (%v), want 3", n, err)
	}
}

// hostile is one request of a committer with a write token that aims at the neighbor table or
// out of the warehouse. Each must be refused (or, for a retried key, apply once), and change
// nothing: check then reads both tables whole.
func (r *servedRun) hostile(step int) {
	s, nb := r.s, r.neighbor
	path := "/iceberg/v1/main/namespaces/sim/tables/" + r.ident[1]
	cur := r.tbl.CurrentSnapshot()
	send := func(method, p, body string, header map[string]string) (int, string) {
		return s.doWith(r.t, method, p, s.Writer, body, header, nil)
	}
	want := func(what string, code int, body string, ok ...int) {
		for _, c := range ok {
			if code == c {
				r.st.hostile++
				r.log = append(r.log, "hostile:"+what)
				return
			}
		}
		r.fail("hostile %s: answered %d, want one of %v: %.300s", what, code, ok, body)
	}
	props := func(k, v string) string {
		return fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{%q:%q}}]}`, k, v)
	}
	switch r.rng.IntN(6) {
	case 0: // another table's manifest list as a new snapshot's
		if cur == nil {
			return
		}
		body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"add-snapshot","snapshot":{"snapshot-id":%d,"parent-snapshot-id":%d,"sequence-number":%d,"timestamp-ms":%d,"manifest-list":%q,"summary":{"operation":"append"},"schema-id":0}},{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":%d}]}`,
			cur.SnapshotID+int64(step)+1, cur.SnapshotID, r.tbl.Metadata().LastSequenceNumber()+1, time.Now().UnixMilli(), nb.CurrentSnapshot().ManifestList, cur.SnapshotID+int64(step)+1)
		code, text := send("POST", path, body, nil)
		want("foreign-manifest-list", code, text, 400)
	case 1: // statistics naming another table's metadata file
		if cur == nil {
			return
		}
		body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-statistics","snapshot-id":%d,"statistics":{"snapshot-id":%d,"statistics-path":%q,"file-size-in-bytes":10,"file-footer-size-in-bytes":4,"blob-metadata":[]}}]}`, cur.SnapshotID, cur.SnapshotID, nb.MetadataLocation())
		code, text := send("POST", path, body, nil)
		want("foreign-statistics", code, text, 400)
	case 2: // the data path into the neighbor
		code, text := send("POST", path, props("write.data.path", nb.Location()+"/data"), nil)
		want("data-path", code, text, 400)
	case 3: // an encoded '..' climbing out of the warehouse
		code, text := send("POST", path, `{"requirements":[],"updates":[{"action":"set-location","location":"file:`+s.Warehouse+`/%2e%2e/escape"}]}`, nil)
		want("encoded-dots", code, text, 400)
	case 4: // two creates racing for the neighbor's location, and two for a fresh one
		schema := `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
		fresh := fmt.Sprintf("file://%s/sim/raced-%d-%d", s.Warehouse, r.sched, step)
		for _, loc := range []string{nb.Location(), fresh} {
			codes := make([]int, 2)
			done := make(chan struct{})
			for i := range 2 {
				go func() {
					codes[i], _ = send("POST", "/iceberg/v1/main/namespaces/sim/tables", fmt.Sprintf(`{"name":"raced-%d-%d-%d-%d","location":%q,"schema":%s}`, r.sched, step, i, len(loc), loc, schema), nil)
					done <- struct{}{}
				}()
			}
			<-done
			<-done
			won := btoi(codes[0] == 200) + btoi(codes[1] == 200)
			if (loc == fresh && won != 1) || (loc != fresh && won != 0) {
				r.fail("hostile racing creates at %s answered %v", loc, codes)
			}
		}
		r.st.hostile++
		r.log = append(r.log, "hostile:racing-creates")
	default: // one key retried three times at once, then reused to drop the neighbor
		key := uuid.NewString()
		body := props("touched", fmt.Sprint(step))
		codes := make([]int, 3)
		done := make(chan struct{})
		for i := range 3 {
			go func() {
				codes[i], _ = send("POST", path, body, map[string]string{"Idempotency-Key": key})
				done <- struct{}{}
			}()
		}
		for range 3 {
			<-done
		}
		n, err := s.App.Store.Client.IcebergCommit.Query().Where(icebergcommit.IdempotencyKey(key)).Count(r.ctx)
		if err != nil || n != 1 || codes[0] != 200 || codes[1] != 200 || codes[2] != 200 {
			r.fail("hostile retries with one key: answers %v, %d commit rows (%v)", codes, n, err)
		}
		code, text := send("DELETE", "/iceberg/v1/main/namespaces/sim/tables/neighbor", "", map[string]string{"Idempotency-Key": key})
		want("key-reuse", code, text, 422)
		var err2 error
		if r.tbl, err2 = r.cat.LoadTable(r.ctx, r.ident); err2 != nil {
			r.fail("load: %v", err2)
		}
	}
}
