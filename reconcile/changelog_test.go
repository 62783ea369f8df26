package reconcile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

// logWorld is two PostgreSQL tables with change logs, a migration between them that reads the
// logs, and a twin migration over the same tables that reads both in full every run: whatever
// the schedule, an incremental run must agree with the twin window by window.
type logWorld struct {
	t           *testing.T
	ctx         context.Context
	pg          *sql.DB
	c           *clock
	svc         *reconcile.Service
	logged, all reconcile.Migration
}

func newLogWorld(t *testing.T, db *storage.DB) *logWorld {
	ctx := context.Background()
	cat := mustCatalog(t, db)
	tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
	must(t, err)
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	w := &logWorld{t: t, ctx: ctx, pg: pg, c: &clock{t: since.Add(10*24*time.Hour + 12*time.Hour)}}
	for _, side := range []string{"a", "b"} {
		w.exec(fmt.Sprintf(`CREATE TABLE public.%s (id bigint PRIMARY KEY, at timestamptz NOT NULL, v text)`, side))
		script, err := reconcile.ChangeLogSQL("public."+side, "at", "public."+side+"_changes", reconcile.DefaultChangeGrain)
		must(t, err)
		w.exec(script)
		// Ten days of 20 rows and two rows of the eleventh day, before the clock.
		w.exec(fmt.Sprintf(`INSERT INTO public.%s SELECT i, '2026-11-01'::timestamptz + (i / 20) * interval '1 day' + (i %% 20) * interval '1 hour', 'v' || i
			FROM generate_series(0, 201) i`, side))
	}
	w.svc = mustReconcile(t, db, cat, tbls, nil, reconcile.WithConnection("src", pg), reconcile.WithClock(w.c.Now))
	mk := func(name, oldLog, newLog string) reconcile.Migration {
		old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: name + ".old"})
		must(t, err)
		nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: name + ".new"})
		must(t, err)
		m, err := w.svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: reconcile.Spec{
			KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a test of change logs"},
			Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "src", Table: "public.a", ChangeLog: oldLog},
			New: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "src", Table: "public.b", ChangeLog: newLog}}})
		must(t, err)
		return m
	}
	w.logged, w.all = mk("logged", "public.a_changes", "public.b_changes"), mk("all", "", "")
	return w
}

func (w *logWorld) exec(q string, args ...any) {
	w.t.Helper()
	if _, err := w.pg.ExecContext(w.ctx, q, args...); err != nil {
		w.t.Fatalf("%s: %v", q, err)
	}
}

// run runs the logged migration and its twin, an hour later than the last, and checks they
// agree on every window; it returns the logged run.
func (w *logWorld) run(step string) reconcile.Run {
	w.t.Helper()
	w.c.Set(w.c.Now().Add(time.Hour))
	got, err := w.svc.Reconcile(w.ctx, w.logged.ID)
	if err != nil {
		w.t.Fatalf("%s: %v", step, err)
	}
	want, err := w.svc.Reconcile(w.ctx, w.all.ID)
	must(w.t, err)
	if got.Clean != want.Clean || len(got.Windows) != len(want.Windows) {
		w.t.Fatalf("%s: the logged run is clean %v over %d windows, the full one clean %v over %d", step, got.Clean, len(got.Windows), want.Clean, len(want.Windows))
	}
	for i, g := range got.Windows {
		x := want.Windows[i]
		if g.Start != x.Start || g.Old != x.Old || g.New != x.New || !slices.Equal(g.Classes, x.Classes) || !slices.Equal(g.Why, x.Why) ||
			!slices.Equal(g.Sample, x.Sample) || g.Missing != x.Missing || g.Extra != x.Extra || g.Differing != x.Differing || g.Moved != x.Moved || g.MovedIn != x.MovedIn {
			w.t.Errorf("%s: window %s: logged run %+v, full run %+v", step, g.Start, g, x)
		}
	}
	return got
}

// reads says what a run read of each side: the windows reused per side and the notes.
func reads(r reconcile.Run) string {
	return fmt.Sprintf("reused old %d new %d, counted %d, notes %q", r.Cost.ReusedOld, r.Cost.Reused, r.Cost.Counted, r.Cost.ChangeLog)
}

// TestChangeLogSkipsUnchangedWindows: with a change log on both PostgreSQL sides, a run reads
// again only the windows a transaction changed since the previous run's snapshot, and agrees
// with a run that reads everything through the adversarial schedule: an update, a transaction
// left open across a run and committed after it, a TRUNCATE, a trigger disabled, a prune that
// deleted changes the previous run had not seen and one that did not.
func TestChangeLogSkipsUnchangedWindows(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newLogWorld(t, db)
		first := w.run("the first run")
		if !first.Clean || first.Cost.ReusedOld != 0 || first.Cost.Reused != 0 || len(first.Cost.ChangeLog) != 2 ||
			!strings.Contains(first.Cost.ChangeLog[0], "no previous run") {
			t.Fatalf("the first run: clean %v, %s; want clean, read in full with no previous run", first.Clean, reads(first))
		}
		// Nothing changed: every window but the newest (the clock's day) is reused.
		again := w.run("nothing changed")
		if !again.Clean || again.Cost.ReusedOld != 10 || again.Cost.Reused != 10 || again.Cost.Counted != 4 {
			t.Fatalf("nothing changed: clean %v, %s; want 10 windows reused a side and the newest window's 2+2 rows counted", again.Clean, reads(again))
		}
		// An update in window 2 of the old side, and a row moved from window 3 to 7 on the new side.
		w.exec(`UPDATE public.a SET v = 'changed' WHERE id = 45`)
		w.exec(`UPDATE public.b SET at = at + interval '4 days' WHERE id = 61`)
		upd := w.run("after two updates")
		if upd.Clean || upd.Cost.ReusedOld != 9 || upd.Cost.Reused != 8 {
			t.Fatalf("after two updates: clean %v, %s; want not clean, 9 old and 8 new windows reused", upd.Clean, reads(upd))
		}
		// A transaction open across a run: its change is not in the run's snapshot, so the next
		// run reads its window although it committed after this run took its snapshot.
		tx, err := w.pg.BeginTx(w.ctx, nil)
		must(t, err)
		if _, err := tx.ExecContext(w.ctx, `UPDATE public.b SET v = 'late' WHERE id = 85`); err != nil {
			t.Fatal(err)
		}
		during := w.run("a transaction open across the run")
		must(t, tx.Commit())
		late := w.run("after the late commit")
		if during.Summary.Unclean == late.Summary.Unclean || late.Cost.Reused != during.Cost.Reused-1 {
			t.Fatalf("the late commit: %d unclean windows before, %d after (%s); want window 4 read again and found", during.Summary.Unclean, late.Summary.Unclean, reads(late))
		}
		// The run during the open transaction looked into nothing: the three differing windows
		// were unchanged on both sides, so their comparisons are the previous run's; once window 4
		// differs too, all four are compared record by record again.
		if during.Cost.ReusedDeep != 3 || during.Cost.Deep != 0 || late.Cost.ReusedDeep != 0 || late.Cost.Deep != 4 {
			t.Fatalf("comparisons reused %d and made %d during the open transaction, %d and %d after; want 3 and 0, then 0 and 4",
				during.Cost.ReusedDeep, during.Cost.Deep, late.Cost.ReusedDeep, late.Cost.Deep)
		}
		// Every window again after a TRUNCATE (the new side written anew as it was).
		w.exec(`BEGIN; CREATE TEMP TABLE keep AS SELECT * FROM public.b; TRUNCATE public.b; INSERT INTO public.b SELECT * FROM keep; DROP TABLE keep; COMMIT`)
		trunc := w.run("after a TRUNCATE")
		if trunc.Cost.Reused != 0 || !strings.Contains(strings.Join(trunc.Cost.ChangeLog, ";"), "every window changed") {
			t.Fatalf("after a TRUNCATE: %s; want the new side read in full", reads(trunc))
		}
		// A disabled trigger: the side is read in full while it is, so the change it let through
		// is found.
		w.exec(`ALTER TABLE public.a DISABLE TRIGGER a_changes_update`)
		w.exec(`UPDATE public.a SET v = 'unlogged' WHERE id = 150`)
		off := w.run("a trigger disabled")
		if off.Cost.ReusedOld != 0 || !strings.Contains(off.Cost.ChangeLog[0], "not all enabled ALWAYS") {
			t.Fatalf("a trigger disabled: %s; want the old side read in full", reads(off))
		}
		w.exec(`ALTER TABLE public.a ENABLE ALWAYS TRIGGER a_changes_update`)
		w.run("the trigger enabled again")
		// A prune of changes every run has seen leaves runs incremental; a prune of a change no
		// run has seen makes the next one read in full.
		// (A transaction elsewhere in the cluster that began before the pruned changes and was
		// still running at the previous run's snapshot makes the run read in full, soundly.)
		w.exec(`SELECT public.a_changes_prune('0 seconds')`)
		seen := w.run("a prune of seen changes")
		if seen.Cost.ReusedOld != 10 && !strings.Contains(seen.Cost.ChangeLog[0], "a prune of rows") {
			t.Fatalf("after a prune of seen changes: %s; want 10 old windows reused", reads(seen))
		}
		w.exec(`UPDATE public.a SET v = 'pruned' WHERE id = 30`)
		w.exec(`SELECT public.a_changes_prune('0 seconds')`)
		unseen := w.run("a prune of an unseen change")
		if unseen.Cost.ReusedOld != 0 || !strings.Contains(unseen.Cost.ChangeLog[0], "every window changed") {
			t.Fatalf("after a prune of an unseen change: %s; want the old side read in full", reads(unseen))
		}
	})
}

// TestChangeLogMissing: a side naming a change log that is not there is read in full, and the
// run says so; the run is not failed for it.
func TestChangeLogMissing(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newLogWorld(t, db)
		w.exec(`ALTER TABLE public.a RENAME TO gone`) // the triggers go along; the log stays
		w.exec(`CREATE TABLE public.a (id bigint PRIMARY KEY, at timestamptz NOT NULL, v text); INSERT INTO public.a SELECT * FROM gone`)
		w.run("the first run")
		w.exec(`DROP TABLE gone; DROP TABLE public.a_changes`)
		r := w.run("the log gone")
		if r.Cost.ReusedOld != 0 || !strings.Contains(r.Cost.ChangeLog[0], "there is no change log public.a_changes") || r.Error != "" {
			t.Fatalf("a missing change log: %s, error %q; want the old side read in full, saying why", reads(r), r.Error)
		}
	})
}

// TestChangeLogNeedsUniqueKeys: a side no unique index covers is read in full whatever its log
// says (a key repeated across windows is found only so), and says why.
func TestChangeLogNeedsUniqueKeys(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newLogWorld(t, db)
		w.exec(`ALTER TABLE public.a DROP CONSTRAINT a_pkey`)
		w.run("the first run")
		w.exec(`INSERT INTO public.a VALUES (3, '2026-11-08 05:00+00', 'again')`) // id 3 is in window 0 too
		r := w.run("a key repeated across windows")
		if r.Clean || r.Cost.ReusedOld != 0 || !strings.Contains(r.Cost.ChangeLog[0], "no unique index") {
			t.Fatalf("a side without a unique index: clean %v, %s; want not clean and the old side read in full", r.Clean, reads(r))
		}
	})
}

// TestChangeLogSQL: the script logs a zone-less time column's bins in UTC whatever the writer's
// time zone, logs COPY, and names are refused unless schema-qualified.
func TestChangeLogSQL(t *testing.T) {
	ctx := context.Background()
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	pg.SetMaxOpenConns(1) // the writer's time zone is the session's
	script, err := reconcile.ChangeLogSQL("public.z", "at", "audit.z_log", 15*time.Minute)
	must(t, err)
	for _, q := range []string{`CREATE SCHEMA audit`, `CREATE TABLE public.z (id int, at timestamp)`, script,
		`SET TIME ZONE 'America/New_York'`, `INSERT INTO public.z VALUES (1, '2026-11-02 23:40'), (2, NULL)`, `UPDATE public.z SET at = '2026-11-03 00:05' WHERE id = 2`} {
		if _, err := pg.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	var got []string
	rows, err := pg.QueryContext(ctx, `SELECT to_char(lo AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || '/' || to_char(hi AT TIME ZONE 'UTC', 'HH24:MI') FROM audit.z_log WHERE lo IS NOT NULL ORDER BY xid, lo`)
	must(t, err)
	for rows.Next() {
		var s string
		must(t, rows.Scan(&s))
		got = append(got, s)
	}
	must(t, rows.Err())
	if want := []string{"2026-11-02 23:30/23:45", "2026-11-03 00:00/00:15"}; !slices.Equal(got, want) {
		t.Errorf("logged bins %v, want %v (UTC, 15-minute bins, a NULL time not logged)", got, want)
	}
	// The script's removal lines remove it, and writes go on.
	for _, line := range strings.Split(script, "\n") {
		if rest, ok := strings.CutPrefix(line, "--   DROP TRIGGER"); ok {
			if _, err := pg.ExecContext(ctx, "DROP TRIGGER"+rest); err != nil {
				t.Fatalf("removing the change log: %v", err)
			}
		}
	}
	var left int
	if err := pg.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.z'::regclass) + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'z_log%') +
		(SELECT count(*) FROM pg_class WHERE relname = 'z_log')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("after the removal lines %d triggers, functions and tables are left (%v)", left, err)
	}
	if _, err := pg.ExecContext(ctx, `INSERT INTO public.z VALUES (3, '2026-11-04 01:00')`); err != nil {
		t.Errorf("a write after the change log's removal: %v", err)
	}
	// A column the triggers could not bin is refused when the script runs, before any writer fails.
	dated, err := reconcile.ChangeLogSQL("public.d", "day", "audit.d_log", time.Hour)
	must(t, err)
	if _, err := pg.ExecContext(ctx, `CREATE TABLE public.d (id int, day date)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.ExecContext(ctx, dated); err == nil || !strings.Contains(err.Error(), "no timestamp or timestamptz column") {
		t.Errorf("a change log over a date column: %v; want the script refused", err)
	}
	pg.ExecContext(ctx, `ROLLBACK`) //nolint:errcheck // the failed script's transaction
	if _, err := pg.ExecContext(ctx, `INSERT INTO public.d VALUES (1, '2026-11-02')`); err != nil {
		t.Errorf("a write after the refused script: %v", err)
	}
	for _, bad := range [][3]string{{"z", "at", "audit.z_log"}, {"public.z", "at", "z_log"}, {"public.z", "", "audit.z_log"}, {"public.z", "at'; DROP TABLE x; --", "audit.z_log"}, {"public.z%", "at", "audit.z_log"}} {
		if _, err := reconcile.ChangeLogSQL(bad[0], bad[1], bad[2], time.Hour); !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("ChangeLogSQL(%q, %q, %q): %v; want it refused", bad[0], bad[1], bad[2], err)
		}
	}
}
