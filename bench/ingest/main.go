// Command ingest benchmarks OpenLineage ingest into PostgreSQL over HTTP, as producers call it
// (POST /api/v1/lineage/batch), in the two cases issue 47 names, alternately, several rounds:
//
//  1. First ingest: every RunEvent (3 known inputs, 1 output) names a new job and a new output
//     dataset, so it creates two assets (with their names, name history, search documents and
//     audit). Printed as events a second; the target is 4,000. Its rows are COPYed as in case 2
//     as well: not a target, the bound any design that writes the same rows works under.
//  2. Existing datasets: the datasets and jobs the events name exist beforehand (created
//     untimed). The rows the run produced are then loaded into a fresh database with one COPY per
//     table, as the ceiling; printed as ingest rate / COPY rate; the target is 50%.
//
// Each round runs both cases on fresh databases, first-ingest first in odd rounds and second in
// even ones; the figures are the medians over the rounds. It creates and drops its own databases:
//
//	go run ./bench/ingest -postgres 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"math/rand"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
)

var (
	admin       = flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to create databases")
	freshEvents = flag.Int("fresh-events", 95_000, "first ingest: RunEvents per round (each creates two assets)")
	events      = flag.Int("events", 100_000, "existing datasets: RunEvents per round")
	batchSize   = flag.Int("batch", 500, "events per batch request")
	clients     = flag.Int("clients", 4, "concurrent ingest clients")
	slots       = flag.Int("slots", 0, "the server's concurrent ingest transactions (lineage.WithConcurrency; 0: twice -clients)")
	rounds      = flag.Int("rounds", 3, "rounds (each runs both cases once, alternating which goes first)")
	cases       = flag.String("cases", "both", "both, fresh or existing")
	keep        = flag.Bool("keep", false, "keep the benchmark databases")
	cpuProfile  = flag.String("cpuprofile", "", "write a CPU profile of each timed ingest (server and load client; the COPYs are left out) to this path plus .1, .2, ...")
	memProfile  = flag.String("memprofile", "", "write the allocations profile after each timed ingest to this path plus .1, .2, ... (the process's allocations since it started)")
	logStmts    = flag.Bool("log-statements", false, "have the server log every statement of the ingest databases with its duration, and lock waits (to its own log), to see where the time goes")
)

// The catalog the events name: datasets t_0... and jobs job_0...
const datasets, jobsN = 20_000, 5_000

func main() {
	flag.Parse()
	if *admin == "" {
		log.Fatal("set -postgres or TIDEMARK_TEST_POSTGRES")
	}
	ctx := context.Background()
	fmt.Printf("ingest over HTTP into PostgreSQL: RunEvents with 3 inputs and 1 output, batches of %d, %d clients, %d rounds\n", *batchSize, *clients, *rounds)
	var freshRates, rates, copyRates, ratios []float64
	for r := range *rounds {
		fmt.Printf("\n-- round %d\n", r+1)
		runFresh := func() {
			if *cases != "existing" {
				freshRates = append(freshRates, firstIngest(ctx))
			}
		}
		runExisting := func() {
			if *cases != "fresh" {
				rate, copyRate := existingIngest(ctx)
				rates, copyRates, ratios = append(rates, rate), append(copyRates, copyRate), append(ratios, rate/copyRate)
			}
		}
		if r%2 == 0 {
			runFresh()
			runExisting()
		} else {
			runExisting()
			runFresh()
		}
	}
	fmt.Printf("\n== medians over %d rounds\n", *rounds)
	if len(freshRates) > 0 {
		m := median(freshRates)
		fmt.Printf("first ingest (2 new assets an event, %d events a round): %s events/s; median %.0f events/s = %.0f%% of the 4,000/s target\n",
			*freshEvents, list(freshRates, "%.0f"), m, 100*m/4000)
		fmt.Printf("first ingest: CPU an event (this database's backends and this process) %sus, median %.0fus\n", list(freshCPU, "%.0f"), median(freshCPU))
		fmt.Printf("first ingest: COPY of the same rows %s events/s, median %.0f (%.0f%% of the 4,000/s target); CPU an event %sus, median %.0fus; ingest / COPY %.1f%%\n",
			list(freshCopyRates, "%.0f"), median(freshCopyRates), 100*median(freshCopyRates)/4000, list(freshCopyCPU, "%.0f"), median(freshCopyCPU), 100*m/median(freshCopyRates))
	}
	if len(rates) > 0 {
		fmt.Printf("existing datasets (%d events a round): ingest %s events/s, median %.0f; COPY of the same rows %s events/s, median %.0f\n",
			*events, list(rates, "%.0f"), median(rates), list(copyRates, "%.0f"), median(copyRates))
		pct := make([]float64, len(ratios))
		for i, x := range ratios {
			pct[i] = 100 * x
		}
		fmt.Printf("existing datasets: ingest / COPY per round %s%%; median of the rounds' ratios %.1f%%, ratio of the medians %.1f%% (target 50%%)\n",
			list(pct, "%.1f"), median(pct), 100*median(rates)/median(copyRates))
		fmt.Printf("existing datasets: CPU an event, ingest %sus (median %.0f), COPY %sus (median %.0f); COPY / ingest CPU = %.1f%%\n",
			list(existingCPU, "%.0f"), median(existingCPU), list(copyCPU, "%.0f"), median(copyCPU), 100*median(copyCPU)/median(existingCPU))
	}
}

// profiled counts the timed runs profiled so far (each writes its own file).
var profiled int

// CPU an event (this database's PostgreSQL backends and this process), per round: a figure the
// other work on a shared machine disturbs far less than a rate.
var freshCPU, freshCopyCPU, existingCPU, copyCPU []float64

// The first ingest's COPY ceiling a round (events a second): not a target, the bound a design
// that writes the same rows works under.
var freshCopyRates []float64

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(xs []float64, format string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, format, x)
	}
	return b.String()
}

// firstIngest times events that each create a new job and a new output dataset into an empty
// catalog, and returns the events a second.
func firstIngest(ctx context.Context) float64 {
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_ingest_fresh", *keep)
	defer drop()
	logStatements(ctx, dsn)
	db := benchdb.Open(ctx, dsn)
	defer db.Close()
	// Nothing exists beforehand (as in bench/lineage -fresh): the inputs, 20,000 names drawn at
	// random, are created by the first events that read them, the jobs and outputs by every event.
	in := newIngestBench(ctx, db)
	rate := in.post(in.eventBatches(*freshEvents, true), "first ingest")
	var assets int
	benchdb.Must(db.SQL.QueryRowContext(ctx, "SELECT count(*) FROM assets WHERE created_at >= $1", in.before).Scan(&assets))
	fmt.Printf("  assets created by the run: %d (%.2f an event)\n", assets, float64(assets)/float64(max(1, in.Done.Load())))
	copyRate, copyUS := in.copyCeiling(rate)
	freshCPU, freshCopyCPU, freshCopyRates = append(freshCPU, in.cpuUS()), append(freshCopyCPU, copyUS), append(freshCopyRates, copyRate)
	return rate
}

// existingIngest times events over datasets and jobs that exist, then COPYs the rows the run
// wrote into a fresh database; it returns both rates in events a second.
func existingIngest(ctx context.Context) (rate, copyRate float64) {
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_ingest_existing", *keep)
	defer drop()
	logStatements(ctx, dsn)
	db := benchdb.Open(ctx, dsn)
	defer db.Close()
	benchdb.CreateBeforehand(ctx, db, datasets, jobsN)
	in := newIngestBench(ctx, db)
	rate = in.post(in.eventBatches(*events, false), "existing datasets")
	copyRate, copyUS := in.copyCeiling(rate)
	existingCPU, copyCPU = append(existingCPU, in.cpuUS()), append(copyCPU, copyUS)
	return rate, copyRate
}

// copyCeiling COPYs the rows the timed run wrote into a fresh database (after the rows that
// existed before it, untimed), prints the figures beside the ingest's rate, and returns the
// COPY's rate in events a second and its CPU an event in microseconds.
func (in *ingestBench) copyCeiling(rate float64) (copyRate, cpuUS float64) {
	pre, timed := in.readRows()
	copyDSN, dropCopy := benchdb.CreateDB(in.ctx, *admin, "tidemark_bench_ingest_copy", *keep)
	defer dropCopy()
	cdb := benchdb.Open(in.ctx, copyDSN)
	defer cdb.Close()
	benchdb.CopyAll(in.ctx, cdb, pre)
	be0, go0 := backendCPU(in.ctx, cdb), benchdb.ProcessCPU()
	took := benchdb.CopyAll(in.ctx, cdb, timed)
	cpu := cpuSince(be0, backendCPU(in.ctx, cdb)) + benchdb.ProcessCPU() - go0
	n := float64(in.Done.Load())
	copyRate, cpuUS = n/took.Seconds(), float64(cpu.Microseconds())/n
	fmt.Printf("  COPY of the run's rows into a fresh database: %s = %.0f events/s; ingest / COPY = %.1f%%; CPU an event (backends and this process): "+
		"ingest %.0fus, COPY %.0fus, COPY / ingest = %.1f%%\n",
		took.Round(time.Millisecond), copyRate, 100*rate/copyRate, in.cpuUS(), cpuUS, 100*float64(cpu)/float64(in.cpu))
	return copyRate, cpuUS
}

// cpuUS is the timed run's CPU an event in microseconds (this database's backends and this process).
func (in *ingestBench) cpuUS() float64 {
	return float64(in.cpu.Microseconds()) / float64(max(1, in.Done.Load()))
}

// logStatements has the server log each statement in the database dsn names with its duration,
// and lock waits, when -log-statements is set (parameters left out: the arrays are large). Set
// on the database, not the server: other work on the shared server logs as before.
func logStatements(ctx context.Context, dsn string) {
	if !*logStmts {
		return
	}
	u, err := url.Parse(dsn)
	benchdb.Must(err)
	name := strings.TrimPrefix(u.Path, "/")
	db, err := sql.Open("postgres", *admin)
	benchdb.Must(err)
	defer db.Close()
	for _, set := range []string{"log_min_duration_statement = 0", "log_parameter_max_length = 0", "log_lock_waits = on", "deadlock_timeout = '100ms'"} {
		_, err := db.ExecContext(ctx, "ALTER DATABASE "+pq.QuoteIdentifier(name)+" SET "+set)
		benchdb.Must(err)
	}
}

// ingestBench is one timed run: the database, the server over it, and what it counted.
type ingestBench struct {
	*benchdb.IngestClient
	ctx    context.Context
	db     *storage.DB
	before time.Time // rows written from here on are the run's
	rng    *rand.Rand
	cpu    time.Duration // the timed run's CPU: this database's backends and this process
}

// newIngestBench starts the real API over db (wired as serve wires it, app.Open: usage of
// completed runs, change hooks, the graph loaded) on 127.0.0.1:0.
func newIngestBench(ctx context.Context, db *storage.DB) *ingestBench {
	// Warnings go to stderr: a refused or retried batch says why.
	n := *slots
	if n == 0 {
		n = 2 * *clients
	}
	a, err := app.Open(ctx, db, app.Config{LoadGraph: true, Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Lineage: []lineage.Option{lineage.WithConcurrency(n, 30*time.Second)}})
	benchdb.Must(err)
	base, token := benchdb.Serve(ctx, db, handlers.Config{Catalog: a.Catalog, Lineage: a.Lineage, Usage: a.Usage, Tables: a.Tables})
	in := &ingestBench{IngestClient: &benchdb.IngestClient{Base: base, Token: token}, ctx: ctx, db: db, rng: rand.New(rand.NewSource(7))}
	benchdb.Must(db.SQL.QueryRowContext(ctx, "SELECT now()").Scan(&in.before))
	return in
}

// eventBatches builds n events as JSON batch request bodies, ahead of the timed run (a
// producer's CPU is not the server's: on a machine of 2 cores, building them during the run took
// CPU from the server), and returns them on a closed channel. Event i happens a tenth of a second
// after event i-1, ending about now. fresh: each event's job and output are new names.
func (in *ingestBench) eventBatches(n int, fresh bool) <-chan []byte {
	// Events from the last hours, as a live stream sends them: completed runs count as usage,
	// which events older than the usage lateness would skip.
	t0 := time.Now().Add(-time.Duration(n) * time.Second / 10).Truncate(time.Second)
	rng := in.rng
	ds := func(name string) map[string]any { return map[string]any{"namespace": "bench", "name": name} }
	batches := make(chan []byte, (n+*batchSize-1) / *batchSize)
	for sent := 0; sent < n; sent += *batchSize {
		var batch []map[string]any
		for i := sent; i < min(sent+*batchSize, n); i++ {
			j := rng.Intn(jobsN)
			job, out := fmt.Sprintf("job_%d", j), fmt.Sprintf("t_%d", j)
			if fresh {
				job, out = fmt.Sprintf("new_job_%d", i), fmt.Sprintf("new_t_%d", i)
			}
			at := t0.Add(time.Duration(i) * time.Second / 10)
			batch = append(batch, benchdb.RunEvent(at, job,
				[]any{ds(fmt.Sprintf("t_%d", rng.Intn(datasets))), ds(fmt.Sprintf("t_%d", rng.Intn(datasets))), ds(fmt.Sprintf("t_%d", rng.Intn(datasets)))},
				[]any{ds(out)}))
		}
		b, err := json.Marshal(batch)
		benchdb.Must(err)
		batches <- b
	}
	close(batches)
	return batches
}

// post is the timed run: the clients POST the batches until there are none left. It prints and
// returns the events a second.
func (in *ingestBench) post(batches <-chan []byte, what string) float64 {
	if *cpuProfile != "" || *memProfile != "" {
		profiled++
	}
	if *cpuProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", *cpuProfile, profiled))
		benchdb.Must(err)
		benchdb.Must(pprof.StartCPUProfile(f))
		defer func() {
			pprof.StopCPUProfile()
			benchdb.Must(f.Close())
		}()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(fmt.Sprintf("%s.%d", *memProfile, profiled))
			benchdb.Must(err)
			benchdb.Must(pprof.Lookup("allocs").WriteTo(f, 0))
			benchdb.Must(f.Close())
		}()
	}
	pg0, go0, be0 := benchdb.ServerCPU(), benchdb.ProcessCPU(), backendCPU(in.ctx, in.db)
	took := in.PostAll(batches, *clients)
	pgCPU, goCPU, beCPU := benchdb.ServerCPU()-pg0, benchdb.ProcessCPU()-go0, cpuSince(be0, backendCPU(in.ctx, in.db))
	n := in.Done.Load()
	rate := float64(n) / took.Seconds()
	in.cpu = beCPU + goCPU
	perEvent := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(1, n)) }
	fmt.Printf("  %s: %d events (%d failed, %d batches retried after 503) in %s = %.0f events/s; CPU an event: this database's PostgreSQL backends %.0fus "+
		"(every PostgreSQL process on the machine %.0fus), Tidemark and client %.0fus\n",
		what, n, in.Failed.Load(), in.Retries.Load(), took.Round(time.Millisecond), rate, perEvent(beCPU), perEvent(pgCPU), perEvent(goCPU))
	if in.Failed.Load() > 0 {
		log.Fatalf("%s: %d events refused", what, in.Failed.Load())
	}
	return rate
}

// readRows reads every row the ingest wrote, ahead of the COPY ceiling (benchdb.IngestRows).
func (in *ingestBench) readRows() (pre, timed []benchdb.Rows) {
	return benchdb.IngestRows(in.ctx, in.db.SQL, in.before)
}

// backendCPU is the CPU time (user and system, from /proc) each PostgreSQL backend connected to
// db's database has used so far, by process ID. Unlike benchdb.ServerCPU it leaves out other
// databases' backends (the machine is shared) and autovacuum.
func backendCPU(ctx context.Context, db *storage.DB) map[int]time.Duration {
	rows, err := db.SQL.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
	benchdb.Must(err)
	defer rows.Close()
	cpu := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		benchdb.Must(rows.Scan(&pid))
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // another machine's server: the figure is then 0, and says nothing
		}
		st := string(b)
		f := strings.Fields(st[strings.LastIndexByte(st, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		sy, _ := strconv.ParseInt(f[12], 10, 64)
		cpu[pid] = time.Duration(u+sy) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	benchdb.Must(rows.Err())
	return cpu
}

// cpuSince is what the backends of after used since before (a backend new since counts whole).
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, c := range after {
		d += c - before[pid]
	}
	return d
}
