// Command commits measures what a commit through Tidemark's Iceberg REST catalog costs as the
// table grows: the latency of the commit request (POST .../tables/{table}, over HTTP on
// 127.0.0.1, as iceberg-go's REST client sends it) for a one-file append to a table of 1,000
// files and to one of 1,000,000 files, alternating, with medians. Recording a commit reads only
// the commit's new manifests, so the two should cost about the same. It then checks that the
// large table's write-path inventory equals a manifest walk of its current snapshot, and times
// both.
//
// Data files are described in manifests (paths, sizes, counts) but not written: neither the
// commit nor the inventory opens them.
//
//	go run ./bench/commits                          # Tidemark's database on SQLite
//	go run ./bench/commits -postgres DSN            # on PostgreSQL
//	go run ./bench/commits -large 100000 -runs 5    # smaller, quicker
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/web"
)

// timing records how long each commit request took, by table.
type timing struct {
	http.RoundTripper
	mu    sync.Mutex
	last  time.Duration
	table string
}

func (t *timing) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.RoundTripper.RoundTrip(r)
	if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/"+t.table) {
		t.mu.Lock()
		t.last = time.Since(start)
		t.mu.Unlock()
	}
	return resp, err
}

func main() {
	pg := flag.String("postgres", "", "PostgreSQL DSN allowed to create a database (default: SQLite in a temp dir)")
	small := flag.Int("small", 1000, "files in the small table")
	large := flag.Int("large", 1_000_000, "files in the large table")
	batch := flag.Int("batch", 100_000, "files per commit while filling the tables")
	runs := flag.Int("runs", 9, "timed commits per table (alternating)")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "tidemark-bench-commits-")
	benchdb.Must(err)
	defer os.RemoveAll(dir)

	dsn := filepath.Join(dir, "tidemark.db")
	if *pg != "" {
		var drop func()
		dsn, drop = benchdb.CreateDB(ctx, *pg, "tidemark_bench_commits", false)
		defer drop()
	}
	store := benchdb.Open(ctx, dsn)
	url, token := serve(ctx, store, filepath.Join(dir, "warehouse"))
	rt := &timing{RoundTripper: http.DefaultTransport}
	cat, err := rest.NewCatalog(ctx, "tidemark", url+"/iceberg", rest.WithOAuthToken(token), rest.WithWarehouseLocation("main"), rest.WithCustomTransport(rt))
	benchdb.Must(err)
	benchdb.Must(cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil))
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	mk := func(name string, n int) *table.Table {
		tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", name}, schema)
		benchdb.Must(err)
		start := time.Now()
		for done := 0; done < n; {
			k := min(*batch, n-done)
			tbl = addFiles(ctx, tbl, name, done, k)
			done += k
			fmt.Fprintf(os.Stderr, "\r%s: %d of %d files committed (%s)", name, done, n, time.Since(start).Round(time.Second))
		}
		fmt.Fprintln(os.Stderr)
		return tbl
	}
	tabs := map[string]*table.Table{"small": mk("small", *small), "large": mk("large", *large)}
	sizes := map[string]int{"small": *small, "large": *large}

	fmt.Printf("commit latency of a one-file append over HTTP (POST .../tables/{table}), %d runs each, alternating\n", *runs)
	fmt.Printf("%-4s %-6s %10s %12s\n", "run", "table", "files", "commit")
	lat := map[string][]time.Duration{}
	for i := range *runs {
		for _, name := range []string{"small", "large"} {
			rt.table = name
			tabs[name] = addFiles(ctx, tabs[name], name, sizes[name]+i, 1)
			lat[name] = append(lat[name], rt.last)
			fmt.Printf("%-4d %-6s %10d %12s\n", i+1, name, sizes[name]+i, rt.last.Round(10*time.Microsecond))
		}
	}
	ms, ml := benchdb.Stats(lat["small"]).P50, benchdb.Stats(lat["large"]).P50
	fmt.Printf("median commit: %s at %d files, %s at %d files: %.2fx for %.0fx the files\n",
		ms.Round(10*time.Microsecond), *small, ml.Round(10*time.Microsecond), *large, float64(ml)/float64(ms), float64(*large)/float64(*small))

	inventoryCheck(ctx, tabs["large"])
}

// addFiles commits n made-up data files in one append (no duplicate check: the names are new).
func addFiles(ctx context.Context, tbl *table.Table, name string, from, n int) *table.Table {
	files := make([]iceberg.DataFile, n)
	for i := range files {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/%s-%09d.parquet", tbl.Location(), name, from+i), iceberg.ParquetFile, nil, nil, nil, 1000, 64<<20)
		benchdb.Must(err)
		files[i] = b.Build()
	}
	tx := tbl.NewTransaction()
	benchdb.Must(tx.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()))
	out, err := tx.Commit(ctx)
	benchdb.Must(err)
	return out
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
	fmt.Printf("large table: the inventory holds %d live files (complete %v), read in %s; the manifest walk found %d in %s; walked but not in the inventory: %d; equal: %v\n",
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

// serve starts Tidemark on 127.0.0.1 with one warehouse and returns its URL and an admin token.
func serve(ctx context.Context, store *storage.DB, warehouse string) (string, string) {
	a, err := app.Open(ctx, store, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: warehouse})}})
	benchdb.Must(err)
	benchApp = a
	h, err := a.Handler(server.Config{}, handlers.Config{}, web.Config{})
	benchdb.Must(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	benchdb.Must(err)
	go func() { _ = http.Serve(ln, h) }()
	tok, _, err := auth.NewStore(store.Client, nil).Create(ctx, "bench", []auth.Scope{auth.ScopeAdmin})
	benchdb.Must(err)
	return "http://" + ln.Addr().String(), tok
}
