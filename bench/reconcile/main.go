// Command reconcile measures a reconciliation run over a 10M-row pair: the same orders in a
// PostgreSQL table (the old side) and an Iceberg table written with iceberg-go (the new side),
// with a few staged differences on the new side (a changed amount, a missing order, a retry a
// day later, a time moved by 2 h). It prints each run's time, what it read and the process's
// peak RSS during the runs, next to a plain SELECT count(*) ... GROUP BY window on the PostgreSQL
// side, the two run alternately, medians; then rounds of one more day of orders on both sides,
// each followed by an incremental run (a change log on the PostgreSQL side, the snapshots on the
// Iceberg side) and a full run, medians and their ratio.
//
//	go run ./bench/reconcile -postgres 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
//	go run ./bench/reconcile -rows 100000   # smaller
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

var (
	admin = flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to create databases")
	rows  = flag.Int("rows", 10_000_000, "orders on each side")
	days  = flag.Int("days", 100, "days the orders span (one window a day)")
	runs  = flag.Int("runs", 3, "runs of each side, alternately")
	keep  = flag.Bool("keep", false, "keep the databases")
	prof  = flag.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	pkey  = flag.Bool("primary-key", true, "give the PostgreSQL table its primary key on order_id (false: no unique index, so PostgreSQL counts distinct keys and looks for repeated ones)")
	clog  = flag.Bool("change-log", true, "install a change log on the PostgreSQL table and name it in the migrations, so a run after more orders reads again only the changed windows")
	tidx  = flag.Bool("time-index", true, "index the PostgreSQL table's ordered_at (what an orders table has; lets a run read a few windows without a full scan)")
	incr  = flag.Int("incremental-rounds", 3, "rounds of one more day of orders, then an incremental run and a full run of a fresh migration")
)

// The staged differences on the new side, by order number.
const (
	changed = 777   // its amount is a cent more
	missing = 1234  // not written
	retried = 5000  // written again a day later
	shifted = 99999 // its time is 2 h later
)

// order is the i-th order: the same on both sides (amounts in cents).
func order(start time.Time, stepMicros int64, i int) (time.Time, int64, string) {
	return start.Add(time.Duration(int64(i)*stepMicros) * time.Microsecond), int64((10+i%990)*100 + i%100), fmt.Sprintf("customer-%d", i%5000)
}

// peakRSS is the process's peak resident set since the last resetPeak, from /proc (Linux).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")), "%d", &kb)
			return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
		}
	}
	return "unknown"
}

// resetPeak starts peakRSS over (Linux: writing 5 to clear_refs resets VmHWM to the current RSS).
func resetPeak() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func main() {
	flag.Parse()
	if *admin == "" {
		log.Fatal("set -postgres or TIDEMARK_TEST_POSTGRES")
	}
	ctx := context.Background()
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	stepMicros := int64(*days) * 86400 * 1_000_000 / int64(*rows)
	p := &pair{ctx: ctx, start: start, stepMicros: stepMicros}

	// The old side: a PostgreSQL table, written by PostgreSQL itself (generate_series).
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_orders", *keep)
	defer drop()
	pg, err := sql.Open("postgres", dsn)
	benchdb.Must(err)
	defer pg.Close()
	p.pg = pg
	_, err = pg.ExecContext(ctx, `CREATE TABLE public.orders (order_id bigint NOT NULL, ordered_at timestamptz NOT NULL, amount numeric(10,2), customer text)`)
	benchdb.Must(err)
	t0 := time.Now()
	p.oldSide(0, *rows)
	if *pkey {
		_, err = pg.ExecContext(ctx, `ALTER TABLE public.orders ADD PRIMARY KEY (order_id)`)
		benchdb.Must(err)
	}
	if *tidx {
		_, err = pg.ExecContext(ctx, `CREATE INDEX ON public.orders (ordered_at)`)
		benchdb.Must(err)
	}
	if *clog {
		script, err := reconcile.ChangeLogSQL("public.orders", "ordered_at", "public.orders_changes", reconcile.DefaultChangeGrain)
		benchdb.Must(err)
		_, err = pg.ExecContext(ctx, script)
		benchdb.Must(err)
	}
	fmt.Printf("PostgreSQL side: %d orders over %d days written in %s (primary key on order_id: %v, index on ordered_at: %v, change log: %v)\n",
		*rows, *days, time.Since(t0).Round(time.Millisecond), *pkey, *tidx, *clog)

	// The new side: an Iceberg table with the same orders, written with iceberg-go.
	dir, err := os.MkdirTemp("", "tidemark-bench-reconcile-")
	benchdb.Must(err)
	if !*keep {
		defer os.RemoveAll(dir)
	}
	p.tbl = createTable(ctx, dir)
	t0 = time.Now()
	p.sc, err = table.SchemaToArrowSchema(p.tbl.Schema(), nil, false, false)
	benchdb.Must(err)
	p.newSide(0, *rows, true)
	fmt.Printf("Iceberg side: %d orders written with iceberg-go in %s (staged: order %d's amount, order %d missing, order %d retried a day later, order %d 2 h later)\n",
		*rows, time.Since(t0).Round(time.Millisecond), changed, missing, retried, shifted)

	// Tidemark over its own SQLite database.
	db := benchdb.Open(ctx, filepath.Join(dir, "tidemark.db"))
	defer db.Close()
	p.tidemark(db, dir)

	runtime.GC()
	resetPeak()
	if *prof != "" {
		f, err := os.Create(*prof)
		benchdb.Must(err)
		benchdb.Must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	m, _ := p.fullRuns()
	p.moreDays(m)
}

// pair is the run's state: the two sides, how the orders are laid out in time, and Tidemark over
// them on a clock the run moves.
type pair struct {
	ctx        context.Context
	start      time.Time // the first order's time
	stepMicros int64     // between consecutive orders
	pg         *sql.DB   // the old side's database
	tbl        *table.Table
	sc         *arrow.Schema // tbl's, for writing to it

	now   time.Time // Tidemark's clock
	tbls  *tables.Service
	svc   *reconcile.Service
	fresh func() reconcile.Migration
}

// oldSide writes orders from to to-1 into the PostgreSQL table, and analyzes it.
func (p *pair) oldSide(from, to int) {
	ctx, pg, start, stepMicros := p.ctx, p.pg, p.start, p.stepMicros
	_, err := pg.ExecContext(ctx, `INSERT INTO public.orders SELECT i, $1::timestamptz + (i * $2::bigint) * interval '1 microsecond',
			((10 + i % 990) * 100 + i % 100) / 100.0, 'customer-' || (i % 5000) FROM generate_series($3::bigint, $4::bigint) i`, start, stepMicros, from, to-1)
	benchdb.Must(err)
	_, err = pg.ExecContext(ctx, "ANALYZE orders")
	benchdb.Must(err)
}

// createTable creates the empty Iceberg table of orders, in an iceberg-go SQL catalog on SQLite
// with its warehouse in dir.
func createTable(ctx context.Context, dir string) *table.Table {
	cdb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	benchdb.Must(err)
	icat, err := sqlcat.NewCatalog("bench", cdb, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	benchdb.Must(err)
	benchdb.Must(icat.CreateNamespace(ctx, table.Identifier{"db"}, nil))
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ordered_at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 4, Name: "customer", Type: iceberg.PrimitiveTypes.String})
	tbl, err := icat.CreateTable(ctx, table.Identifier{"db", "orders"}, schema)
	benchdb.Must(err)
	return tbl
}

// newSide appends orders from to to-1 to the Iceberg table, in batches; staged, with the staged
// differences.
func (p *pair) newSide(from, to int, staged bool) {
	ctx, start, stepMicros, sc := p.ctx, p.start, p.stepMicros, p.sc
	const batch = 500_000
	for lo := from; lo < to; lo += batch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		add := func(at time.Time, id, cents int64, customer string) {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixMicro()))
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(cents))
			b.Field(3).(*array.StringBuilder).Append(customer)
		}
		for i := lo; i < min(lo+batch, to); i++ {
			at, cents, customer := order(start, stepMicros, i)
			switch {
			case !staged:
			case i == missing:
				continue
			case i == changed:
				cents++
			case i == shifted:
				at = at.Add(2 * time.Hour)
			case i == retried:
				add(at.Add(24*time.Hour), int64(i), cents, customer)
			}
			add(at, int64(i), cents, customer)
		}
		rec := b.NewRecordBatch()
		b.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		benchdb.Must(err)
		p.tbl, err = p.tbl.Append(ctx, rdr, nil)
		benchdb.Must(err)
		rec.Release()
	}
}

// tidemark wires Tidemark over db on a clock of its own: the catalog, the tables and usage
// services and reconciliation over the two sides, both registered.
func (p *pair) tidemark(db *storage.DB, dir string) {
	ctx, start, pg := p.ctx, p.start, p.pg
	p.now = start.AddDate(0, 0, *days+1)
	clock := func() time.Time { return p.now }
	cat, err := catalog.New(db, catalog.WithClock(clock))
	benchdb.Must(err)
	tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(dir), tables.WithClock(clock))
	benchdb.Must(err)
	p.tbls = tbls
	use, err := usage.New(db, cat, usage.WithClock(clock))
	benchdb.Must(err)
	newT, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: p.tbl.MetadataLocation()})
	benchdb.Must(err)
	old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "postgres://bench:5432", Name: "bench.public.orders"})
	benchdb.Must(err)
	svc, err := reconcile.New(db, cat, tbls, use, reconcile.WithClock(clock), reconcile.WithConnection("bench", pg))
	benchdb.Must(err)
	p.svc = svc
	// A migration of its own for each timed run: its first run has no previous one, so it reads
	// both sides in full.
	p.fresh = func() reconcile.Migration {
		m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: newT.AssetID, Owner: "bench", Spec: reconcile.Spec{
			KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount", "customer"}, WindowSeconds: 86400, Since: start,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, LagBoundSeconds: 3600, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a benchmark"},
			Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "bench", Table: "public.orders", ChangeLog: changeLog()},
			New: reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}})
		benchdb.Must(err)
		return m
	}
}

// countQuery runs the plain count per window on the old side and returns how long it took and
// the windows it counted.
func (p *pair) countQuery() (time.Duration, int) {
	ctx, pg := p.ctx, p.pg
	t := time.Now()
	rs, err := pg.QueryContext(ctx, `SELECT floor(extract(epoch FROM ordered_at) / 86400), count(*) FROM orders GROUP BY 1`)
	benchdb.Must(err)
	n := 0
	for rs.Next() {
		n++
	}
	benchdb.Must(rs.Err())
	rs.Close()
	return time.Since(t), n
}

// fullRuns times full reconciliation runs, each of a fresh migration, and the count per window,
// alternately, and prints each run, the medians and what the last run found. It returns the
// last run and its migration.
func (p *pair) fullRuns() (reconcile.Migration, reconcile.Run) {
	ctx, svc := p.ctx, p.svc
	var m reconcile.Migration
	var recon, count []time.Duration
	var last reconcile.Run
	fmt.Printf("\n%-4s %-46s %10s %12s %12s %10s %8s\n", "run", "side", "time", "rows read", "counted", "windows", "deep")
	for i := range *runs {
		m = p.fresh()
		t := time.Now()
		r, err := svc.Reconcile(ctx, m.ID)
		benchdb.Must(err)
		recon = append(recon, time.Since(t))
		last = r
		fmt.Printf("%-4d %-46s %10s %12d %12d %10d %8d\n", i+1, "Tidemark reconciliation (full)", recon[i].Round(time.Millisecond),
			r.Cost.RowsOld+r.Cost.RowsNew, r.Cost.Counted, len(r.Windows), r.Cost.Deep)
		c, n := p.countQuery()
		count = append(count, c)
		fmt.Printf("%-4d %-46s %10s %12s %12d %10d\n", i+1, "SELECT count(*) GROUP BY day (old side only)", c.Round(time.Millisecond), "", *rows, n)
	}
	peak := peakRSS()
	slices.Sort(recon)
	slices.Sort(count)
	r, c := recon[len(recon)/2], count[len(count)/2]
	fmt.Printf("\nmedians of %d runs: reconciliation %s vs count per window %s: %.1fx its time; peak RSS during the runs %s\n",
		*runs, r.Round(time.Millisecond), c.Round(time.Millisecond), r.Seconds()/c.Seconds(), peak)
	fmt.Printf("the full run compared %d records (PostgreSQL counted and hashed %d itself), read %d into Tidemark, %d windows record by record; clean %v; windows per class %v\n",
		last.Cost.Compared, last.Cost.Counted, last.Cost.RowsOld+last.Cost.RowsNew, last.Cost.Deep, last.Clean, last.Summary.Classes)
	for _, cause := range last.Causes {
		fmt.Println("  ", cause)
	}
	return m, last
}

// changeLog is the change log the migrations name, if -change-log.
func changeLog() string {
	if *clog {
		return "public.orders_changes"
	}
	return ""
}

// moreDays writes one more day of orders on both sides a round (1% of the windows), then times a
// run of m (incremental: it reuses what the run before it read of the unchanged windows) and a
// full run of a fresh migration, and prints both, what each read, and the medians' ratio.
func (p *pair) moreDays(m reconcile.Migration) {
	ctx, svc := p.ctx, p.svc
	perDay := *rows / *days
	var inc, full []time.Duration
	fmt.Printf("\n%-4s %-34s %10s %12s %12s %9s %9s\n", "day", "run", "time", "rows read", "counted", "reused", "deep")
	for i := range *incr {
		from := *rows + i*perDay
		p.oldSide(from, from+perDay)
		p.newSide(from, from+perDay, false)
		_, _, err := p.tbls.Register(ctx, tables.RegisterInput{MetadataLocation: p.tbl.MetadataLocation()})
		benchdb.Must(err)
		p.now = p.now.AddDate(0, 0, 1)
		for _, side := range []struct {
			name string
			m    reconcile.Migration
			into *[]time.Duration
		}{{"incremental (the same migration)", m, &inc}, {"full (a fresh migration)", p.fresh(), &full}} {
			t := time.Now()
			r, err := svc.Reconcile(ctx, side.m.ID)
			benchdb.Must(err)
			*side.into = append(*side.into, time.Since(t))
			fmt.Printf("+%-3d %-34s %10s %12d %12d %4d/%-4d %4d/%-4d  clean %v %v\n", i+1, side.name, time.Since(t).Round(time.Millisecond), r.Cost.RowsOld+r.Cost.RowsNew,
				r.Cost.Counted, r.Cost.ReusedOld, r.Cost.Reused, r.Cost.Deep, r.Cost.ReusedDeep, r.Clean, r.Summary.Classes)
			if side.m.ID == m.ID {
				for _, n := range r.Cost.ChangeLog {
					fmt.Println("     change log:", n)
				}
			}
		}
	}
	if len(inc) == 0 {
		return
	}
	slices.Sort(inc)
	slices.Sort(full)
	a, b := inc[len(inc)/2], full[len(full)/2]
	fmt.Printf("\nafter one more day (%d orders a side, 1%% of the windows), medians of %d: incremental run %s vs full run %s: %.1f%% of its time (target 10%%); reused: old/new windows whose figures were the previous run's; deep: windows compared record by record / comparisons reused\n",
		perDay, len(inc), a.Round(time.Millisecond), b.Round(time.Millisecond), 100*a.Seconds()/b.Seconds())
}
