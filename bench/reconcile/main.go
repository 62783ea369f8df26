// Command reconcile measures a reconciliation run over a 1M-row pair: the same orders in a
// PostgreSQL table (the old side) and an Iceberg table written with iceberg-go (the new side).
// It prints what each run read (rows, bytes, seconds) next to a plain
// SELECT count(*) ... GROUP BY window on the PostgreSQL side, the two run alternately, medians.
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
	"slices"
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
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

var (
	admin = flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to create databases")
	rows  = flag.Int("rows", 1_000_000, "orders on each side")
	days  = flag.Int("days", 30, "days the orders span (one window a day)")
	runs  = flag.Int("runs", 3, "runs of each side, alternately")
	keep  = flag.Bool("keep", false, "keep the databases")
)

func main() {
	flag.Parse()
	if *admin == "" {
		log.Fatal("set -postgres or TIDEMARK_TEST_POSTGRES")
	}
	ctx := context.Background()
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	step := time.Duration(*days) * 24 * time.Hour / time.Duration(*rows)

	// The old side: a PostgreSQL table, loaded with COPY.
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_orders", *keep)
	defer drop()
	pg, err := sql.Open("postgres", dsn)
	benchdb.Must(err)
	defer pg.Close()
	_, err = pg.ExecContext(ctx, `CREATE TABLE public.orders (order_id bigint NOT NULL, ordered_at timestamptz NOT NULL, amount numeric(10,2), customer text)`)
	benchdb.Must(err)
	t0 := time.Now()
	tx, err := pg.BeginTx(ctx, nil)
	benchdb.Must(err)
	stmt, err := tx.PrepareContext(ctx, benchdb.CopyStatement("orders", "order_id", "ordered_at", "amount", "customer"))
	benchdb.Must(err)
	for i := range *rows {
		_, err := stmt.ExecContext(ctx, i, start.Add(time.Duration(i)*step), fmt.Sprintf("%d.%02d", 10+i%990, i%100), fmt.Sprintf("customer-%d", i%5000))
		benchdb.Must(err)
	}
	_, err = stmt.ExecContext(ctx)
	benchdb.Must(err)
	benchdb.Must(tx.Commit())
	_, err = pg.ExecContext(ctx, "ANALYZE orders")
	benchdb.Must(err)
	fmt.Printf("PostgreSQL side: %d orders over %d days loaded in %s\n", *rows, *days, time.Since(t0).Round(time.Millisecond))

	// The new side: an Iceberg table with the same orders, written with iceberg-go.
	dir, err := os.MkdirTemp("", "tidemark-bench-reconcile-")
	benchdb.Must(err)
	if !*keep {
		defer os.RemoveAll(dir)
	}
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
	t0 = time.Now()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	benchdb.Must(err)
	const batch = 250_000
	for from := 0; from < *rows; from += batch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := from; i < min(from+batch, *rows); i++ {
			b.Field(0).(*array.Int64Builder).Append(int64(i))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(start.Add(time.Duration(i) * step).UnixMicro()))
			b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64((10+i%990)*100 + i%100)))
			b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("customer-%d", i%5000))
		}
		rec := b.NewRecordBatch()
		b.Release()
		rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
		benchdb.Must(err)
		tbl, err = tbl.Append(ctx, rdr, nil)
		benchdb.Must(err)
		rec.Release()
	}
	fmt.Printf("Iceberg side: %d orders written with iceberg-go in %s\n", *rows, time.Since(t0).Round(time.Millisecond))

	// Tidemark over its own SQLite database.
	db := benchdb.Open(ctx, filepath.Join(dir, "tidemark.db"))
	defer db.Close()
	now := start.AddDate(0, 0, *days+1)
	clock := func() time.Time { return now }
	cat := catalog.New(db.Client, catalog.WithClock(clock))
	tbls, err := tables.New(db.Client, cat, tables.WithWarehouseRoots(dir), tables.WithClock(clock))
	benchdb.Must(err)
	use, err := usage.New(db, cat, usage.WithClock(clock))
	benchdb.Must(err)
	newT, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
	benchdb.Must(err)
	old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "postgres://bench:5432", Name: "bench.public.orders"})
	benchdb.Must(err)
	svc := reconcile.New(db.Client, cat, tbls, use, reconcile.WithClock(clock), reconcile.WithConnection("bench", pg))
	m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: newT.AssetID, Owner: "bench", Spec: reconcile.Spec{
		KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount", "customer"}, WindowSeconds: 86400, Since: start,
		DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, LagBoundSeconds: 3600, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a benchmark"},
		Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "bench", Table: "public.orders"},
		New: reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}})
	benchdb.Must(err)

	var recon, count []time.Duration
	var last reconcile.Run
	fmt.Printf("\n%-4s %-44s %10s %12s %14s %10s\n", "run", "side", "time", "rows read", "bytes", "windows")
	for i := range *runs {
		t := time.Now()
		r, err := svc.Reconcile(ctx, m.ID)
		benchdb.Must(err)
		recon = append(recon, time.Since(t))
		if !r.Clean || len(r.Windows) != *days {
			log.Fatalf("run %d: clean %v, %d windows: %v", i+1, r.Clean, len(r.Windows), r.Causes)
		}
		last = r
		fmt.Printf("%-4d %-44s %10s %12d %14d %10d\n", i+1, "Tidemark reconciliation (both sides, in full)", recon[i].Round(time.Millisecond),
			r.Cost.RowsOld+r.Cost.RowsNew, r.Cost.Bytes, len(r.Windows))
		t = time.Now()
		rs, err := pg.QueryContext(ctx, `SELECT floor(extract(epoch FROM ordered_at) / 86400), count(*) FROM orders GROUP BY 1`)
		benchdb.Must(err)
		n := 0
		for rs.Next() {
			n++
		}
		benchdb.Must(rs.Err())
		rs.Close()
		count = append(count, time.Since(t))
		fmt.Printf("%-4d %-44s %10s %12d %14s %10d\n", i+1, "SELECT count(*) GROUP BY day (old side only)", count[i].Round(time.Millisecond), *rows, "", n)
	}
	slices.Sort(recon)
	slices.Sort(count)
	r, c := recon[len(recon)/2], count[len(count)/2]
	fmt.Printf("\nmedians of %d runs: reconciliation %s (%d rows, %.0f MiB of compared values; %.0f rows/s) vs count per window %s: %.1fx its time\n",
		*runs, r.Round(time.Millisecond), last.Cost.RowsOld+last.Cost.RowsNew, float64(last.Cost.Bytes)/(1<<20),
		float64(last.Cost.RowsOld+last.Cost.RowsNew)/r.Seconds(), c.Round(time.Millisecond), r.Seconds()/c.Seconds())
	fmt.Println("The count reads one side and compares nothing; the run reads both sides, every compared column, and compares records by key.")
}
