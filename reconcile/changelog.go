package reconcile

// A change log lets a run skip a PostgreSQL side's windows that no transaction changed since the
// previous run. Tidemark only reads the source, so the log is installed by whoever owns the
// table (ChangeLogSQL writes the script): statement triggers with transition tables append, for
// every INSERT, UPDATE, DELETE and COPY, the time bins the statement touched (old and new values
// of the time column), stamped with the transaction's ID; a TRUNCATE appends a row meaning every
// bin. The triggers are ENABLE ALWAYS, so logical replication and session_replication_role =
// replica do not bypass them.
//
// Why it is sound: a run takes pg_current_snapshot() before it reads anything and stores it. The
// next run's windows whose figures it reuses are those no logged change touches from a
// transaction that snapshot did not see. A change the previous run's reads saw but its snapshot
// did not is such a change too (it is read again), and a transaction still running now is not
// visible to this run's snapshot, so the run after this one sees its log row. A transaction that
// aborts leaves no log row, and no change. What it misses: changes made while a trigger was
// disabled (ALTER TABLE ... DISABLE TRIGGER, then enabled again before the run; a run refuses the
// log while one is disabled, or altered to a column list or a WHEN condition), a trigger function
// replaced by another, and log rows deleted other than by the prune function (which leaves a row
// saying up to which transaction it deleted: a run whose previous snapshot predates that reads in
// full). Only a side whose keys a unique index proves unique is read so: a key repeated across a
// changed window and an unchanged one is found only by reading every window.

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/lib/pq"
)

// DefaultChangeGrain is the time bin a change log records: a window of the migration is read
// again when a change touched a bin overlapping it.
const DefaultChangeGrain = time.Hour

// ChangeLogSQL is the script that installs a change log named log (schema.table) for table's time
// column: the log table, its trigger function, the four triggers, the prune function
// (log_prune(keep interval), which deletes rows older than keep and says so in the log), and a
// first row that makes the next run read in full. The reader role needs SELECT on the log.
func ChangeLogSQL(table, timeColumn, log string, grain time.Duration) (string, error) {
	if grain < time.Minute || grain > 366*24*time.Hour || grain%time.Second != 0 {
		return "", invalid("grain", "the change log's grain must be whole seconds from 1 minute to 366 days, not %s", grain)
	}
	names := map[string]string{"table": table, "log": log}
	for _, f := range []string{"table", "log"} {
		parts := strings.Split(names[f], ".")
		if len(parts) != 2 || parts[0] == "" || parts[1] == "" || len(parts[1]) > 50 {
			return "", invalid(f, "name the %s as schema.table (at most 50 characters after the dot), not %q", f, names[f])
		}
	}
	if timeColumn == "" || len(timeColumn) > 63 {
		return "", invalid("time_column", "name the time column (1 to 63 characters)")
	}
	// The names go into a script an owner runs, comments and messages included: plain ones only.
	for f, n := range map[string]string{"table": table, "log": log, "time_column": timeColumn} {
		if i := strings.IndexFunc(n, func(r rune) bool {
			return !(r == '_' || r == '.' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r))
		}); i >= 0 {
			return "", invalid(f, "the %s %q holds %q: the change log script takes letters, digits, _ and $ only", f, n, n[i:i+1])
		}
	}
	lg, fn, prune := quoteTable(log), changeLogFunction(log), quoteTable(log+"_prune")
	col := pq.QuoteIdentifier(timeColumn)
	iv := fmt.Sprintf("'%d seconds'", int64(grain/time.Second))
	bins := func(from string) string {
		return fmt.Sprintf(`INSERT INTO %s (lo, hi) SELECT b, b + interval %s FROM (SELECT DISTINCT date_bin(%s, c, '2000-01-01') AS b FROM (%s) s(c) WHERE c IS NOT NULL) d;`,
			lg, iv, iv, from)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `-- Tidemark change log for %[1]s: run as the table's owner, then GRANT SELECT ON %[2]s TO the reader role.
-- To remove it, drop the triggers first (a write would fail in a trigger whose log is gone):
--   %[10]sDROP FUNCTION %[3]s(); DROP FUNCTION %[11]s(interval); DROP TABLE %[2]s;
BEGIN;
DO $tidemark$ BEGIN -- the triggers run in every writer's transaction: refuse a column they would fail on
  IF NOT coalesce((SELECT atttypid IN ('timestamp'::regtype, 'timestamptz'::regtype) FROM pg_attribute
      WHERE attrelid = %[7]s::regclass AND attname = %[8]s AND NOT attisdropped), false) THEN
    RAISE EXCEPTION 'tidemark change log: %[1]s has no timestamp or timestamptz column %[9]s';
  END IF;
END $tidemark$;
CREATE TABLE %[2]s (
  xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  lo timestamptz,          -- the bin a statement changed; NULL: every bin (a TRUNCATE, the log's start, a prune)
  hi timestamptz,
  pruned_through xid8,     -- a prune: the newest transaction whose rows it deleted
  at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON %[2]s (xid);
CREATE FUNCTION %[3]s() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp SET timezone = 'UTC' AS $tidemark$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    INSERT INTO %[2]s (lo, hi) VALUES (NULL, NULL);
  ELSIF TG_OP = 'INSERT' THEN
    %[4]s
  ELSIF TG_OP = 'UPDATE' THEN
    %[5]s
  ELSE
    %[6]s
  END IF;
  RETURN NULL;
END $tidemark$;
`, table, lg, fn, bins("SELECT "+col+" FROM tidemark_new"), bins("SELECT "+col+" FROM tidemark_old UNION ALL SELECT "+col+" FROM tidemark_new"),
		bins("SELECT "+col+" FROM tidemark_old"), pq.QuoteLiteral(quoteTable(table)), pq.QuoteLiteral(timeColumn), timeColumn,
		dropTriggers(log, table), prune)
	tbl := quoteTable(table)
	for _, tr := range changeTriggers(log) {
		fmt.Fprintf(&b, "CREATE TRIGGER %s AFTER %s ON %s %sFOR EACH STATEMENT EXECUTE FUNCTION %s();\n", pq.QuoteIdentifier(tr.name), tr.event, tbl, tr.refs, fn)
		fmt.Fprintf(&b, "ALTER TABLE %s ENABLE ALWAYS TRIGGER %s;\n", tbl, pq.QuoteIdentifier(tr.name))
	}
	fmt.Fprintf(&b, `CREATE FUNCTION %[1]s(keep interval) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp AS $tidemark$
DECLARE n bigint; newest xid8;
BEGIN
  WITH gone AS (DELETE FROM %[2]s WHERE at < now() - keep RETURNING greatest(xid, pruned_through) AS x)
  SELECT count(*), max(x) INTO n, newest FROM gone;
  IF n > 0 THEN INSERT INTO %[2]s (pruned_through) VALUES (newest); END IF;
  RETURN n;
END $tidemark$;
INSERT INTO %[2]s (lo, hi) VALUES (NULL, NULL); -- the log starts here: the next run reads in full
COMMIT;
`, prune, lg)
	return b.String(), nil
}

// dropTriggers is the statements that drop the change log's triggers, for a script.
func dropTriggers(log, table string) string {
	var b strings.Builder
	for _, tr := range changeTriggers(log) {
		fmt.Fprintf(&b, "DROP TRIGGER %s ON %s; ", pq.QuoteIdentifier(tr.name), quoteTable(table))
	}
	return b.String()
}

// changeLogFunction is the trigger function of the change log named log.
func changeLogFunction(log string) string { return quoteTable(log + "_record") }

type changeTrigger struct{ name, event, refs string }

// changeTriggers are the change log's four triggers on the logged table.
func changeTriggers(log string) []changeTrigger {
	base := log[strings.LastIndexByte(log, '.')+1:]
	return []changeTrigger{
		{base + "_insert", "INSERT", "REFERENCING NEW TABLE AS tidemark_new "},
		{base + "_update", "UPDATE", "REFERENCING OLD TABLE AS tidemark_old NEW TABLE AS tidemark_new "},
		{base + "_delete", "DELETE", "REFERENCING OLD TABLE AS tidemark_old "},
		{base + "_truncate", "TRUNCATE", ""},
	}
}

// logState is what a run learned from a side's change log: the snapshot it stores for the next
// run, and the windows changed since the previous run's snapshot (nil: read every window).
type logState struct {
	snapshot string
	changed  map[int64]bool
	note     string // for the run's cost: why the side was read in full, or what it reused
}

// changes reads the side's change log in tx: the current snapshot first (every read after it
// sees at least what it sees), then the windows of [from, to) a transaction changed that the
// previous run's snapshot since did not see. since is "" for no usable previous run.
func (p *postgresReader) changes(ctx context.Context, tx *sql.Tx, log, since string, from, to time.Time) (logState, error) {
	var st logState
	if err := tx.QueryRowContext(ctx, `SELECT pg_current_snapshot()::text`).Scan(&st.snapshot); err != nil {
		return st, fmt.Errorf("read the current snapshot: %w", err)
	}
	// The log readable, and its four triggers AFTER, per statement, ALWAYS enabled, on every
	// column, with no condition (nothing here may fail: the transaction goes on to the figures).
	var (
		readable string
		armed    bool
	)
	err := tx.QueryRowContext(ctx, `SELECT CASE WHEN to_regclass($3) IS NULL THEN 'missing' WHEN NOT has_table_privilege(to_regclass($3), 'SELECT') THEN 'denied' ELSE '' END,
		coalesce((SELECT bit_or(tgtype::int) & 60 = 60 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgfoid = to_regprocedure($2)
			AND tgenabled = 'A' AND tgtype::int & 3 = 0 AND tgqual IS NULL AND cardinality(tgattr::int2[]) = 0), false)`,
		quoteTable(p.table), changeLogFunction(log)+"()", quoteTable(log)).Scan(&readable, &armed)
	if err != nil {
		return st, fmt.Errorf("read the triggers of change log %s: %w", log, err)
	}
	switch {
	case readable == "missing":
		st.note = fmt.Sprintf("read in full: there is no change log %s (install it with tidemark reconcile change-log)", log)
		return st, nil
	case readable == "denied":
		st.note = fmt.Sprintf("read in full: this connection's role may not read the change log %s (GRANT SELECT ON %s to it)", log, log)
		return st, nil
	case !armed:
		st.note = fmt.Sprintf("read in full: the change log %s's four triggers on %s are not all enabled ALWAYS as installed", log, p.table)
		return st, nil
	case since == "":
		st.note = "read in full: no previous run of this side to start from"
		return st, nil
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT lo, hi, bool_and(pruned_through IS NOT NULL AND pruned_through < pg_snapshot_xmin($1::pg_snapshot))
		FROM %s WHERE xid >= pg_snapshot_xmin($1::pg_snapshot) AND NOT pg_visible_in_snapshot(xid, $1::pg_snapshot) GROUP BY 1, 2`, quoteTable(log)), since)
	if err != nil {
		return st, fmt.Errorf("read change log %s: %w", log, err)
	}
	defer rows.Close()
	changed := map[int64]bool{}
	last := windowIndex(p.spec, to.Add(-time.Nanosecond))
	for rows.Next() {
		var (
			lo, hi  sql.NullTime
			covered bool
		)
		if err := rows.Scan(&lo, &hi, &covered); err != nil {
			return st, err
		}
		switch {
		case covered:
			continue // a prune of rows the previous run's snapshot saw
		case !lo.Valid || !hi.Valid:
			st.note = "read in full: the log says every window changed (a TRUNCATE, the log's start, or a prune of rows the previous run had not seen)"
			return st, rows.Err()
		case !hi.Time.After(from) || !lo.Time.Before(to):
			continue // outside the compared span
		}
		for w := max(windowIndex(p.spec, lo.Time), 0); w <= min(windowIndex(p.spec, hi.Time.Add(-time.Nanosecond)), last); w++ {
			changed[w] = true
		}
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	st.changed = changed
	return st, nil
}

// spans are the time spans of the windows ws, cut at to, consecutive ones merged.
func spansOf(spec *Spec, ws map[int64]bool, to time.Time) [][2]time.Time {
	var out [][2]time.Time
	for _, r := range ranges(slices.Sorted(maps.Keys(ws))) {
		from, end := windowStart(spec, r[0]), windowStart(spec, r[1]+1)
		if end.After(to) {
			end = to
		}
		if from.Before(end) {
			out = append(out, [2]time.Time{from, end})
		}
	}
	return out
}

// maxLogSpans bounds the separate time spans a run reads from a logged side in one query; past
// it the side is read in full.
const maxLogSpans = 64

// logged reads the side's change log (the side's src.ChangeLog) and returns the spans to read:
// the changed windows' when prev's figures can stand for the others (which it then puts in out),
// else the whole of [from, to). out keeps the log's state for the run's record.
func (p *postgresReader) logged(ctx context.Context, tx *sql.Tx, src SourceSpec, from, to time.Time, unique bool, prev *prevSide, out *sideFigures) ([][2]time.Time, error) {
	since := ""
	if prev != nil {
		since = prev.logSnapshot
	}
	st, err := p.changes(ctx, tx, src.ChangeLog, since, from, to)
	if err != nil {
		return nil, err
	}
	out.log = &st
	full := [][2]time.Time{{from, to}}
	switch {
	case st.changed == nil:
		return full, nil
	case !unique || src.Keys != UniqueKeys:
		st.note = fmt.Sprintf("read in full: no unique index over NOT NULL key columns of %s proves its keys unique, and a key repeated across windows is found only by reading them all", p.table)
		return full, nil
	case !prev.clean:
		st.note = "read in full: the previous run found repeated keys or versions on this side"
		return full, nil
	}
	// The newest windows always: the previous run counted up to its start, and rows timed after
	// it may have been written before it.
	for w := max(windowIndex(p.spec, prev.started), 0); w <= windowIndex(p.spec, to.Add(-time.Nanosecond)); w++ {
		st.changed[w] = true
	}
	spans := spansOf(p.spec, st.changed, to)
	if len(spans) > maxLogSpans {
		st.note = fmt.Sprintf("read in full: changes in %d separate spans of windows", len(spans))
		return full, nil
	}
	out.incremental, out.changed = true, st.changed
	for w, f := range prev.figs.windows {
		if st.changed[w] {
			continue
		}
		out.windows[w] = f
		out.reused++
		if out.segsMissing == nil {
			out.segsMissing = map[int64]bool{}
		}
		out.segsMissing[w] = true
	}
	st.note = fmt.Sprintf("windows read (changed since the previous run, or newest): %d; windows whose figures were reused: %d", len(st.changed), out.reused)
	return spans, nil
}

// prevSide is the previous run's figures of one side and what an incremental read of that side
// starts from.
type prevSide struct {
	started     time.Time
	figs        sideFigures
	logSnapshot string // a PostgreSQL side's change log snapshot
	clean       bool   // no window of it held a repeated key or versions
}
