// Command commits measures what a commit through Tidemark's Iceberg REST catalog costs, against
// iceberg-go's own SQL catalog as the baseline, in one process over one warehouse directory:
//
//   - a one-file append (iceberg-go's AddDataFiles + Commit, end to end as the writer sees it)
//     to a table of 1,000 files and to one of 1,000,000 files, through Tidemark (served over
//     HTTP on 127.0.0.1, iceberg-go's REST client) and through the SQL catalog (its own tables
//     of the same shape, built the same way), sides alternating, medians and ratios; also the
//     catalog call alone (CommitTable) both ways and the commit request's round trip;
//   - 8 writers appending concurrently, each to its own table, for a few seconds a round:
//     commits a second both ways, rounds alternating;
//   - where Tidemark's commit time goes, step by step, as its server reports it; with
//     -cpuprofile, CPU profiles labelled side=tidemark-server / tidemark-client / sqlcat (the
//     catalog's part) and writer=tidemark / sqlcat (the writer's whole append, client side).
//
// Recording a commit reads only the commit's new manifests, so the two table sizes should cost
// about the same. The benchmark ends by checking that the large table's write-path inventory
// equals a manifest walk of its current snapshot. Data files are described in manifests (paths,
// sizes, counts) but not written: neither catalog opens them.
//
//	go run ./bench/commits                          # both catalogs on SQLite
//	go run ./bench/commits -postgres DSN            # Tidemark's database on PostgreSQL
//	go run ./bench/commits -postgres DSN -baseline postgres  # the SQL catalog there too
//	go run ./bench/commits -large 100000 -runs 5 -seconds 2  # smaller, quicker
//	go run ./bench/commits -tables 2000 -large 1000 -rounds 0  # in a catalog of 2,000 more tables
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
)

func main() {
	pg := flag.String("postgres", "", "PostgreSQL DSN allowed to create a database (default: SQLite in a temp dir)")
	baseline := flag.String("baseline", "sqlite", "the SQL catalog's database: sqlite, or postgres (on the -postgres server)")
	small := flag.Int("small", 1000, "files in the small table")
	large := flag.Int("large", 1_000_000, "files in the large table")
	batch := flag.Int("batch", 100_000, "files per commit while filling the tables")
	runs := flag.Int("runs", 9, "timed commits per table and side (alternating)")
	writers := flag.Int("writers", 8, "concurrent writers, each on its own table")
	seconds := flag.Float64("seconds", 5, "seconds a round of concurrent writers runs")
	rounds := flag.Int("rounds", 3, "rounds of concurrent writers per side (alternating; 0: none)")
	others := flag.Int("tables", 0, "other tables in each catalog beforehand (empty, one namespace): what a commit costs in a catalog of many tables")
	cpuprofile := flag.String("cpuprofile", "", "write CPU profiles to PREFIX.fill.pprof (filling the tables), PREFIX.seq.pprof and PREFIX.conc.pprof")
	keep := flag.Bool("keep", false, "keep the temp directory (warehouse, SQLite files) for a look afterwards")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tidemark-bench-commits-")
	benchdb.Must(err)
	if !*keep {
		defer os.RemoveAll(dir)
	}

	dsn, sqlDSN := filepath.Join(dir, "tidemark.db"), filepath.Join(dir, "sqlcat.db")
	if *pg != "" {
		var drop func()
		dsn, drop = benchdb.CreateDB(ctx, *pg, "tidemark_bench_commits", false)
		defer drop()
	}
	if *baseline == "postgres" {
		if *pg == "" {
			log.Fatal("-baseline postgres needs -postgres")
		}
		var drop func()
		sqlDSN, drop = benchdb.CreateDB(ctx, *pg, "tidemark_bench_commits_sqlcat", false)
		defer drop()
	}
	store := benchdb.Open(ctx, dsn)
	wh := filepath.Join(dir, "warehouse")
	phases := &phaseLog{}
	tm, a := tidemarkSide(ctx, store, wh, phases)
	benchApp = a
	sides := []*side{tm, sqlSide(ctx, sqlDSN, wh)}
	fmt.Printf("Tidemark's database: %s; the SQL catalog's: %s; warehouse %s; %d other tables in each catalog\n", dbKind(*pg != ""), dbKind(*baseline == "postgres"), wh, *others)

	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	mk := func(sd *side, name string, n int) *table.Table {
		tbl := sd.cat.create(ctx, table.Identifier{"bench", name}, schema)
		start := time.Now()
		for done := 0; done < n; {
			k := min(*batch, n-done)
			tbl = addFiles(ctx, tbl, name, done, k)
			done += k
			fmt.Fprintf(os.Stderr, "\r%s %s: %d of %d files committed (%s)", sd.name, name, done, n, time.Since(start).Round(time.Second))
		}
		fmt.Fprintln(os.Stderr)
		return tbl
	}
	for _, sd := range sides {
		start := time.Now()
		for i := range *others {
			sd.cat.create(ctx, table.Identifier{"bench", fmt.Sprintf("other%d", i)}, schema)
			if (i+1)%100 == 0 || i+1 == *others {
				fmt.Fprintf(os.Stderr, "\r%s: %d of %d other tables created (%s)", sd.name, i+1, *others, time.Since(start).Round(time.Second))
			}
		}
		if *others > 0 {
			fmt.Fprintln(os.Stderr)
		}
	}
	sizes := map[string]int{"small": *small, "large": *large}
	tabs := map[string]map[string]*table.Table{}
	stop := profile(*cpuprofile, "fill")
	for _, sd := range sides {
		tabs[sd.name] = map[string]*table.Table{"small": mk(sd, "small", *small), "large": mk(sd, "large", *large)}
	}
	stop()

	stop = profile(*cpuprofile, "seq")
	appends(ctx, sides, tabs, sizes, *runs, phases)
	stop()
	phases.print("small", "large")

	if *rounds == 0 {
		inventoryCheck(ctx, tabs["tidemark"]["large"])
		return
	}
	wt := map[string][]*table.Table{}
	for _, sd := range sides {
		for i := range *writers {
			wt[sd.name] = append(wt[sd.name], mk(sd, fmt.Sprintf("w%d", i), *small))
		}
	}
	stop = profile(*cpuprofile, "conc")
	concurrent(ctx, sides, wt, *small, *rounds, time.Duration(*seconds*float64(time.Second)), phases)
	stop()
	phases.print("concurrent")

	inventoryCheck(ctx, tabs["tidemark"]["large"])
}

func dbKind(pg bool) string {
	if pg {
		return "PostgreSQL"
	}
	return "SQLite"
}

// profile starts a CPU profile to PREFIX.name.pprof (nothing without a prefix) and returns
// its stop.
func profile(prefix, name string) func() {
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + "." + name + ".pprof")
	benchdb.Must(err)
	benchdb.Must(pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		benchdb.Must(f.Close())
	}
}

// inventoryCheck compares the inventory's live files with a manifest walk, and times both.
func inventoryCheck(ctx context.Context, tbl *table.Table) {
	id := assetOf(ctx, tbl)
	start := time.Now()
	live, complete, err := benchApp.Warehouse.LiveFromInventory(ctx, id, tbl.Metadata(), tbl.CurrentSnapshot().SnapshotID)
	benchdb.Must(err)
	fromInventory := time.Since(start)
	start = time.Now()
	fs, err := tbl.FS(ctx)
	benchdb.Must(err)
	mfs, err := tbl.CurrentSnapshot().Manifests(fs)
	benchdb.Must(err)
	walked, missing := 0, 0
	for _, mf := range mfs {
		for e, err := range mf.Entries(fs, true) {
			benchdb.Must(err)
			walked++
			if !live[e.DataFile().FilePath()] {
				missing++
			}
		}
	}
	walk := time.Since(start)
	fmt.Printf("\nlarge table: the inventory holds %d live files (complete %v), read in %s; the manifest walk found %d in %s; walked but not in the inventory: %d; equal: %v\n",
		len(live), complete, fromInventory.Round(time.Millisecond), walked, walk.Round(time.Millisecond), missing, complete && missing == 0 && walked == len(live))
}

var benchApp *app.App

func assetOf(ctx context.Context, tbl *table.Table) uuid.UUID {
	ts, _, err := benchApp.Tables.List(ctx, uuid.Nil, 1000)
	benchdb.Must(err)
	for _, x := range ts {
		if x.TableUUID == tbl.Metadata().TableUUID().String() {
			return x.AssetID
		}
	}
	log.Fatalf("table %s has no asset", tbl.Metadata().TableUUID())
	return uuid.Nil
}
