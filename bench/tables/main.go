// Command tables benchmarks table inspection side by side with iceberg-go's own scan planning,
// on two real Iceberg tables (iceberg-go SQL catalog on SQLite, local warehouse) holding the
// same data laid out two ways:
//
//   - hourly: 26,000 hourly partitions of 3 small files (about 4 MiB each);
//   - daily:  about 1,100 daily partitions of 3 larger files (about 96 MiB each).
//
// Data files are described in manifests with their real sizes and counts but not written, since
// neither inspection nor scan planning opens them. For each table it prints the time to inspect
// and compute health (cold cache), the manifests and entries read, the time
// Scan().PlanFiles takes, a warm re-inspection, and a refresh after one more commit, which must
// read only the new manifest.
//
//	go run ./bench/tables                  # Tidemark's database on SQLite
//	go run ./bench/tables -postgres DSN    # on PostgreSQL
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
)

var (
	admin   = flag.String("postgres", "", "PostgreSQL DSN allowed to create databases; empty runs Tidemark on SQLite")
	hours   = flag.Int("hours", 26_000, "hourly partitions of the hourly table")
	perPart = flag.Int("files", 3, "files per partition")
	commits = flag.Int("commits", 26, "commits each table is written in (one manifest each)")
	repeat  = flag.Int("repeat", 5, "timed runs of each measurement (the median is printed)")
	keep    = flag.Bool("keep", false, "keep the warehouse and databases")
	profile = flag.String("cpuprofile", "", "write a CPU profile of the whole run here")
)

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
)

const mib = 1 << 20

func main() {
	flag.Parse()
	ctx := context.Background()
	if *profile != "" {
		f, err := os.Create(*profile)
		benchdb.Must(err)
		benchdb.Must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	dir, err := os.MkdirTemp("", "tidemark-bench-tables-")
	benchdb.Must(err)
	if !*keep {
		defer os.RemoveAll(dir)
	}
	fmt.Printf("warehouse %s; %d hourly partitions x %d files, written in %d commits\n", dir, *hours, *perPart, *commits)

	cdb, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	benchdb.Must(err)
	icat, err := sqlcat.NewCatalog("bench", cdb, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	benchdb.Must(err)
	benchdb.Must(icat.CreateNamespace(ctx, table.Identifier{"db"}, nil))

	start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	startHour := int32(start.Unix() / 3600)
	days := (*hours + 23) / 24
	layouts := []layout{
		{"hourly", iceberg.HourTransform{}, *hours, 4 * mib, func(i int) any { return startHour + int32(i) }},
		{"daily", iceberg.DayTransform{}, days, 96 * mib, func(i int) any { return int32(start.Unix()/86400) + int32(i) }},
	}

	var dsn string
	if *admin != "" {
		var drop func()
		dsn, drop = benchdb.CreateDB(ctx, *admin, "tidemark_bench_tables", *keep)
		defer drop()
	} else {
		dsn = filepath.Join(dir, "tidemark.db")
	}
	db := benchdb.Open(ctx, dsn)
	defer db.Close()
	fmt.Printf("Tidemark database: %s\n\n", db.Dialect)

	b := &bench{ctx: ctx, icat: icat, db: db, dir: dir}
	var results []result
	for _, lay := range layouts {
		results = append(results, b.measure(lay))
	}

	printResults(results)
}

// layout is one way to partition the benchmark's data: by the transform into parts partitions
// (value gives the i-th one's partition value), files of size bytes.
type layout struct {
	name      string
	transform iceberg.Transform
	parts     int
	size      int64
	value     func(i int) any
}

// bench is what every layout is measured with: the Iceberg catalog, Tidemark's database and the
// directory holding the warehouse.
type bench struct {
	ctx  context.Context
	icat *sqlcat.Catalog
	db   *storage.DB
	dir  string
}

// measure writes the layout's table, then times inspecting it cold and warm next to iceberg-go's
// planning, and refreshing it after one more commit.
func (b *bench) measure(lay layout) result {
	ctx, icat, db := b.ctx, b.icat, b.db
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_" + lay.transform.String(), Transform: lay.transform})
	tbl, err := icat.CreateTable(ctx, table.Identifier{"db", lay.name}, schema, icecat.WithPartitionSpec(&spec))
	benchdb.Must(err)
	t0 := time.Now()
	per := (lay.parts + *commits - 1) / *commits
	n := 0
	for c := 0; c < *commits; c++ {
		var files []iceberg.DataFile
		for p := c * per; p < min((c+1)*per, lay.parts); p++ {
			for f := 0; f < *perPart; f++ {
				files = append(files, dataFile(spec, lay.name, n, lay.value(p), lay.size+int64(f)*mib/8))
				n++
			}
		}
		tbl = commit(ctx, tbl, files)
	}
	write := time.Since(t0)
	fmt.Printf("%s: wrote %d file entries in %d partitions, %d commits, in %s\n", lay.name, n, lay.parts, *commits, write.Round(time.Millisecond))

	r := result{name: lay.name, files: n, parts: lay.parts, write: write}
	b.coldInspection(&r, tbl)
	svc := service(db)
	_, _, err = svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
	benchdb.Must(err)
	// Warm: the database cache holds every manifest; a new process (a fresh service) decodes
	// them from it, a running one has their figures in memory.
	r.inspectDB = timed(func() {
		_, _, err := service(db).Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		benchdb.Must(err)
	})
	r.inspectWarm = timed(func() {
		_, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		benchdb.Must(err)
	})
	// One more commit at a time (three files in a new partition), each refresh reading the
	// one new manifest; the median.
	var refreshes []time.Duration
	for i := 0; i < *repeat; i++ {
		var files []iceberg.DataFile
		for f := 0; f < *perPart; f++ {
			files = append(files, dataFile(spec, lay.name, n, lay.value(lay.parts+i), lay.size))
			n++
		}
		tbl = commit(ctx, tbl, files)
		t1 := time.Now()
		_, rr, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		benchdb.Must(err)
		refreshes = append(refreshes, time.Since(t1))
		r.refreshRep = rr
	}
	r.refresh = median(refreshes)
	return r
}

// coldInspection times inspecting tbl (a fresh database each time, so every manifest is read)
// and iceberg-go's planning, alternately; medians.
func (b *bench) coldInspection(r *result, tbl *table.Table) {
	ctx, dir := b.ctx, b.dir
	var cold, plan []time.Duration
	for i := 0; i < *repeat; i++ {
		fresh, done := freshDB(ctx, dir, r.name)
		svc := service(fresh)
		t := time.Now()
		tb, rep, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		benchdb.Must(err)
		r.health, err = svc.Health(ctx, tb.AssetID)
		benchdb.Must(err)
		cold = append(cold, time.Since(t))
		r.cold = rep
		done()
		t = time.Now()
		tasks, err := tbl.Scan().PlanFiles(ctx)
		benchdb.Must(err)
		plan = append(plan, time.Since(t))
		r.planTasks = len(tasks)
	}
	r.inspectCold, r.plan = median(cold), median(plan)
}

func dataFile(spec iceberg.PartitionSpec, name string, n int, part any, size int64) iceberg.DataFile {
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData,
		fmt.Sprintf("file:///bench/%s/data/%08d.parquet", name, n), iceberg.ParquetFile,
		map[int]any{1000: part}, nil, nil, size/100, size)
	benchdb.Must(err)
	return b.Build()
}

func commit(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) *table.Table {
	txn := tbl.NewTransaction()
	benchdb.Must(txn.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()))
	out, err := txn.Commit(ctx)
	benchdb.Must(err)
	return out
}

func service(db *storage.DB) *tables.Service {
	cat, err := catalog.New(db)
	benchdb.Must(err)
	svc, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
	benchdb.Must(err)
	return svc
}

var freshN int

// freshDB is an empty Tidemark database on the benchmark's backend (a cold manifest cache).
func freshDB(ctx context.Context, dir, name string) (*storage.DB, func()) {
	freshN++
	if *admin == "" {
		db := benchdb.Open(ctx, filepath.Join(dir, fmt.Sprintf("cold-%s-%d.db", name, freshN)))
		return db, func() { db.Close() }
	}
	dsn, drop := benchdb.CreateDB(ctx, *admin, fmt.Sprintf("tidemark_bench_cold_%d", freshN), false)
	db := benchdb.Open(ctx, dsn)
	return db, func() { db.Close(); drop() }
}

// timed runs fn repeat times and returns the median.
func timed(fn func()) time.Duration {
	var ds []time.Duration
	for i := 0; i < *repeat; i++ {
		t := time.Now()
		fn()
		ds = append(ds, time.Since(t))
	}
	return median(ds)
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// result is one table layout's figures.
type result struct {
	name                     string
	files, parts             int
	write                    time.Duration
	inspectCold, inspectWarm time.Duration
	inspectDB                time.Duration // warm database cache, new process
	plan                     time.Duration
	planTasks                int
	cold                     tables.RefreshReport
	refresh                  time.Duration
	refreshRep               tables.RefreshReport
	health                   tables.Health
}

// printResults prints the table of figures and the ratios, and fails when a refresh after one
// commit read more than the one new manifest.
func printResults(results []result) {
	fmt.Println()
	fmt.Printf("%-8s %8s %6s | %-28s %10s %9s | %-22s %8s | %-27s | %s\n", "table", "files", "parts",
		"inspect+health (cold)", "manifests", "entries", "iceberg-go PlanFiles", "tasks", "warm: new process / running", "refresh after 1 commit")
	for _, r := range results {
		fmt.Printf("%-8s %8d %6d | %-28s %10d %9d | %-22s %8d | %-27s | %s, %d manifest(s) and %d list(s) read, %d from the database cache, %d from memory\n",
			r.name, r.files, r.parts, r.inspectCold.Round(time.Millisecond), r.cold.ManifestsRead, r.cold.EntriesRead,
			r.plan.Round(time.Millisecond), r.planTasks, fmt.Sprintf("%s / %s", r.inspectDB.Round(time.Millisecond), r.inspectWarm.Round(time.Millisecond)),
			r.refresh.Round(time.Millisecond), r.refreshRep.ManifestsRead, r.refreshRep.ManifestListsRead, r.refreshRep.ManifestsCached, r.refreshRep.ManifestsInMemory)
	}
	fmt.Println()
	for _, r := range results {
		fmt.Printf("%s: inspect+health / PlanFiles = %.2fx (target <= 1.5x); refresh after one commit read %d of %d manifests and took %.0f%% of a cold inspection (target <= 10%%)\n",
			r.name, r.inspectCold.Seconds()/r.plan.Seconds(), r.refreshRep.ManifestsRead,
			r.refreshRep.ManifestsRead+r.refreshRep.ManifestsCached+r.refreshRep.ManifestsInMemory, 100*r.refresh.Seconds()/r.inspectCold.Seconds())
		h := r.health
		fmt.Printf("  health: %d partitions, %.1f files/partition, median file %d MiB, %d small files, %d manifests, %d scan entries\n",
			h.Partitions, h.FilesPerPartition.Avg, h.FileSize.Median/mib, h.SmallFiles, h.Manifests, h.ScanEntries)
		for _, rec := range h.Recommendations {
			fmt.Printf("  recommendation: %s\n", rec.Message)
		}
		if r.refreshRep.ManifestsRead != 1 {
			log.Fatalf("%s: the refresh after one commit read %d manifests, want 1", r.name, r.refreshRep.ManifestsRead)
		}
	}
}
