package cleanup_test

import (
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
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
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

// simulateCatalog runs one random schedule over a catalog of several tables: one nested in
// another's location, engine-side renames followed by a new table under the old name (which
// iceberg-go puts in the same directory), a table of a catalog Tidemark does not know living in
// a known table's location, drops, retired tables registered again during their grace period,
// reads (some posted late, after an approval), rejections, and a person who approves nearly
// everything the bot proposes. After every step: every table of either catalog, and every
// table registered again, loads and has every file its retained snapshots reference; no
// deleted file was younger than the threshold.
func simulateCatalog(t *testing.T, seed, sched uint64, n int) catStats {
	var st catStats
	rng := rand.New(rand.NewPCG(seed, sched^0x5eed))
	crashAt, pauseAt, calls := 0, 0, 0
	var second *cleanup.Service
	var e *env
	db := storagetest.Open(t, "sqlite")
	e = newEnv(t, db, cleanup.WithFault(func(string) error {
		calls++
		if crashAt > 0 && calls == crashAt {
			return errors.New("killed")
		}
		if pauseAt > 0 && calls == pauseAt {
			// This executor stalls past its lease; the other replica's executor takes over
			// meanwhile, and this one must notice when it wakes.
			pauseAt = 0
			e.clock.Add(cleanup.DefaultLeaseTTL + time.Second)
			if _, err := second.Execute(e.ctx, uuid.Nil, nil); err != nil {
				return fmt.Errorf("the other executor: %w", err)
			}
		}
		return nil
	}))
	// A second replica over the same database, executing now and then at the same time.
	second = cleanup.New(db, e.cat, e.tables, cleanup.WithClock(e.clock.Now),
		cleanup.WithUsage(e.usage, nil), cleanup.WithHolder("second-replica"))
	log := []string{}
	fail := func(format string, args ...any) {
		t.Helper()
		if len(log) > 40 {
			log = append([]string{"..."}, log[len(log)-40:]...)
		}
		t.Fatalf("catalog schedule %d (seed %d), after steps %v: %s", sched, seed, log, fmt.Sprintf(format, args...))
	}
	ctx := e.ctx
	events, err := e.lake.Cat.LoadTable(ctx, table.Identifier{"db", "events"})
	if err != nil {
		fail("load: %v", err)
	}
	// A table that opts into snapshot expiry, and one nested in db.events' location.
	t0 := e.lake.Create("db.t0", nil, icecat.WithProperties(map[string]string{
		cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "2", cleanup.PropertySnapshotMaxAge: "1h"}))
	e.lake.Append(t0, tablestest.Rows(0, 2, time.Now()))
	nested := e.lake.Create("db.nested", nil, icecat.WithLocation(events.Location()+"/nested"))
	e.lake.Append(nested, tablestest.Rows(0, 2, time.Now()))
	if _, err := e.tables.Sync(ctx, nil); err != nil {
		fail("sync: %v", err)
	}
	var foreignLake *tablestest.Lake
	var foreignIdent table.Identifier
	restored := map[uuid.UUID]bool{}
	adopted := map[string]bool{} // table-uuids that committed a leftover (not Parquet: rows unreadable)
	seq := 0
	// The oracle of two passes: for every leftover (a file no table references), the times of
	// complete walks of its shard that saw it as it is now. A leftover may be deleted only when
	// two such walks were at least the confirmation gap apart.
	type leftover struct {
		mtime time.Time
		seen  []time.Time
	}
	leftovers := map[string]*leftover{}
	retired := map[uuid.UUID]bool{} // retirements whose metadata step the oracle has checked
	shardOf := func(loc, p string) string {
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
	// failing is set while the sim makes data/ listings fail: the oracle then trusts no data
	// shard walk, whatever the report says.
	failing := false
	observeWalks := func(r cleanup.Report) {
		complete := map[string]bool{}
		for _, sh := range r.Shards {
			complete[sh.Shard] = sh.Outcome == "complete" && !(failing && strings.HasPrefix(sh.Shard, "data"))
		}
		for p, l := range leftovers {
			if sh := shardOf(r.Location, p); sh != "" && complete[sh] {
				if info, err := os.Stat(p); err == nil && info.ModTime().Equal(l.mtime) {
					l.seen = append(l.seen, r.StartedAt)
				}
			}
		}
	}
	twoMoments := func(l *leftover) bool {
		for i := range l.seen {
			for j := range l.seen {
				if l.seen[j].Sub(l.seen[i]) >= cleanup.DefaultMinGap {
					return true
				}
			}
		}
		return false
	}

	lakeTables := func() []table.Identifier {
		var out []table.Identifier
		for id, err := range e.lake.Cat.ListTables(ctx, table.Identifier{"db"}) {
			if err != nil {
				fail("list: %v", err)
			}
			out = append(out, id)
		}
		return out
	}
	pick := func() table.Identifier {
		ts := lakeTables()
		if len(ts) == 0 {
			return nil
		}
		return ts[rng.IntN(len(ts))]
	}
	mtimes := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, root := range []string{e.lake.Warehouse} {
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
	check := func(where string, tbl *table.Table, err error) {
		t.Helper()
		if err != nil {
			fail("%s does not load: %v", where, err)
		}
		if err := e.lake.Missing(tbl); err != nil {
			fail("%s lost a file it references: %v", where, err)
		}
	}
	for step := range n {
		before := mtimes()
		executed := false
		ops := []int{0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 7, 7, 8, 8, 8, 9, 10, 11, 12, 13, 13, 14}
		switch op := ops[rng.IntN(len(ops))]; op {
		case 0: // a write
			if id := pick(); id != nil {
				tbl, err := e.lake.Cat.LoadTable(ctx, id)
				if err != nil {
					fail("load %v: %v", id, err)
				}
				e.lake.Append(tbl, tablestest.Rows(step*10, 1+rng.IntN(2), time.Now()))
				log = append(log, "append "+strings.Join(id, "."))
			}
		case 1: // a crashed job's leftover, old; named to be listed first, so a walk that fails
			// after its first entry has seen it
			if id := pick(); id != nil {
				tbl, _ := e.lake.Cat.LoadTable(ctx, id)
				p := e.lake.WriteFile(tbl, fmt.Sprintf("data/0000-leftover-%d.parquet", step), 50, e.clock.Now().Add(-time.Duration(80+rng.IntN(200))*time.Hour))
				info, _ := os.Stat(p)
				leftovers[p] = &leftover{mtime: info.ModTime()}
				log = append(log, "leftover "+strings.Join(id, "."))
			}
		case 2: // scheduled scans of every known live table, an hour or two after the last ones
			// (and often right after a sync); a shard failing now and then
			if rng.IntN(2) > 0 { // or right after the last ones
				e.clock.Add(time.Hour + time.Duration(rng.IntN(60))*time.Minute)
			}
			if rng.IntN(2) == 0 {
				if _, err := e.tables.Sync(ctx, nil); err != nil {
					fail("sync: %v", err)
				}
			}
			if rng.IntN(6) == 0 {
				e.list.set("/data", 1, false)
				failing = true
			}
			ts, _, err := e.tables.List(ctx, uuid.Nil, 100)
			if err != nil {
				fail("list: %v", err)
			}
			confirmed := 0
			for _, tb := range ts {
				if tb.GoneAt != nil {
					continue
				}
				r, err := e.svc.Scan(ctx, tb.AssetID, cleanup.ScanOptions{})
				if err != nil {
					st.scanErrors++ // a table dropped in its catalog and not yet synced, for one
					if testing.Verbose() {
						t.Logf("scan error: %v", err)
					}
					continue
				}
				observeWalks(r)
				confirmed += int(r.Confirmed)
				if len(r.Foreign) > 0 {
					st.foreign++
				}
			}
			e.list.set("", 0, false)
			failing = false
			log = append(log, fmt.Sprintf("scan(%d confirmed)", confirmed))
		case 3: // catalog sync
			if _, err := e.tables.Sync(ctx, nil); err != nil {
				fail("sync: %v", err)
			}
			log = append(log, "sync")
		case 4: // the bot proposes; a person approves nearly everything, rejects the rest
			if _, err := e.svc.Propose(ctx); err != nil {
				fail("propose: %v", err)
			}
			for _, p := range e.proposals("", "open") {
				if !p.Executable || rng.IntN(2) == 0 {
					continue // undecided for now: the bot may withdraw it
				}
				if rng.IntN(5) > 0 {
					if _, err := e.svc.Approve(e.person("alice"), p.ID, ""); err != nil {
						fail("approve: %v", err)
					}
					st.approved++
				} else {
					if _, err := e.svc.Reject(e.person("bob"), p.ID, "not now"); err != nil {
						fail("reject: %v", err)
					}
					st.rejected++
				}
			}
			log = append(log, "propose+decide")
		case 5: // the executor, crashing now and then
			calls, crashAt, pauseAt = 0, 0, 0
			switch rng.IntN(6) {
			case 0, 1:
				crashAt = 1 + rng.IntN(3)
			case 2, 3:
				pauseAt = 1 + rng.IntN(3)
			}
			// Half the time (when this one does not stall) a second replica's executor runs at the
			// same moment.
			var r2 cleanup.ExecuteReport
			var err2 error
			var wg sync.WaitGroup
			if pauseAt == 0 && rng.IntN(2) == 0 {
				wg.Add(1)
				go func() { defer wg.Done(); r2, err2 = second.Execute(ctx, uuid.Nil, nil) }()
			}
			r, err := e.svc.Execute(ctx, uuid.Nil, nil)
			wg.Wait()
			if err != nil && !strings.Contains(err.Error(), "injected crash") {
				fail("execute: %v", err)
			}
			if err2 != nil {
				fail("second executor: %v", err2)
			}
			r.Deleted += r2.Deleted
			r.Executed += r2.Executed
			r.Stopped += r2.Stopped
			st.busy += r.Busy + r2.Busy
			st.lost += r.Lost
			crashAt, pauseAt = 0, 0
			executed = true
			st.executed += r.Executed
			st.stopped += r.Stopped
			log = append(log, fmt.Sprintf("execute(%d deleted, %d stopped)", r.Deleted, r.Stopped))
		case 6: // an engine-side rename, then often a new table under the old name
			if id := pick(); id != nil {
				seq++
				to := table.Identifier{"db", fmt.Sprintf("r%d", seq)}
				if _, err := e.lake.Cat.RenameTable(ctx, id, to); err != nil {
					fail("rename: %v", err)
				}
				st.renames++
				log = append(log, "rename "+strings.Join(id, ".")+" to "+strings.Join(to, "."))
				if rng.IntN(3) > 0 {
					e.lake.Append(e.lake.Create(strings.Join(id, "."), nil), tablestest.Rows(step, 1, time.Now()))
					st.recreated++
					log = append(log, "recreate "+strings.Join(id, "."))
				}
			}
		case 7: // a read, now or posted late (up to three days after it happened)
			if id := pick(); id != nil {
				at := e.clock.Now()
				if rng.IntN(2) == 0 {
					at = at.Add(-time.Duration(rng.IntN(72)) * time.Hour)
				}
				// The name as of the read's time may be another; the engine's current one is what a
				// query log holds for a recent read, and usage resolves it by time.
				_, err := e.usage.Record(ctx, []usage.Record{{Namespace: "iceberg://lake", Name: strings.Join(id, "."), Kind: "read",
					Actor: "bob", At: at, QueryID: fmt.Sprintf("q-%d-%d", sched, step), Source: "trino"}})
				if err != nil {
					fail("read: %v", err)
				}
				log = append(log, "read "+strings.Join(id, "."))
			}
		case 8: // time passes
			d := time.Duration(1+rng.IntN(30)) * time.Hour
			if rng.IntN(8) == 0 {
				d = time.Duration(20+rng.IntN(80)) * 24 * time.Hour
			}
			e.clock.Add(d)
			log = append(log, "time +"+d.String())
		case 9: // a retired table registered again during its grace period
			for _, p := range e.proposals(cleanup.KindUnusedAsset, "executing") {
				tb, err := e.tables.Get(ctx, p.AssetID)
				if err != nil || tb.GoneAt == nil {
					continue
				}
				if _, _, err := e.tables.Register(ctx, tables.RegisterInput{MetadataLocation: tb.MetadataLocation}); err == nil {
					restored[p.AssetID] = true
					st.restored++
					log = append(log, "re-register")
				}
				break
			}
		case 10: // a table of a catalog Tidemark does not know moves into a known table's location
			if foreignLake == nil && rng.IntN(3) == 0 {
				if id := pick(); id != nil {
					host, _ := e.lake.Cat.LoadTable(ctx, id)
					dir := t.TempDir()
					foreignLake = tablestest.NewLakeOn(t, dir, "sqlite", "file:"+filepath.Join(dir, "foreign.db")+"?_pragma=busy_timeout(5000)")
					foreignIdent = table.Identifier{"db", "stranger"}
					ft := foreignLake.Create("db.stranger", nil, icecat.WithLocation(host.Location()))
					foreignLake.Append(ft, tablestest.Rows(0, 2, time.Now()))
					log = append(log, "stranger in "+strings.Join(id, "."))
				}
			}
		case 11: // a drop in the engine, without purge
			if ts := lakeTables(); len(ts) > 2 {
				id := ts[rng.IntN(len(ts))]
				if err := e.lake.Cat.DropTable(ctx, id); err != nil {
					fail("drop: %v", err)
				}
				log = append(log, "drop "+strings.Join(id, "."))
			}
		case 13: // a slow writer commits a file it wrote long ago: a leftover becomes referenced,
			// by its own table or by one sharing the directory (data before metadata)
			if id := pick(); id != nil {
				tbl, _ := e.lake.Cat.LoadTable(ctx, id)
				matches, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "0000-leftover-*.parquet"))
				if len(matches) > 0 {
					f := matches[rng.IntN(len(matches))]
					e.lake.AddFiles(tbl, "file://"+f)
					delete(leftovers, f) // referenced now: the Missing invariant guards it
					adopted[tbl.Metadata().TableUUID().String()] = true
					st.adopted++
					log = append(log, "adopt into "+strings.Join(id, "."))
				}
			}
		case 14: // a job rewrites a leftover in place (same size, written now)
			for p := range leftovers {
				now := e.clock.Now()
				if err := os.Chtimes(p, now, now); err == nil {
					info, _ := os.Stat(p)
					leftovers[p] = &leftover{mtime: info.ModTime()}
					log = append(log, "rewrite a leftover")
				}
				break
			}
		case 12: // the stranger writes
			if foreignLake != nil {
				ft, err := foreignLake.Cat.LoadTable(ctx, foreignIdent)
				check("the stranger", ft, err)
				foreignLake.Append(ft, tablestest.Rows(step, 1, time.Now()))
				log = append(log, "stranger append")
			}
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
			if l := leftovers[p]; l != nil {
				if !twoMoments(l) {
					fail("deleted %s, which complete walks saw only at %v: not two passes at least %s apart", p, l.seen, cleanup.DefaultMinGap)
				}
				delete(leftovers, p)
			}
		}
		decisionsHold(t, e, db, executed, retired, fail)
		for _, id := range lakeTables() {
			tbl, err := e.lake.Cat.LoadTable(ctx, id)
			check(strings.Join(id, "."), tbl, err)
		}
		if foreignLake != nil {
			ft, err := foreignLake.Cat.LoadTable(ctx, foreignIdent)
			check("the stranger", ft, err)
		}
		for id := range restored {
			tb, err := e.tables.Get(ctx, id)
			if err != nil || tb.GoneAt != nil || tb.Connection != "" {
				continue // retired again since, by a later approval
			}
			tbl, err := table.NewFromLocation(ctx, table.Identifier{"restored"}, tb.MetadataLocation, icebergio.LoadFSFunc(nil, tb.MetadataLocation), nil)
			check("re-registered "+tb.MetadataLocation, tbl, err)
		}
		st.steps++
	}
	for _, id := range lakeTables() {
		tbl, err := e.lake.Cat.LoadTable(ctx, id)
		if err != nil {
			fail("load %v: %v", id, err)
		}
		if adopted[tbl.Metadata().TableUUID().String()] {
			continue
		}
		if _, err := e.lake.Intact(tbl); err != nil {
			fail("rows of %v: %v", id, err)
		}
	}
	if testing.Verbose() {
		states := map[string]int{}
		for _, p := range e.proposals("", "") {
			full, _ := e.svc.GetProposal(ctx, p.ID)
			for k, v := range full.Files {
				states["file:"+k] += v
			}
			states[p.Kind+"/"+p.State]++
			if p.State == "failed" || p.State == "stopped" {
				t.Logf("  %s %s: %s", p.Kind, p.State, p.Reason)
			}
		}
		t.Logf("catalog schedule %d: %d steps; proposals %v", sched, st.steps, states)
	}
	return st
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
