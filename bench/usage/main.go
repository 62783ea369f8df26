// Command usage benchmarks usage ingest and queries against PostgreSQL, side by side with the
// baselines the usage issue names, and prints the figures and ratios:
//
//  1. Ingest: query-log records POSTed to /api/v1/usage in batches of 500 from several clients;
//     then the rows they produced (raw events and rollups) loaded into a fresh database with one
//     COPY per table, as the ceiling.
//
//  2. Series: one asset with 1M raw events over a year (loaded with COPY, rollups built by the
//     same recount the ingest path runs); the latency of its usage series, in process and over
//     HTTP.
//
//     go run ./bench/usage -postgres 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand"
	"net/http"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/usage"
)

var (
	admin      = flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to create databases")
	records    = flag.Int("records", 200_000, "usage records to ingest over HTTP")
	batchSize  = flag.Int("batch", 500, "records per request")
	clients    = flag.Int("clients", 4, "concurrent clients")
	assets     = flag.Int("assets", 2000, "assets the records spread over")
	rawEvents  = flag.Int("raw", 1_000_000, "raw events of the one asset whose series is timed")
	iterations = flag.Int("iterations", 200, "timed series queries")
	keep       = flag.Bool("keep", false, "keep the benchmark databases")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the ingest part here")
)

func main() {
	flag.Parse()
	if *admin == "" {
		log.Fatal("set -postgres or TIDEMARK_TEST_POSTGRES")
	}
	ctx := context.Background()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		benchdb.Must(err)
		benchdb.Must(pprof.StartCPUProfile(f))
		ingest(ctx)
		pprof.StopCPUProfile()
	} else {
		ingest(ctx)
	}
	series(ctx)
}

func server(ctx context.Context, db *storage.DB, now func() time.Time) (string, string, *usage.Service, *catalog.Catalog) {
	cat, err := catalog.New(db)
	benchdb.Must(err)
	use, err := usage.New(db, cat, usage.WithClock(now), usage.WithLateness(400*24*time.Hour), usage.WithRetention(800*24*time.Hour))
	benchdb.Must(err)
	base, secret := benchdb.Serve(ctx, db, handlers.Config{Catalog: cat, Usage: use})
	return base, secret, use, cat
}

func ingest(ctx context.Context) {
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_usage", *keep)
	defer drop()
	db := benchdb.Open(ctx, dsn)
	defer db.Close()
	base, token, _, _ := server(ctx, db, time.Now)
	// The assets exist from 60 days back, so records up to 20 days old resolve by name.
	cat, err := catalog.New(db, catalog.WithClock(func() time.Time { return time.Now().AddDate(0, 0, -60) }))
	benchdb.Must(err)
	var ins []catalog.CreateInput
	for i := range *assets {
		ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "bench", Name: fmt.Sprintf("t_%d", i)})
	}
	for len(ins) > 0 {
		n := min(catalog.MaxCreateMany, len(ins))
		_, err := cat.CreateMany(ctx, ins[:n])
		benchdb.Must(err)
		ins = ins[n:]
	}
	fmt.Printf("== ingest: %d records over %d assets, batches of %d, %d clients, over HTTP\n", *records, *assets, *batchSize, *clients)
	type rec struct {
		Asset   map[string]string `json:"asset"`
		Kind    string            `json:"kind"`
		Actor   string            `json:"actor"`
		At      time.Time         `json:"at"`
		QueryID string            `json:"query_id"`
		Source  string            `json:"source"`
	}
	start := time.Now()
	bodies := make(chan []byte, *clients)
	go func() {
		rng := rand.New(rand.NewSource(3))
		for sent := 0; sent < *records; sent += *batchSize {
			var evs []rec
			for i := sent; i < min(sent+*batchSize, *records); i++ {
				evs = append(evs, rec{Asset: map[string]string{"namespace": "bench", "name": fmt.Sprintf("t_%d", rng.Intn(*assets))},
					Kind: []string{"read", "read", "read", "write"}[rng.Intn(4)], Actor: fmt.Sprintf("user%d", rng.Intn(200)),
					At: start.Add(-time.Duration(rng.Intn(20*24*60)) * time.Minute), QueryID: fmt.Sprintf("q%d", i), Source: "trino"})
			}
			b, err := json.Marshal(map[string]any{"events": evs})
			benchdb.Must(err)
			bodies <- b
		}
		close(bodies)
	}()
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range bodies {
				req, _ := http.NewRequest("POST", base+"/api/v1/usage", bytes.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				res, err := http.DefaultClient.Do(req)
				benchdb.Must(err)
				var out struct {
					Summary struct{ Accepted int }
				}
				benchdb.Must(json.NewDecoder(res.Body).Decode(&out))
				res.Body.Close()
				if res.StatusCode != 200 {
					log.Fatalf("usage batch answered %d", res.StatusCode)
				}
				accepted.Add(int64(out.Summary.Accepted))
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	rate := float64(accepted.Load()) / took.Seconds()
	fmt.Printf("HTTP ingest: %d records accepted in %s = %.0f records/s\n", accepted.Load(), took.Round(time.Millisecond), rate)

	copyDSN, dropCopy := benchdb.CreateDB(ctx, *admin, "tidemark_bench_usage_copy", *keep)
	defer dropCopy()
	cdb := benchdb.Open(ctx, copyDSN)
	defer cdb.Close()
	// Rows are read ahead: only writing them is timed.
	var rows []benchdb.Rows
	for _, t := range [][2]string{
		{"usage_events", "event_key, asset_id, kind, actor, source, query_id, namespace, name, at, day, received_at"},
		{"usage_dailies", "asset_id, day, reads, writes, distinct_actors, distinct_jobs, last_read_at, last_write_at, updated_at"},
		{"usage_actor_dailies", "asset_id, day, actor, reads, writes"},
		{"usage_actor_monthlies", "asset_id, month, actor, reads, writes"},
		{"usage_names", "asset_id, namespace, name, first_at, last_at"},
		{"usage_job_dailies", "day, asset_id, job_asset_id"}, // query-log records name no job: empty here
	} {
		rows = append(rows, benchdb.ReadRows(ctx, db.SQL, t[0], t[1], ""))
	}
	copyStart := time.Now()
	tx, err := cdb.SQL.BeginTx(ctx, nil)
	benchdb.Must(err)
	for _, r := range rows {
		benchdb.CopyRows(ctx, tx, r)
	}
	benchdb.Must(tx.Commit())
	copyTook := time.Since(copyStart)
	ceiling := float64(accepted.Load()) / copyTook.Seconds()
	fmt.Printf("COPY of the same rows (raw events and rollups): %s = %.0f records/s ceiling\n", copyTook.Round(time.Millisecond), ceiling)
	fmt.Printf("HTTP ingest / COPY ceiling = %.1f%% (target: at least 30%%)\n", 100*rate/ceiling)
}

func series(ctx context.Context) {
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_usage_series", *keep)
	defer drop()
	db := benchdb.Open(ctx, dsn)
	defer db.Close()
	now := time.Date(2026, 12, 31, 12, 0, 0, 0, time.UTC)
	base, _, use, cat := server(ctx, db, func() time.Time { return now })
	res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "bench", Name: "hot"})
	benchdb.Must(err)
	id := res.Asset.ID
	fmt.Printf("\n== series: one asset with %d raw events over 365 days\n", *rawEvents)
	start := time.Now()
	tx, err := db.SQL.BeginTx(ctx, nil)
	benchdb.Must(err)
	stmt, err := tx.PrepareContext(ctx, benchdb.CopyStatement("usage_events", "event_key", "asset_id", "kind", "actor", "source", "query_id", "namespace", "name", "at", "day", "received_at"))
	benchdb.Must(err)
	rng := rand.New(rand.NewSource(9))
	from := now.AddDate(-1, 0, 0)
	for i := range *rawEvents {
		at := from.Add(time.Duration(rng.Int63n(int64(365 * 24 * time.Hour))))
		_, err := stmt.ExecContext(ctx, uuid.NewString(), id, []string{"read", "read", "write"}[i%3], fmt.Sprintf("user%d", rng.Intn(500)),
			"bench", fmt.Sprintf("q%d", i), "bench", "hot", at, usage.Day(at), now)
		benchdb.Must(err)
	}
	_, err = stmt.ExecContext(ctx)
	benchdb.Must(err)
	benchdb.Must(stmt.Close())
	benchdb.Must(tx.Commit())
	fmt.Printf("COPY of raw events: %s\n", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	// The rollups, built by the statements the ingest path runs, over all days at once.
	_, err = db.SQL.ExecContext(ctx, `INSERT INTO usage_dailies (asset_id, day, reads, writes, distinct_actors, distinct_jobs, last_read_at, last_write_at, updated_at)
		SELECT asset_id, day, SUM(CASE WHEN kind = 'read' THEN 1 ELSE 0 END), SUM(CASE WHEN kind = 'write' THEN 1 ELSE 0 END),
			COUNT(DISTINCT NULLIF(actor, '')), COUNT(DISTINCT job_asset_id), MAX(CASE WHEN kind = 'read' THEN at END), MAX(CASE WHEN kind = 'write' THEN at END), now()
		FROM usage_events GROUP BY asset_id, day`)
	benchdb.Must(err)
	_, err = db.SQL.ExecContext(ctx, `INSERT INTO usage_actor_dailies (asset_id, day, actor, reads, writes)
		SELECT asset_id, day, actor, SUM(CASE WHEN kind = 'read' THEN 1 ELSE 0 END), SUM(CASE WHEN kind = 'write' THEN 1 ELSE 0 END)
		FROM usage_events WHERE actor <> '' GROUP BY asset_id, day, actor`)
	benchdb.Must(err)
	_, err = db.SQL.ExecContext(ctx, `INSERT INTO usage_actor_monthlies (asset_id, month, actor, reads, writes)
		SELECT asset_id, substr(day, 1, 7), actor, SUM(reads), SUM(writes) FROM usage_actor_dailies GROUP BY asset_id, substr(day, 1, 7), actor`)
	benchdb.Must(err)
	_, err = db.SQL.ExecContext(ctx, `INSERT INTO usage_names (asset_id, namespace, name, first_at, last_at)
		SELECT asset_id, namespace, name, MIN(at), MAX(at) FROM usage_events GROUP BY asset_id, namespace, name`)
	benchdb.Must(err)
	_, err = db.SQL.ExecContext(ctx, "ANALYZE")
	benchdb.Must(err)
	fmt.Printf("rollups built: %s\n", time.Since(start).Round(time.Millisecond))

	var inproc, overHTTP []time.Duration
	for range *iterations {
		t0 := time.Now()
		s, err := use.Series(ctx, id, from, now, usage.Daily)
		benchdb.Must(err)
		inproc = append(inproc, time.Since(t0))
		if s.Reads+s.Writes != int64(*rawEvents) {
			log.Fatalf("series counts %d events, want %d", s.Reads+s.Writes, *rawEvents)
		}
		t0 = time.Now()
		r, err := http.Get(fmt.Sprintf("%s/api/v1/assets/%s/usage?from=%s&to=%s", base, id, usage.Day(from), usage.Day(now)))
		benchdb.Must(err)
		var body struct {
			Series []json.RawMessage `json:"series"`
		}
		benchdb.Must(json.NewDecoder(r.Body).Decode(&body))
		r.Body.Close()
		overHTTP = append(overHTTP, time.Since(t0))
		if r.StatusCode != 200 || len(body.Series) < 360 {
			log.Fatalf("usage API answered %d with %d points", r.StatusCode, len(body.Series))
		}
	}
	fmt.Printf("series of 366 days, %d iterations: in-process p50/p99/mean %s; over HTTP %s (target p99 < 50ms)\n",
		*iterations, benchdb.Stats(inproc), benchdb.Stats(overHTTP))
}
