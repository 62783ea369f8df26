package main

// -served: the table is committed through Tidemark's Iceberg REST catalog (iceberg-go's REST
// client over HTTP on 127.0.0.1), and its leftovers come from commits Tidemark rejected (409):
// writers that lost the race left their data files, manifest and manifest list behind. Three
// sides find them: a full walk that ignores the write-path inventory (two passes, the second
// an hour on), an inventory pass (two passes), and iceberg-go's DeleteOrphanFiles dry run.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// servedSides are the sides of a -served run, in the order each round runs them.
var servedSides = []string{"iceberg", "walk", "inventory"}

// generateServed commits the table through Tidemark and leaves 1% (-orphans) of its files as
// leftovers of rejected commits of -leftover-files files each.
func generateServed(ctx context.Context, d string) {
	start := time.Now()
	store := benchdb.Open(ctx, filepath.Join(d, "tidemark.db"))
	defer store.Close()
	whDir := filepath.Join(d, "warehouse")
	a, err := app.Open(ctx, store, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: whDir})}})
	benchdb.Must(err)
	h, err := a.Handler(server.Config{}, handlers.Config{}, web.Config{})
	benchdb.Must(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	benchdb.Must(err)
	go func() { _ = http.Serve(ln, h) }()
	tok, _, err := auth.NewStore(store.Client, nil).Create(ctx, "bench", []auth.Scope{auth.ScopeAdmin})
	benchdb.Must(err)
	cat, err := rest.NewCatalog(ctx, "tidemark", "http://"+ln.Addr().String()+"/iceberg", rest.WithOAuthToken(tok), rest.WithWarehouseLocation("main"))
	benchdb.Must(err)
	benchdb.Must(cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil))
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", "big"}, sc)
	benchdb.Must(err)

	leftoverTotal := int(float64(*files) * *orphans)
	rejected := max(leftoverTotal / *leftoverFiles, 1)
	committed := *files - rejected**leftoverFiles
	perCommit := (committed + *commits - 1) / *commits
	rejectEvery := max(*commits/rejected, 1)
	next := 0
	write := func(n int) []iceberg.DataFile {
		out := make([]iceberg.DataFile, n)
		for i := range out {
			p := fmt.Sprintf("%s/data/part=%04d/%07d.parquet", strings.TrimPrefix(tbl.Location(), "file://"), next%*dirs, next)
			if next < *dirs {
				benchdb.Must(os.MkdirAll(filepath.Dir(p), 0o755))
			}
			benchdb.Must(os.WriteFile(p, []byte{1}, 0o644))
			b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "file://"+p, iceberg.ParquetFile, nil, nil, nil, 1, 1)
			benchdb.Must(err)
			out[i] = b.Build()
			next++
		}
		return out
	}
	commit := func(t *table.Table, fs []iceberg.DataFile) (*table.Table, error) {
		tx := t.NewTransaction()
		benchdb.Must(tx.AddDataFiles(ctx, fs, nil, table.WithoutDuplicateCheck()))
		return tx.Commit(ctx)
	}
	nRejected := 0
	for c, done := 0, 0; done < committed; c++ {
		stale := tbl
		k := min(perCommit, committed-done)
		tbl, err = commit(tbl, write(k))
		benchdb.Must(err)
		done += k
		if c%rejectEvery == 0 && nRejected < rejected {
			// A writer that read the table before that commit loses the race: 409.
			if _, err := commit(stale, write(*leftoverFiles)); err == nil {
				benchdb.Must(fmt.Errorf("a commit from a stale table was accepted"))
			}
			nRejected++
		}
		fmt.Fprintf(os.Stderr, "\r%d of %d files committed, %d commits rejected (%s)", done, committed, nRejected, time.Since(start).Round(time.Second))
	}
	fmt.Fprintln(os.Stderr)
	id := uuid.Nil
	ts, _, err := a.Tables.List(ctx, uuid.Nil, 10)
	benchdb.Must(err)
	for _, t := range ts {
		if t.TableUUID == tbl.Metadata().TableUUID().String() {
			id = t.AssetID
		}
	}
	benchdb.Must(os.WriteFile(filepath.Join(d, "ready"), []byte(id.String()+"\n"+tbl.MetadataLocation()+"\nserved"), 0o644))
	fmt.Printf("generated %d files through Tidemark's REST catalog: %d committed in %d directories, %d left by %d rejected commits of %d data files (plus their manifests and manifest lists), in %s\n",
		next, committed, *dirs, nRejected**leftoverFiles, nRejected, *leftoverFiles, time.Since(start).Round(time.Second))
}

// servedSide runs one side of a -served run and fills r.
func servedSide(ctx context.Context, s, d, assetID, metaLoc string, r *result) {
	if s == "iceberg" {
		tbl, err := table.NewFromLocation(ctx, table.Identifier{"bench", "big"}, metaLoc, icebergio.LoadFSFunc(nil, metaLoc), nil)
		benchdb.Must(err)
		t := time.Now()
		res, err := tbl.DeleteOrphanFiles(ctx, table.WithDryRun(true), table.WithFilesOlderThan(0))
		benchdb.Must(err)
		r.Duration, r.Entries = time.Since(t), int64(*files)
		r.Orphans, r.Confirmed = int64(len(res.OrphanFileLocations)), int64(len(res.OrphanFileLocations))
		r.Requests, r.ListCounts = -1, "not counted"
		r.SetHash = pathsHash(res.OrphanFileLocations)
		return
	}
	db := benchdb.Open(ctx, copyDB(d))
	defer db.Close()
	cat, err := catalog.New(db)
	benchdb.Must(err)
	tbls, err := tables.New(db, cat, tables.WithWarehouses(tables.Warehouse{Name: "main", Location: filepath.Join(d, "warehouse")}))
	benchdb.Must(err)
	// The files and commits are minutes old: judge them by a clock 100 h on (past the 72 h
	// threshold), and the second pass an hour later (the minimum gap between two passes).
	var later atomic.Bool
	clock := func() time.Time {
		if later.Load() {
			return time.Now().Add(101 * time.Hour)
		}
		return time.Now().Add(100 * time.Hour)
	}
	wh, err := warehouse.New(db, cat, tbls)
	benchdb.Must(err)
	svc, err := cleanup.New(db, cat, tbls, cleanup.WithClock(clock), cleanup.WithWarehouse(wh))
	benchdb.Must(err)
	id := mustUUID(assetID)
	opt := cleanup.ScanOptions{WalkOnly: s == "walk", FromInventory: s == "inventory"}
	t := time.Now()
	rep, err := svc.Scan(ctx, id, opt)
	benchdb.Must(err)
	r.Duration = time.Since(t)
	later.Store(true)
	t = time.Now()
	rep2, err := svc.Scan(ctx, id, opt)
	benchdb.Must(err)
	r.Second = time.Since(t)
	r.Entries, r.Orphans, r.Confirmed = rep.EntriesListed+rep.SettledByInventory, rep.Candidates, rep2.Confirmed
	r.List = rep.Requests.List + rep2.Requests.List
	r.Requests = requests(rep) + requests(rep2)
	paths, err := db.Client.CleanupObservation.Query().Where(cleanupobservation.AssetID(id), cleanupobservation.ConfirmedAtNotNil()).
		Select(cleanupobservation.FieldPath).Strings(ctx)
	benchdb.Must(err)
	r.SetHash = pathsHash(paths)
}

// requests counts a scan's storage requests of every kind.
func requests(r cleanup.Report) int64 {
	return r.Requests.List + r.Requests.Head + r.Requests.Get + int64(r.Requests.ManifestReads)
}

// copyDB copies the database generation left, so every run's first pass is a first. It
// streams the files: reading them whole would count the copy in the side's peak memory.
func copyDB(d string) string {
	run := filepath.Join(d, "tidemark-run.db")
	for _, sfx := range []string{"", "-wal", "-shm"} {
		os.Remove(run + sfx)
		src, err := os.Open(filepath.Join(d, "tidemark.db"+sfx))
		if err != nil {
			continue
		}
		dst, err := os.Create(run + sfx)
		benchdb.Must(err)
		_, err = io.Copy(dst, src)
		benchdb.Must(err)
		benchdb.Must(dst.Close())
		src.Close()
	}
	return run
}

// pathsHash identifies a set of paths however they are written (file: URI or plain).
func pathsHash(paths []string) string {
	norm := make([]string, len(paths))
	for i, p := range paths {
		norm[i] = "/" + strings.TrimLeft(strings.TrimPrefix(p, "file:"), "/")
	}
	slices.Sort(norm)
	h := sha256.Sum256([]byte(strings.Join(norm, "\n")))
	return hex.EncodeToString(h[:8])
}

// servedReport prints a -served run's rounds and medians.
func servedReport(d string) {
	names := map[string]string{"iceberg": "iceberg-go DeleteOrphanFiles (dry run)", "walk": "Tidemark full walk, 2 passes", "inventory": "Tidemark inventory pass, 2 passes"}
	fmt.Printf("\n%-4s %-40s %12s %12s %10s %10s %10s %10s %18s\n", "run", "side", "1st pass", "2nd pass", "peak RSS", "found", "confirmed", "requests", "orphan set")
	by := map[string][]result{}
	for i := range *runs {
		for _, s := range servedSides {
			r := run(s, d)
			by[s] = append(by[s], r)
			req := fmt.Sprint(r.Requests)
			if r.Requests < 0 {
				req = r.ListCounts
			}
			fmt.Printf("%-4d %-40s %12s %12s %6d MiB %10d %10d %10s %18s\n", i+1, names[s], r.Duration.Round(time.Millisecond), r.Second.Round(time.Millisecond),
				r.MaxRSSKiB/1024, r.Orphans, r.Confirmed, req, r.SetHash)
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
	total := func(r result) float64 { return (r.Duration + r.Second).Seconds() }
	reqs := func(r result) float64 { return float64(r.Requests) }
	walk, inv, ice := by["walk"], by["inventory"], by["iceberg"]
	same := true
	for i := range walk {
		same = same && walk[i].SetHash == inv[i].SetHash && walk[i].Confirmed == inv[i].Confirmed && inv[i].Confirmed == ice[i].Confirmed && ice[i].SetHash == inv[i].SetHash
	}
	ratios := make([]result, len(walk))
	for i := range walk {
		ratios[i] = result{Requests: int64(1000 * reqs(walk[i]) / max(reqs(inv[i]), 1))}
	}
	fmt.Printf("\nmedians of %d runs (two passes each): full walk %.2fs and %.0f storage requests; inventory pass %.2fs and %.0f requests; iceberg-go %.2fs (one dry run)\n",
		*runs, med(walk, total), med(walk, reqs), med(inv, total), med(inv, reqs), med(ice, total))
	if med(inv, reqs) == 0 {
		fmt.Printf("storage requests: the inventory pass made none, the full walk %.0f (target: at least 10x fewer)", med(walk, reqs))
	} else {
		fmt.Printf("storage requests, full walk / inventory pass, median of the per-run ratios: %.1fx (target >= 10x)", med(ratios, func(r result) float64 { return float64(r.Requests) / 1000 }))
	}
	fmt.Printf("; the same orphans confirmed by all three sides in every run: %v\n", same)
}
