package reconcile

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/tidemark/tidemark/tables"
)

// row is one record as both sides are compared: its time and its values as canonical text
// (keys first, then the compared columns), so the same fact reads the same from PostgreSQL
// and from Iceberg whatever the column types.
type row struct {
	at   time.Time
	vals []string
}

// null stands for SQL NULL among canonical values (no text value holds a NUL: input refuses it).
const null = "\x00"

// reader reads one side's records whose time falls in [from, to).
type reader interface {
	read(ctx context.Context, from, to time.Time, fn func(row)) (bytes int64, err error)
}

// postgresReader reads a table over a read-only connection.
type postgresReader struct {
	db    *sql.DB
	table string
	spec  *Spec
	// types are the SQL types of the time column, the keys and the compared columns, read once
	// a run (the run's hash plan is made from them too).
	types []string
}

func quoteTable(t string) string {
	parts := strings.Split(t, ".")
	for i, p := range parts {
		parts[i] = pq.QuoteIdentifier(p)
	}
	return strings.Join(parts, ".")
}

func (p *postgresReader) read(ctx context.Context, from, to time.Time, fn func(row)) (int64, error) {
	return p.query(ctx, "", fn, from, to)
}

// query reads the records of [$1, $2) that also meet where (when not empty), over a read-only
// transaction: the reconciliation never writes to a side.
func (p *postgresReader) query(ctx context.Context, where string, fn func(row), args ...any) (int64, error) {
	cols := make([]string, 0, 1+len(p.spec.KeyColumns)+len(p.spec.Columns))
	cols = append(cols, pq.QuoteIdentifier(p.spec.TimeColumn))
	for _, c := range append(append([]string{}, p.spec.KeyColumns...), p.spec.Columns...) {
		cols = append(cols, pq.QuoteIdentifier(c))
	}
	tc := pq.QuoteIdentifier(p.spec.TimeColumn)
	if where != "" {
		where = " AND " + where
	}
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return 0, fmt.Errorf("open a read-only transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE %s >= $1 AND %s < $2%s",
		strings.Join(cols, ", "), quoteTable(p.table), tc, tc, where), args...)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", p.table, err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return 0, err
	}
	raw := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	var bytes int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return bytes, fmt.Errorf("read %s: %w", p.table, err)
		}
		at, ok := raw[0].(time.Time)
		if !ok {
			return bytes, fmt.Errorf("the time column %s of %s is not a timestamp", p.spec.TimeColumn, p.table)
		}
		r := row{at: at.UTC(), vals: make([]string, len(cols)-1)}
		for i := 1; i < len(cols); i++ {
			r.vals[i-1] = canonSQL(raw[i], types[i].DatabaseTypeName())
			bytes += int64(len(r.vals[i-1]))
		}
		fn(r)
	}
	return bytes, rows.Err()
}

// canonSQL writes a PostgreSQL value as canonical text.
func canonSQL(v any, dbType string) string {
	switch x := v.(type) {
	case nil:
		return null
	case time.Time:
		if dbType == "DATE" {
			return x.Format("2006-01-02")
		}
		return canonTime(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case []byte:
		if dbType == "NUMERIC" {
			return canonDecimal(string(x))
		}
		return string(x)
	case string:
		if dbType == "NUMERIC" {
			return canonDecimal(x)
		}
		return x
	}
	return fmt.Sprint(v)
}

func canonTime(t time.Time) string {
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

// canonDecimal writes a decimal without trailing zeros (12.50 and 12.5 are the same amount).
func canonDecimal(s string) string {
	if plainDecimal(s) {
		// The common form (digits, one point): trimmed as text, which is what the exact path
		// below gives too, without a big.Rat a value.
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			return "0"
		}
		return s
	}
	return canonDecimalExact(s)
}

// canonDecimalExact is canonDecimal for any form big.Rat reads.
func canonDecimalExact(s string) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return s
	}
	if r.IsInt() {
		return r.Num().String()
	}
	out := r.FloatString(38)
	out = strings.TrimRight(out, "0")
	return strings.TrimSuffix(out, ".")
}

// plainDecimal reports an optional minus, digits without a leading zero (but a lone 0), and
// optionally a point with digits.
func plainDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') || (dot && frac == "") {
		return false
	}
	for _, part := range []string{intPart, frac} {
		for _, c := range part {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// icebergReader reads a registered Iceberg table through iceberg-go's scan.
type icebergReader struct {
	tables   *tables.Service
	asset    uuid.UUID
	snapshot *int64 // an archive's snapshot; nil: the current one
	spec     *Spec
	// pinned is the snapshot the run's first read took: every later read of the run reads it
	// too, so both passes see the same data.
	pinned *int64
}

// pin opens the table at the run's snapshot (taking it on the first call).
func (r *icebergReader) pin(ctx context.Context) (*table.Table, *table.Snapshot, error) {
	live, err := r.tables.Open(ctx, r.asset)
	if err != nil {
		return nil, nil, err
	}
	want := r.pinned
	if want == nil {
		want = r.snapshot
	}
	if want == nil {
		snap := live.Table.CurrentSnapshot()
		if snap != nil {
			id := snap.SnapshotID
			r.pinned = &id
		}
		return live.Table, snap, nil
	}
	snap := live.Table.Metadata().SnapshotByID(*want)
	if snap == nil {
		return nil, nil, fmt.Errorf("the Iceberg table has no snapshot %d (expired?)", *want)
	}
	r.pinned = want
	return live.Table, snap, nil
}

// scan opens a scan of the run's snapshot for the records of the spans [from, to), with the
// columns in names' order (the time, the keys, the compared columns); a nil sequence for an
// empty table.
func (r *icebergReader) scan(ctx context.Context, spans ...[2]time.Time) (names []string, records iter.Seq2[arrow.RecordBatch, error], err error) {
	tbl, snap, err := r.pin(ctx)
	if err != nil || snap == nil {
		return nil, nil, err // no snapshot: an empty table
	}
	names = append(append([]string{r.spec.TimeColumn}, r.spec.KeyColumns...), r.spec.Columns...)
	// Small batches, two files at a time: a worker holds a whole file's batches (iceberg-go),
	// and the run's memory should not grow with the files' size.
	opts := []table.ScanOption{table.WithSelectedFields(names...), table.WithArrowBatchSize(16_384), table.WithMaxConcurrency(2)}
	if f, ok := tbl.Schema().FindFieldByName(r.spec.TimeColumn); ok {
		switch f.Type.(type) {
		case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			// Pushed into the scan: files whose time bounds miss [from, to) are not read. Rows are
			// still checked below (the filter is exact for these types, the check is cheap).
			ref := iceberg.Reference(r.spec.TimeColumn)
			var filter iceberg.BooleanExpression
			for _, sp := range spans {
				in := iceberg.NewAnd(iceberg.GreaterThanEqual(ref, iceberg.Timestamp(sp[0].UnixMicro())),
					iceberg.LessThan(ref, iceberg.Timestamp(sp[1].UnixMicro())))
				if filter == nil {
					filter = in
				} else {
					filter = iceberg.NewOr(filter, in)
				}
			}
			opts = append(opts, table.WithRowFilter(filter))
		}
	}
	opts = append(opts, table.WithSnapshotID(snap.SnapshotID))
	_, records, err = tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("scan the Iceberg table: %w", err)
	}
	return names, records, nil
}

// columnsOf are a batch's columns in names' order.
func columnsOf(rec arrow.RecordBatch, names []string) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(names))
	for i, n := range names {
		idx := rec.Schema().FieldIndices(n)
		if len(idx) == 0 {
			return nil, fmt.Errorf("the Iceberg table has no column %q", n)
		}
		cols[i] = rec.Column(idx[0])
	}
	return cols, nil
}

func (r *icebergReader) read(ctx context.Context, from, to time.Time, fn func(row)) (int64, error) {
	return r.readSpans(ctx, [][2]time.Time{{from, to}}, fn)
}

// readSpans reads the records of several spans in one scan (a data file holding more than one
// of them is read once).
func (r *icebergReader) readSpans(ctx context.Context, spans [][2]time.Time, fn func(row)) (int64, error) {
	names, records, err := r.scan(ctx, spans...)
	if err != nil || records == nil {
		return 0, err
	}
	var bytes int64
	for rec, err := range records {
		if err != nil {
			return bytes, fmt.Errorf("scan the Iceberg table: %w", err)
		}
		cols, err := columnsOf(rec, names)
		if err != nil {
			rec.Release()
			return bytes, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			ts := canonArrow(cols[0], i)
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				rec.Release()
				return bytes, fmt.Errorf("the time column %s is not a timestamp", r.spec.TimeColumn)
			}
			if !inSpans(at, spans) {
				continue
			}
			rw := row{at: at, vals: make([]string, len(names)-1)}
			for c := 1; c < len(names); c++ {
				rw.vals[c-1] = canonArrow(cols[c], i)
				bytes += int64(len(rw.vals[c-1]))
			}
			fn(rw)
		}
		rec.Release()
	}
	return bytes, nil
}

// inSpans reports whether t falls in one of the spans [from, to).
func inSpans(t time.Time, spans [][2]time.Time) bool {
	for _, sp := range spans {
		if !t.Before(sp[0]) && t.Before(sp[1]) {
			return true
		}
	}
	return false
}

// size is the records of the table's current snapshot (or its archive snapshot), from the
// snapshot summary; 0 when it says nothing.
func (r *icebergReader) size(ctx context.Context) int64 {
	_, snap, err := r.pin(ctx)
	if err != nil || snap == nil || snap.Summary == nil {
		return 0
	}
	n, err := strconv.ParseInt(snap.Summary.Properties["total-records"], 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// canonArrow writes the i-th value of an Arrow column as canonical text.
func canonArrow(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return null
	}
	switch c := a.(type) {
	case *array.Int64:
		return strconv.FormatInt(c.Value(i), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(c.Value(i)), 10)
	case *array.Float64:
		return strconv.FormatFloat(c.Value(i), 'g', -1, 64)
	case *array.Float32:
		return strconv.FormatFloat(float64(c.Value(i)), 'g', -1, 32)
	case *array.Boolean:
		return strconv.FormatBool(c.Value(i))
	case *array.String:
		return c.Value(i)
	case *array.LargeString:
		return c.Value(i)
	case *array.Decimal128:
		scale := c.DataType().(*arrow.Decimal128Type).Scale
		return canonDecimal(c.Value(i).ToString(scale))
	case *array.Timestamp:
		unit := c.DataType().(*arrow.TimestampType).Unit
		return canonTime(c.Value(i).ToTime(unit))
	case *array.Date32:
		return c.Value(i).ToTime().Format("2006-01-02")
	}
	return a.ValueStr(i)
}

// sqlCanon is the SQL that writes a column of a PostgreSQL type in the canonical text canonSQL
// gives it in Go, or "" for a type without one here (floats, whose shortest text differs
// between Go and PostgreSQL; blank-padded char; arrays, JSON and the rest): their sides are
// streamed and hashed in Go instead.
func sqlCanon(col, dbType string) string {
	c := pq.QuoteIdentifier(col)
	const ts = `'YYYY-MM-DD"T"HH24:MI:SS.US'`
	switch dbType {
	case "INT2", "INT4", "INT8", "TEXT", "VARCHAR", "BOOL", "UUID":
		return c + "::text"
	case "NUMERIC":
		return "trim_scale(" + c + ")::text"
	case "DATE":
		return "to_char(" + c + ", 'YYYY-MM-DD')"
	case "TIMESTAMPTZ":
		return "rtrim(rtrim(to_char(" + c + " AT TIME ZONE 'UTC', " + ts + "), '0'), '.') || 'Z'"
	case "TIMESTAMP":
		return "rtrim(rtrim(to_char(" + c + ", " + ts + "), '0'), '.') || 'Z'"
	}
	return ""
}

// sqlTime is the SQL for the time column as a UTC timestamp, or "" for a column of another type.
func sqlTime(col, dbType string) string {
	c := pq.QuoteIdentifier(col)
	switch dbType {
	case "TIMESTAMPTZ":
		return "(" + c + " AT TIME ZONE 'UTC')"
	case "TIMESTAMP":
		return c
	}
	return ""
}

// columnTypes are the PostgreSQL types of the time column, the keys and the compared columns, in
// that order: probed on the first call of a run, then remembered.
func (p *postgresReader) columnTypes(ctx context.Context) ([]string, error) {
	if p.types != nil {
		return p.types, nil
	}
	names := append(append([]string{p.spec.TimeColumn}, p.spec.KeyColumns...), p.spec.Columns...)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = pq.QuoteIdentifier(n)
	}
	probe, err := p.db.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s LIMIT 0", strings.Join(quoted, ", "), quoteTable(p.table)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p.table, err)
	}
	defer probe.Close()
	types, err := probe.ColumnTypes()
	if err != nil {
		return nil, err
	}
	p.types = make([]string, len(types))
	for i, t := range types {
		p.types[i] = t.DatabaseTypeName()
	}
	return p.types, nil
}

// intType is a PostgreSQL integer type: its values hash as integers.
func intType(dbType string) bool { return dbType == "INT2" || dbType == "INT4" || dbType == "INT8" }

// base is the query of every record of [$1, $2) (or of spans such ranges, $1 to $2*spans) as
// (w, k, h): its window's start, its key's hash and its record's hash, all computed by
// PostgreSQL with the hashes hashing.go describes; false when a column has no canonical form in
// SQL. Nothing in it is numeric arithmetic or text formatting but the columns that hash as text:
// date_bin bins the time exactly, and timestamp_hash_extended hashes it as the integer
// PostgreSQL stores.
func (p *postgresReader) base(ctx context.Context, spans int) (string, bool, error) {
	names := append(append([]string{p.spec.TimeColumn}, p.spec.KeyColumns...), p.spec.Columns...)
	types, err := p.columnTypes(ctx)
	if err != nil {
		return "", false, err
	}
	ts := sqlTime(names[0], types[0])
	if ts == "" {
		return "", false, nil
	}
	hashes := make([]string, len(names))
	hashes[0] = fmt.Sprintf("timestamp_hash_extended(c0, %d)", int64(seedOf(0)))
	for i := 1; i < len(names); i++ {
		var h string
		kind := p.spec.hashing.kind(i - 1)
		switch {
		case kind == kindInt && intType(types[i]):
			h = fmt.Sprintf("hashint8extended(c%d::int8, %d)", i, int64(seedOf(i)))
		case kind == kindNumeric && types[i] == "NUMERIC":
			h = fmt.Sprintf("hash_numeric_extended(c%d, %d) # CASE WHEN c%d < 0 THEN %d WHEN c%d = 'Infinity' THEN %d ELSE 0 END",
				i, int64(seedOf(i)), i, int64(negativeMark), i, int64(infinityMark))
		case kind != kindText:
			// The plan would hash this column's numbers as numbers, which PostgreSQL cannot tell
			// from its text here: the plan was made without this side.
			return "", false, fmt.Errorf("reconcile: no hash plan for %s's column %s", p.table, names[i])
		default:
			c := sqlCanon(fmt.Sprintf("c%d", i), types[i])
			if c == "" {
				return "", false, nil
			}
			h = fmt.Sprintf("hashtextextended((%s) COLLATE \"C\", %d)", c, int64(seedOf(i)))
		}
		hashes[i] = fmt.Sprintf("coalesce(%s, %d)", h, int64(nullHash(i)))
	}
	key := "0"
	if k := len(p.spec.KeyColumns); k > 0 {
		key = strings.Join(hashes[1:1+k], " # ")
	}
	tc := pq.QuoteIdentifier(names[0])
	cols := make([]string, 0, len(names)-1)
	for i, n := range names[1:] {
		cols = append(cols, fmt.Sprintf("%s AS c%d", pq.QuoteIdentifier(n), i+1))
	}
	// w: the window's start; k: the key's hash with its low winBits cleared (the bits Go keeps
	// for a key); h: the record's.
	within := make([]string, max(spans, 1))
	for i := range within {
		within[i] = fmt.Sprintf("%s >= $%d AND %s < $%d", tc, 2*i+1, tc, 2*i+2)
	}
	base := fmt.Sprintf(`SELECT %s AS w, (%s) & (%d)::bigint AS k, %s AS h
		FROM (SELECT %s, %s AS c0, %s FROM %s WHERE (%s)) r0`,
		p.windowOf(tc, types[0]), key, int64(-1)<<winBits, strings.Join(hashes, " # "),
		tc, ts, strings.Join(cols, ", "), quoteTable(p.table), strings.Join(within, ") OR ("))
	return base, true, nil
}

// windowOf is the SQL for the start of the window a time column's value falls in (exact:
// date_bin works on the microseconds PostgreSQL stores).
func (p *postgresReader) windowOf(col, dbType string) string {
	return fmt.Sprintf("date_bin('%d seconds', %s, '%s'::%s)", p.spec.WindowSeconds, col, p.spec.Since.UTC().Format(time.RFC3339Nano), timeCast(dbType))
}

// timeCast is the SQL type of a time column's values: window starts compare as that type (a
// zone-less timestamp holds UTC here).
func timeCast(dbType string) string {
	if dbType == "TIMESTAMP" {
		return "timestamp"
	}
	return "timestamptz"
}

// figures has PostgreSQL compute the side's figures for [from, to) itself: one aggregate over
// the windows and, unless a unique index proves no key repeats, a distinct count of the keys
// first (repeats.go: then one aggregate over the keys that repeat, if any do); nothing but the
// figures crosses the wire. With a change log (changelog.go) on a side whose
// keys are proved unique, it reads only the windows a transaction changed since prev's snapshot
// (nil: no previous run to start from) and reuses prev's figures for the others. It answers
// false when a column has no canonical form in SQL (the caller streams the side).
func (p *postgresReader) figures(ctx context.Context, src SourceSpec, from, to time.Time, prev *prevSide) (sideFigures, bool, error) {
	// One snapshot for every query below: the repeated keys found are those of the records
	// counted (a read-only transaction at this level never fails to serialize).
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead})
	if err != nil {
		return sideFigures{}, false, fmt.Errorf("open a read-only transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	unique, err := p.uniqueKeys(ctx, tx)
	if err != nil {
		return sideFigures{}, false, err
	}
	out := sideFigures{windows: map[int64]*figure{}, repeated: map[int64]bool{}, repeatedSegs: map[segKey]bool{}, pushed: true}
	spans := [][2]time.Time{{from, to}}
	if src.ChangeLog != "" {
		if spans, err = p.logged(ctx, tx, src, from, to, unique, prev, &out); err != nil {
			return sideFigures{}, false, err
		}
	}
	base, ok, err := p.base(ctx, len(spans))
	if err != nil || !ok {
		return sideFigures{}, false, err
	}
	if len(spans) == 0 {
		return out, true, nil // no window changed since the previous run
	}
	args := make([]any, 0, 2*len(spans))
	for _, sp := range spans {
		args = append(args, sp[0], sp[1])
	}
	// A distinct count keeps PostgreSQL from aggregating by hashing and sorts every window's
	// keys: with a unique index it is the row count, and nothing repeats; on a unique side
	// whose keys all differ it is the row count too, and else the repeated keys, found first,
	// say how far below it is.
	keys := "count(DISTINCT k)"
	var extra map[int64]int64
	switch {
	case unique:
		keys = "count(*)"
	case src.Keys == UniqueKeys:
		var none, byKey bool
		if none, err = p.noRepeats(ctx, tx, base, args); err != nil {
			return sideFigures{}, false, err
		} else if none {
			keys, extra = "count(*)", map[int64]int64{}
		} else if extra, byKey, err = p.repeatsByKey(ctx, tx, base, args, &out); err != nil {
			return sideFigures{}, false, err
		} else if byKey {
			keys = "count(*)"
		}
	}
	// With few enough windows, the same scan gives every segment's figures too (a key's
	// segment is its hash's top bits, so distinct keys add up over segments): the second pass
	// then reads nothing from this side but the records of the windows that differ.
	seg := "0"
	if windowIndex(p.spec, to.Add(-time.Nanosecond))-windowIndex(p.spec, from) < maxFoldedWindows {
		seg = fmt.Sprintf("(k >> %d) & %d", 64-segBits, 1<<segBits-1)
		out.segs, out.segsAll = map[segKey]segFig{}, true
	}
	if err := p.aggregate(ctx, tx, base, args, seg, keys, &out); err != nil {
		return sideFigures{}, false, err
	}
	if unique {
		return out, true, nil // no versions, no repeated keys
	}
	if extra != nil {
		for w, n := range extra {
			if f := out.windows[w]; f != nil {
				f.keys -= n
			}
		}
		return out, true, nil // the repeated keys are known
	}
	if err := p.repeatsByWindow(ctx, tx, base, src, from, to, &out); err != nil {
		return sideFigures{}, false, err
	}
	return out, true, nil
}

// aggregate runs the figures' one scan over base, grouped by window and seg (the segment's
// expression, or 0), counting keys with keys, into out.
func (p *postgresReader) aggregate(ctx context.Context, tx *sql.Tx, base string, args []any, seg, keys string, out *sideFigures) error {
	if keys == "count(*)" {
		// PostgreSQL takes the groups for as many as the records (it cannot tell that a
		// window and a segment are few), so it would sort every record, spilling to disk;
		// there are at most maxFoldedWindows*64 groups (or a group a window), which a hash
		// aggregate holds in work_mem (it spills past that). For this query only.
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_sort = off"); err != nil {
			return fmt.Errorf("count %s: %w", p.table, err)
		}
		defer tx.ExecContext(ctx, "RESET enable_sort") //nolint:errcheck // the transaction only reads, and ends soon
	}
	rows, err := tx.QueryContext(ctx, "SELECT w, "+seg+", count(*), "+keys+", sum(h)::text FROM ("+base+") r GROUP BY 1, 2", args...)
	if err != nil {
		return fmt.Errorf("count %s: %w", p.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			at  time.Time
			k   segKey
			f   figure
			sum string
		)
		if err := rows.Scan(&at, &k.seg, &f.rows, &f.keys, &sum); err != nil {
			return fmt.Errorf("count %s: %w", p.table, err)
		}
		if f.sum, err = sumOf(sum); err != nil {
			return err
		}
		k.w = windowIndex(p.spec, at)
		if out.segs != nil {
			out.segs[k] = segFig{rows: f.rows, sum: f.sum}
		}
		w := out.windows[k.w]
		if w == nil {
			w = &figure{}
			out.windows[k.w] = w
		}
		w.rows, w.keys, w.sum = w.rows+f.rows, w.keys+f.keys, w.sum+f.sum
		out.counted += f.rows
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count %s: %w", p.table, err)
	}
	return nil
}

// repeatsByWindow counts a history side's versions and finds the windows (and segments) of the
// keys that repeat on the side, or of the same record twice on a history side, at most
// maxRepeatedKeys of them: past that the side is duplication throughout anyway.
func (p *postgresReader) repeatsByWindow(ctx context.Context, tx *sql.Tx, base string, src SourceSpec, from, to time.Time, out *sideFigures) error {
	if src.Keys == HistoryKeys {
		// Versions: every record but the first of its key's earliest window (the same record twice is
		// counted here too; it is duplication, and the second pass reads its window anyway).
		vs, err := tx.QueryContext(ctx, `SELECT w, count(*) FROM (SELECT w, row_number() OVER (PARTITION BY k ORDER BY w, h) AS n
			FROM (`+base+`) r) v WHERE n > 1 GROUP BY w`, from, to)
		if err != nil {
			return fmt.Errorf("count versions in %s: %w", p.table, err)
		}
		defer vs.Close()
		for vs.Next() {
			var (
				at time.Time
				n  int64
			)
			if err := vs.Scan(&at, &n); err != nil {
				return err
			}
			w := windowIndex(p.spec, at)
			if f := out.windows[w]; f != nil {
				f.versions = n
			}
		}
		if err := vs.Err(); err != nil {
			return err
		}
		vs.Close()
	}
	// The windows of repeated keys (unique side) or of the same record twice (history), at most
	// maxRepeatedKeys of them: past that the side is duplication throughout anyway.
	group := "k"
	if src.Keys == HistoryKeys {
		group = "k, h"
	}
	rep, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT DISTINCT unnest(ws), (k >> %d) & %d FROM (SELECT k, array_agg(DISTINCT w) AS ws FROM (%s) r
		GROUP BY %s HAVING count(*) > 1 LIMIT %d) d`, 64-segBits, 1<<segBits-1, base, group, maxRepeatedKeys), from, to)
	if err != nil {
		return fmt.Errorf("find repeated keys in %s: %w", p.table, err)
	}
	defer rep.Close()
	for rep.Next() {
		var (
			at  time.Time
			seg int64
		)
		if err := rep.Scan(&at, &seg); err != nil {
			return err
		}
		w := windowIndex(p.spec, at)
		out.repeated[w] = true
		out.repeatedSegs[segKey{w, seg}] = true
	}
	return rep.Err()
}

// uniqueKeys reports whether a valid unique index of the table covers only key columns that
// are NOT NULL (a unique index lets NULLs repeat): then no key can repeat on this side, and
// counting distinct keys and looking for repeated ones is work that cannot find anything.
func (p *postgresReader) uniqueKeys(ctx context.Context, tx *sql.Tx) (bool, error) {
	var ok bool
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = $1::regclass
		AND i.indisunique AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL
		AND NOT EXISTS (SELECT 1 FROM unnest(i.indkey::int2[]) WITH ORDINALITY u(att, n)
			LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = u.att
			WHERE u.n <= i.indnkeyatts AND (a.attname IS NULL OR NOT a.attnotnull OR NOT a.attname = ANY($2))))`,
		quoteTable(p.table), pq.Array(p.spec.KeyColumns)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read the unique indexes of %s: %w", p.table, err)
	}
	return ok, nil
}

// windowSpan is the time span of the windows ws, cut at now, and their starts as a query
// parameter: the second pass reads its windows in one scan of the span, not one a range.
func windowSpan(spec *Spec, ws []int64, now time.Time) (from, to time.Time, starts any) {
	from, to = windowStart(spec, slices.Min(ws)), windowStart(spec, slices.Max(ws)+1)
	if to.After(now) {
		to = now // what the first pass counted
	}
	texts := make([]string, len(ws))
	for i, w := range ws {
		texts[i] = windowStart(spec, w).UTC().Format(time.RFC3339Nano)
	}
	return from, to, pq.Array(texts)
}

// segments has PostgreSQL compute the figures of every key-range segment of the windows ws
// (ascending) itself, in one scan (the second pass's bisection); false when the side cannot.
func (p *postgresReader) segments(ctx context.Context, ws []int64, now time.Time, into map[segKey]segFig) (bool, error) {
	tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, fmt.Errorf("open a read-only transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	base, ok, err := p.base(ctx, 1)
	if err != nil || !ok {
		return false, err
	}
	from, to, arr := windowSpan(p.spec, ws, now)
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT w, (k >> %d) & %d, count(*), sum(h)::text FROM (%s) r WHERE w = ANY($3::%s[]) GROUP BY 1, 2",
		64-segBits, 1<<segBits-1, base, timeCast(p.types[0])), from, to, arr)
	if err != nil {
		return false, fmt.Errorf("count %s by segment: %w", p.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			at  time.Time
			k   segKey
			f   segFig
			sum string
		)
		if err := rows.Scan(&at, &k.seg, &f.rows, &sum); err != nil {
			return false, err
		}
		k.w = windowIndex(p.spec, at)
		if f.sum, err = sumOf(sum); err != nil {
			return false, err
		}
		into[k] = f
	}
	return true, rows.Err()
}

// readWindows reads the records of the windows ws in one scan; only for a side
// whose time column is a timestamp (one PostgreSQL computed figures for).
func (p *postgresReader) readWindows(ctx context.Context, ws []int64, now time.Time, fn func(row)) (int64, error) {
	types, err := p.columnTypes(ctx)
	if err != nil {
		return 0, err
	}
	from, to, arr := windowSpan(p.spec, ws, now)
	where := fmt.Sprintf("%s = ANY($3::%s[])", p.windowOf(pq.QuoteIdentifier(p.spec.TimeColumn), types[0]), timeCast(types[0]))
	return p.query(ctx, where, fn, from, to, arr)
}

// maxFoldedWindows bounds the windows whose segment figures PostgreSQL's first pass computes
// (64 rows each in its answer).
const maxFoldedWindows = 1024

// maxRepeatedKeys bounds the repeated keys whose windows the pushed-down pass reports.
const maxRepeatedKeys = 100_000
