// Command cleanup benchmarks Tidemark's orphan scan side by side with iceberg-go's own orphan
// planning (Table.PlanOrphanFiles, a dry run) on the same generated table location: by default
// 1,000,000 files on local disk in 1,000 partition directories, 1% of them orphans (old,
// unreferenced), the rest committed in 100 commits. Each side runs in its own process so its
// peak memory (max RSS) is its own; it prints files/s, peak RSS and LIST requests.
//
//	go run ./bench/cleanup                    # generates the table under $TMPDIR (a few minutes)
//	go run ./bench/cleanup -files 100000      # smaller
//	go run ./bench/cleanup -keep -dir /tmp/x  # keep (or reuse) the generated table
//	go run ./bench/cleanup -served            # committed through Tidemark, leftovers of rejected
//	                                          # commits: full walk vs inventory pass vs iceberg-go
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/tables"
)

var (
	files         = flag.Int("files", 1_000_000, "files in the table location")
	dirs          = flag.Int("dirs", 1000, "partition directories under data/")
	orphans       = flag.Float64("orphans", 0.01, "share of the files that are orphans")
	commits       = flag.Int("commits", 100, "commits the referenced files are added in")
	dir           = flag.String("dir", "", "where to generate the table (reused if it holds one); default a temp dir")
	keep          = flag.Bool("keep", false, "keep the generated table")
	mode          = flag.String("mode", "", "internal: run one side (tidemark or iceberg) and print its result")
	runs          = flag.Int("runs", 3, "runs of each side, alternately")
	served        = flag.Bool("served", false, "commit the table through Tidemark's Iceberg REST catalog, its leftovers from rejected commits, and compare a full walk, an inventory pass and iceberg-go's DeleteOrphanFiles (see served.go)")
	leftoverFiles = flag.Int("leftover-files", 1000, "with -served: data files each rejected commit leaves")
)

type result struct {
	Side      string        `json:"side"`
	Duration  time.Duration `json:"duration"`
	Entries   int64         `json:"entries"`
	Orphans   int64         `json:"orphans"`
	List      int64         `json:"list_requests"`
	Confirmed int64         `json:"confirmed"`
	Second    time.Duration `json:"second_pass"`
	// SecondShards: shards the confirming pass walked.
	SecondShards int    `json:"second_shards"`
	Requests     int64  `json:"requests"` // storage requests of every kind, both passes (-served)
	SetHash      string `json:"set_hash"` // identifies the set of confirmed paths (-served)
	MaxRSSKiB    int64  `json:"max_rss_kib"`
	ListCounts   string `json:"list_note,omitempty"`
}

func main() {
	flag.Parse()
	ctx := context.Background()
	if *mode != "" {
		side(ctx, *mode, *dir)
		return
	}
	d := *dir
	if d == "" {
		var err error
		d, err = os.MkdirTemp("", "tidemark-bench-cleanup-")
		benchdb.Must(err)
	}
	benchdb.Must(os.MkdirAll(d, 0o755))
	if !*keep && *dir == "" {
		defer os.RemoveAll(d)
	}
	if _, err := os.Stat(filepath.Join(d, "ready")); err != nil {
		if *served {
			generateServed(ctx, d)
		} else {
			generate(ctx, d)
		}
	} else {
		fmt.Printf("reusing the table generated in %s\n", d)
	}
	if *served {
		servedReport(d)
		return
	}
	// Each side runs 3 times, alternately, each in a fresh process; the figures are medians.
	var ices, tms []result
	fmt.Printf("\n%-4s %-38s %12s %10s %12s %10s %12s\n", "run", "side", "time", "files/s", "peak RSS", "orphans", "LIST")
	for i := range *runs {
		for _, s := range []string{"iceberg", "tidemark"} {
			r := run(s, d)
			list := fmt.Sprint(r.List)
			if r.ListCounts != "" {
				list = r.ListCounts
			}
			name := map[string]string{"iceberg": "iceberg-go PlanOrphanFiles (dry run)", "tidemark": "Tidemark scan, first pass"}[r.Side]
			fmt.Printf("%-4d %-38s %12s %10.0f %9d MiB %10d %12s\n", i+1, name, r.Duration.Round(time.Millisecond),
				float64(r.Entries)/r.Duration.Seconds(), r.MaxRSSKiB/1024, r.Orphans, list)
			if s == "iceberg" {
				ices = append(ices, r)
				continue
			}
			tms = append(tms, r)
			fmt.Printf("%-4d %-38s %12s %10s %12s %10d %12s\n", i+1, "Tidemark confirming pass (an hour on)", r.Second.Round(time.Millisecond),
				"", "(same process)", r.Confirmed, fmt.Sprintf("%d shards", r.SecondShards))
		}
	}
	med := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ratios := make([]result, len(tms))
	for i := range tms {
		ratios[i] = result{Duration: time.Duration(float64(time.Second) * tms[i].Duration.Seconds() / ices[i].Duration.Seconds())}
	}
	ratio := med(ratios, func(r result) float64 { return r.Duration.Seconds() })
	fmt.Printf("\nmedians of %d runs: iceberg-go %.2fs, %d MiB; Tidemark first pass %.2fs, %d MiB; confirming pass %.2fs\n", *runs,
		med(ices, func(r result) float64 { return r.Duration.Seconds() }), int(med(ices, func(r result) float64 { return float64(r.MaxRSSKiB) }))/1024,
		med(tms, func(r result) float64 { return r.Duration.Seconds() }), int(med(tms, func(r result) float64 { return float64(r.MaxRSSKiB) }))/1024,
		med(tms, func(r result) float64 { return r.Second.Seconds() }))
	fmt.Printf("Tidemark first pass / iceberg-go, median of the per-run ratios: %.2fx the time (target <= 0.80x); peak RSS %d MiB (target < 256 MiB)\n",
		ratio, int(med(tms, func(r result) float64 { return float64(r.MaxRSSKiB) }))/1024)
}

// run starts one side in its own process and reads its result.
func run(s, d string) result {
	cmd := exec.Command(os.Args[0], "-mode", s, "-dir", d, "-files", fmt.Sprint(*files))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	benchdb.Must(cmd.Run())
	var r result
	benchdb.Must(json.Unmarshal(out.Bytes(), &r))
	return r
}

func openCatalog(d string) *sqlcat.Catalog {
	cdb, err := sql.Open("sqlite", "file:"+filepath.Join(d, "catalog.db")+"?_pragma=busy_timeout(5000)")
	benchdb.Must(err)
	cat, err := sqlcat.NewCatalog("bench", cdb, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(d, "warehouse")})
	benchdb.Must(err)
	return cat
}

// generate writes the files, commits the referenced ones and registers the table in a
// Tidemark database (which inspects it, filling the manifest cache as a sync would).
func generate(ctx context.Context, d string) {
	start := time.Now()
	cat := openCatalog(d)
	benchdb.Must(cat.CreateNamespace(ctx, table.Identifier{"db"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"db", "big"}, sc, icecat.WithProperties(iceberg.Properties{"format-version": "2"}))
	benchdb.Must(err)
	root := filepath.Join(d, "warehouse", "db.db", "big", "data")
	every := int(1 / *orphans)
	old := time.Now().Add(-30 * 24 * time.Hour)
	var refs []iceberg.DataFile
	perCommit := (*files - *files/every + *commits - 1) / *commits
	nOrphans := 0
	for i := 0; i < *files; i++ {
		p := filepath.Join(root, fmt.Sprintf("part=%04d", i%*dirs), fmt.Sprintf("%07d.parquet", i))
		if i < *dirs {
			benchdb.Must(os.MkdirAll(filepath.Dir(p), 0o755))
		}
		benchdb.Must(os.WriteFile(p, []byte{1}, 0o644))
		if i%every == every-1 {
			benchdb.Must(os.Chtimes(p, old, old)) // an old orphan
			nOrphans++
		} else {
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file://"+p, iceberg.ParquetFile, nil, nil, nil, 1, 1)
			benchdb.Must(err)
			refs = append(refs, b.Build())
		}
		if len(refs) == perCommit || (i == *files-1 && len(refs) > 0) {
			txn := tbl.NewTransaction()
			benchdb.Must(txn.AddDataFiles(ctx, refs, nil, table.WithoutDuplicateCheck()))
			tbl, err = txn.Commit(ctx)
			benchdb.Must(err)
			refs = refs[:0]
		}
		if i%100000 == 99999 {
			fmt.Fprintf(os.Stderr, "generated %d files (%s)\n", i+1, time.Since(start).Round(time.Second))
		}
	}
	db := benchdb.Open(ctx, filepath.Join(d, "tidemark.db"))
	defer db.Close()
	tcat, err := catalog.New(db)
	benchdb.Must(err)
	svc, err := tables.New(db, tcat, tables.WithWarehouseRoots(os.TempDir()))
	benchdb.Must(err)
	t, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
	benchdb.Must(err)
	benchdb.Must(os.WriteFile(filepath.Join(d, "ready"), []byte(t.AssetID.String()+"\n"+tbl.MetadataLocation()), 0o644))
	fmt.Printf("generated %d files (%d orphans) in %d directories, %d commits, in %s\n", *files, nOrphans, *dirs, *commits, time.Since(start).Round(time.Second))
}

func side(ctx context.Context, s, d string) {
	var assetID, metaLoc, kind string
	b, err := os.ReadFile(filepath.Join(d, "ready"))
	benchdb.Must(err)
	fmt.Sscan(string(b), &assetID, &metaLoc, &kind)
	r := result{Side: s}
	if kind == "served" {
		servedSide(ctx, s, d, assetID, metaLoc, &r)
		r.MaxRSSKiB = peakRSS()
		benchdb.Must(json.NewEncoder(os.Stdout).Encode(r))
		return
	}
	switch s {
	case "iceberg":
		tbl, err := table.NewFromLocation(ctx, table.Identifier{"db", "big"}, metaLoc, icebergio.LoadFSFunc(nil, metaLoc), nil)
		benchdb.Must(err)
		t := time.Now()
		plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(cleanup.DefaultAgeThreshold), table.WithDryRun(true))
		benchdb.Must(err)
		r.Duration = time.Since(t)
		r.Orphans = int64(len(plan.OrphanFiles()))
		r.Entries = int64(*files)
		r.ListCounts = "not counted"
	case "tidemark":
		// A copy of the database as generation left it, so every run's first pass is a first.
		db := benchdb.Open(ctx, copyDB(d))
		defer db.Close()
		cat, err := catalog.New(db)
		benchdb.Must(err)
		tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
		benchdb.Must(err)
		// The confirming pass comes an hour later (the minimum gap between two walks), by the clock.
		var later atomic.Bool
		clock := func() time.Time {
			if later.Load() {
				return time.Now().Add(time.Hour + time.Minute)
			}
			return time.Now()
		}
		svc, err := cleanup.New(db, cat, tbls, cleanup.WithClock(clock))
		benchdb.Must(err)
		id := mustUUID(assetID)
		t := time.Now()
		rep, err := svc.Scan(ctx, id, cleanup.ScanOptions{})
		benchdb.Must(err)
		r.Duration = time.Since(t)
		r.Entries, r.Orphans, r.List = rep.EntriesListed, rep.Candidates, rep.Requests.List
		later.Store(true)
		t = time.Now()
		rep2, err := svc.Scan(ctx, id, cleanup.ScanOptions{ConfirmOnly: true})
		benchdb.Must(err)
		r.Second, r.Confirmed, r.SecondShards = time.Since(t), rep2.Confirmed, len(rep2.Shards)
	default:
		log.Fatalf("unknown mode %q", s)
	}
	r.MaxRSSKiB = peakRSS()
	benchdb.Must(json.NewEncoder(os.Stdout).Encode(r))
}

// peakRSS is this process's peak resident set (VmHWM), in KiB. The child's rusage would not do:
// Go starts children with vfork, so their max RSS includes the parent's until exec.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	benchdb.Must(err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kib int64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kib)
			return kib
		}
	}
	return 0
}

func mustUUID(s string) uuid.UUID {
	u, err := uuid.Parse(s)
	benchdb.Must(err)
	return u
}
