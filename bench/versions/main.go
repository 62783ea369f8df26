// Command versions benchmarks lineage pinned to versions (issue 44) against PostgreSQL and
// prints the figures and ratios:
//
//  1. A history is generated with COPY: by default 1,000 tables in 20 layers of 50, each with
//     1,000 hourly snapshots (dataset_versions, committed through the REST catalog), one job per
//     table of layers 1..19 reading 3 random tables of the layer before it, one run of every job
//     an hour (runs, run_ios and lineage_edges as lineage ingest writes them), and every run
//     pinned to versions (run_versions: each input to the input's version current at the run's
//     start, stated or inferred; the output to the version it produced, stated, reported or
//     inferred): 950,000 runs and 3,800,000 run-version edges at the defaults (-inputs 9 gives
//     9,500,000).
//  2. The blast radius of a version in the middle of the history of a table 10 layers above the
//     leaves: GET /api/v1/assets/{id}/versions/{v}/impact?depth=10 over HTTP against the real
//     server in this process, next to a WITH RECURSIVE over the same run_versions rows that
//     computes the same set (the versions derived from it, each table's current version and
//     whether it is derived).
//  3. Lineage at a time in the middle of the history (GET /api/v1/assets/{id}/lineage?at=, read
//     from the database) against lineage now (the in-memory graph), over HTTP.
//
// The sides take turns (the first of a round alternates) over -rounds rounds after one untimed
// warm-up each; medians are printed with their ratio.
//
// Run it against a PostgreSQL server whose user may create databases (it creates and drops its
// own):
//
//	go run ./bench/versions -postgres 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
package main

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/web"
)

var (
	admin        = flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to create databases")
	nTables      = flag.Int("tables", 1000, "tables in all, split evenly over the layers")
	nLayers      = flag.Int("layers", 20, "layers of tables (a job sits between two consecutive layers)")
	nSnapshots   = flag.Int("snapshots", 1000, "snapshots per table, one an hour (and as many runs of every job)")
	nInputs      = flag.Int("inputs", 3, "tables of the layer before each job reads")
	rounds       = flag.Int("rounds", 5, "timed rounds; each runs every side once")
	impactDepth  = flag.Int("depth", 10, "impact depth, in runs (one layer each)")
	lineageDepth = flag.Int("lineage-depth", 10, "lineage depth, in API hops (a dataset to a job is one)")
	streams      = flag.Int("streams", 3, "concurrent COPY streams")
	seed         = flag.Int64("seed", 44, "seed of the random choices")
	keep         = flag.Bool("keep", false, "keep the benchmark database")
	cpuProfile   = flag.String("cpuprofile", "", "write a CPU profile of the timed rounds (client and server) here")
)

func main() {
	flag.Parse()
	if *admin == "" {
		log.Fatal("set -postgres or TIDEMARK_TEST_POSTGRES")
	}
	perLayer := *nTables / max(1, *nLayers)
	if *nLayers < 2 || perLayer < *nInputs || *nInputs < 1 || *nSnapshots < 2 || *rounds < 1 || *impactDepth < 1 {
		log.Fatal("need -layers >= 2, -inputs >= 1, -tables/-layers >= -inputs, -snapshots >= 2, -rounds >= 1, -depth >= 1")
	}
	ctx := context.Background()
	dsn, drop := benchdb.CreateDB(ctx, *admin, "tidemark_bench_versions", *keep)
	defer drop()
	db := benchdb.Open(ctx, dsn)

	h := newHistory(*nLayers, perLayer, *nSnapshots, *nInputs, *seed)
	fmt.Printf("== versions: %d tables (%d layers of %d), %d jobs reading %d tables each, %d hourly snapshots a table and runs a job\n",
		h.layers*h.perLayer, h.layers, h.perLayer, h.jobCount(), h.inputs, h.hours)
	gen := h.load(ctx, db.SQL)

	// The real API over the history, as serve wires it (app.Handler mounts every face the build
	// has), on 127.0.0.1; the background loops (the version resolver among them) are not run:
	// the history is complete.
	start := time.Now()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.Open(ctx, db, app.Config{LoadGraph: true, Log: logger})
	benchdb.Must(err)
	defer a.Close()
	n, err := a.Catalog.IndexMissing(ctx, nil)
	benchdb.Must(err)
	srv, err := a.Handler(server.Config{}, handlers.Config{Version: "bench"}, web.Config{})
	benchdb.Must(err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	benchdb.Must(err)
	go http.Serve(ln, srv)
	base := "http://" + ln.Addr().String()
	fmt.Printf("server: lineage graph loaded and %d search docs written in %s (untimed)\n", n, time.Since(start).Round(time.Millisecond))

	b := &bench{ctx: ctx, db: db.SQL, base: base, client: &http.Client{}, h: h}
	b.run()
	b.print(gen)
}

// history is the generated catalog: tables by layer, the job writing each table of layers
// 1.., the tables each job reads, every table's snapshot IDs by hour and every job's run IDs
// by hour. Times: in hour h, the table of layer l commits its snapshot at slot 2l+1 and the job
// writing it runs from slot 2l to slot 2l+1, so each run starts after its inputs' snapshot of
// the hour and reads it.
type history struct {
	layers, perLayer, hours, inputs int
	t0                              time.Time
	slot                            time.Duration
	tables                          [][]uuid.UUID // [layer][i]
	jobs                            [][]uuid.UUID // [layer-1][i]: the job writing tables[layer][i]
	reads                           [][][]int     // [layer-1][i]: indexes into tables[layer-1]
	snap                            []int64       // [table*hours+h], table = layer*perLayer+i
	runs                            []uuid.UUID   // [job*hours+h], job = (layer-1)*perLayer+i
}

func newHistory(layers, perLayer, hours, inputs int, seed int64) *history {
	rng := rand.New(rand.NewSource(seed))
	// The history ends an hour ago: lineage refuses an at in the future.
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-time.Duration(hours+1) * time.Hour)
	h := &history{layers: layers, perLayer: perLayer, hours: hours, inputs: inputs, t0: t0, slot: time.Hour / time.Duration(2*layers+2)}
	h.tables = make([][]uuid.UUID, layers)
	for l := range h.tables {
		h.tables[l] = make([]uuid.UUID, perLayer)
		for i := range h.tables[l] {
			h.tables[l][i] = v7(t0, rng)
		}
	}
	h.jobs = make([][]uuid.UUID, layers-1)
	h.reads = make([][][]int, layers-1)
	for l := range h.jobs {
		h.jobs[l] = make([]uuid.UUID, perLayer)
		h.reads[l] = make([][]int, perLayer)
		for i := range h.jobs[l] {
			h.jobs[l][i] = v7(t0, rng)
			h.reads[l][i] = rng.Perm(perLayer)[:inputs]
		}
	}
	h.snap = make([]int64, layers*perLayer*hours)
	seen := make(map[int64]bool, len(h.snap))
	for k := range h.snap {
		s := rng.Int63()
		for seen[s] {
			s = rng.Int63()
		}
		seen[s], h.snap[k] = true, s
	}
	h.runs = make([]uuid.UUID, h.jobCount()*hours)
	for j := range h.jobCount() {
		l := j/perLayer + 1
		for hr := range hours {
			h.runs[j*hours+hr] = v7(h.runStart(l, hr), rng) // OpenLineage run IDs are UUIDv7 of the run's start
		}
	}
	return h
}

func (h *history) jobCount() int { return (h.layers - 1) * h.perLayer }

func (h *history) hour(hr int) time.Time { return h.t0.Add(time.Duration(hr) * time.Hour) }

// committed is when table layer l's snapshot of hour hr was committed.
func (h *history) committed(l, hr int) time.Time {
	return h.hour(hr).Add(time.Duration(2*l+1) * h.slot)
}

// runStart and runEnd bound the run of hour hr of the job writing layer l (l >= 1).
func (h *history) runStart(l, hr int) time.Time { return h.hour(hr).Add(time.Duration(2*l) * h.slot) }
func (h *history) runEnd(l, hr int) time.Time   { return h.committed(l, hr) }

func (h *history) version(l, i, hr int) string {
	return strconv.FormatInt(h.snap[(l*h.perLayer+i)*h.hours+hr], 10)
}

// labels: how each edge is known, mixed deterministically per (job, hour, edge) so that the
// run_versions rows and the dataset_versions rows (a reported output's commit names the run)
// agree whichever stream writes them.
func mix(a, b, c int) uint64 {
	x := uint64(a)*0x9E3779B97F4A7C15 ^ uint64(b)*0xC2B2AE3D27D4EB4F ^ uint64(c+1)*0x165667B19E3779F9
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

func outputLabel(job, hr int) (kind, basis string) {
	switch mix(job, hr, -1) % 3 {
	case 0:
		return "stated", "the run's icebergCommitReport facet"
	case 1:
		return "reported", "a commit whose snapshot summary names the run"
	}
	return "inferred", "the only version committed in the run's window"
}

func inputLabel(job, hr, k int) (kind, basis string) {
	if mix(job, hr, k)%2 == 0 {
		return "stated", "the run's icebergScanReport facet"
	}
	return "inferred", "the version current at the run's start"
}

// v7 is a UUIDv7 of time t, as ent's UUIDv7 mixin and OpenLineage clients make them.
func v7(t time.Time, rng *rand.Rand) uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[8:], rng.Uint64())
	binary.BigEndian.PutUint64(u[0:], uint64(t.UnixMilli())<<16|uint64(rng.Intn(1<<16)))
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	return u
}

// generation is what loading the history took and wrote.
type generation struct {
	copyTook, indexTook, vacuumTook time.Duration
	rows                            map[string]int
}

// bigTables get their secondary indexes dropped for the COPY and built again after it (as a
// bulk load is done); their primary keys stay.
var bigTables = []string{"dataset_versions", "runs", "run_ios", "run_versions"}

// load writes the history with COPY, streams at a time, and returns what that took.
func (h *history) load(ctx context.Context, db *sql.DB) generation {
	g := generation{rows: map[string]int{}}
	var mu sync.Mutex
	count := func(table string, n int) { mu.Lock(); g.rows[table] += n; mu.Unlock() }

	var indexes []string
	for _, t := range bigTables {
		rows, err := db.QueryContext(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.schemaname = current_schema() AND i.tablename = $1
			AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname AND c.contype = 'p')`, t)
		benchdb.Must(err)
		for rows.Next() {
			var name, def string
			benchdb.Must(rows.Scan(&name, &def))
			indexes = append(indexes, def)
			_, err := db.ExecContext(ctx, "DROP INDEX "+name)
			benchdb.Must(err)
		}
		benchdb.Must(rows.Err())
		rows.Close()
	}

	start := time.Now()
	h.copyCatalog(ctx, db, count)
	// The big tables in parts of hours, shared out over the streams.
	type part struct {
		table    string
		from, to int
	}
	parts := make(chan part)
	go func() {
		step := max(1, h.hours/10)
		for from := 0; from < h.hours; from += step {
			for _, t := range bigTables {
				parts <- part{t, from, min(h.hours, from+step)}
			}
		}
		close(parts)
	}()
	var wg sync.WaitGroup
	for s := range *streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(*seed + int64(s) + 1)) // row IDs only
			for p := range parts {
				tx, err := db.BeginTx(ctx, nil)
				benchdb.Must(err)
				var n int
				switch p.table {
				case "dataset_versions":
					n = h.copyVersions(ctx, tx, rng, p.from, p.to)
				case "runs":
					n = h.copyRuns(ctx, tx, p.from, p.to)
				case "run_ios":
					n = h.copyRunIOs(ctx, tx, p.from, p.to)
				case "run_versions":
					n = h.copyRunVersions(ctx, tx, rng, p.from, p.to)
				}
				benchdb.Must(tx.Commit())
				count(p.table, n)
			}
		}()
	}
	wg.Wait()
	g.copyTook = time.Since(start)
	fmt.Printf("COPY of the history (%d streams): %s\n", *streams, g.copyTook.Round(time.Millisecond))

	// The indexes again, as the migrations define them, streams at a time.
	start = time.Now()
	defs := make(chan string)
	go func() {
		for _, d := range indexes {
			defs <- d
		}
		close(defs)
	}()
	for range *streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			benchdb.Must(err)
			defer conn.Close()
			_, err = conn.ExecContext(ctx, "SET maintenance_work_mem = '256MB'")
			benchdb.Must(err)
			for d := range defs {
				_, err := conn.ExecContext(ctx, d)
				benchdb.Must(err)
			}
		}()
	}
	wg.Wait()
	g.indexTook = time.Since(start)
	fmt.Printf("%d secondary indexes of %v built again: %s\n", len(indexes), bigTables, g.indexTook.Round(time.Millisecond))

	// Visibility maps and statistics, as autovacuum leaves a table that has stopped growing:
	// both sides read these tables.
	start = time.Now()
	_, err := db.ExecContext(ctx, "VACUUM ANALYZE")
	benchdb.Must(err)
	g.vacuumTook = time.Since(start)
	fmt.Printf("VACUUM ANALYZE: %s\n", g.vacuumTook.Round(time.Millisecond))
	return g
}

// copyCatalog writes the assets, their names and the lineage edges.
func (h *history) copyCatalog(ctx context.Context, db *sql.DB, count func(string, int)) {
	tx, err := db.BeginTx(ctx, nil)
	benchdb.Must(err)
	t0 := h.t0
	count("assets", copyRows(ctx, tx, "assets", []string{"id", "kind", "status", "version", "description", "created_at", "updated_at"}, func(emit func(...any)) {
		for _, layer := range h.tables {
			for _, id := range layer {
				emit(id, "table", "active", 1, "", t0, t0)
			}
		}
		for _, layer := range h.jobs {
			for _, id := range layer {
				emit(id, "job", "active", 1, "", t0, t0)
			}
		}
	}))
	count("asset_names", copyRows(ctx, tx, "asset_names", []string{"asset_id", "space", "namespace", "name", "valid_from"}, func(emit func(...any)) {
		for l, layer := range h.tables {
			for i, id := range layer {
				emit(id, "dataset", "bench", fmt.Sprintf("l%02d.t%03d", l, i), t0)
			}
		}
		for l, layer := range h.jobs {
			for i, id := range layer {
				emit(id, "job", "bench", fmt.Sprintf("build_l%02d.t%03d", l+1, i), t0)
			}
		}
	}))
	// As lineage ingest writes them: first_seen is the first run's start (its START event names
	// inputs and outputs), last_seen the last run's end.
	count("lineage_edges", copyRows(ctx, tx, "lineage_edges", []string{"from_id", "to_id", "first_seen", "last_seen", "last_run_id"}, func(emit func(...any)) {
		for l0, layer := range h.jobs {
			l := l0 + 1
			for i, job := range layer {
				j := l0*h.perLayer + i
				first, last, lastRun := h.runStart(l, 0), h.runEnd(l, h.hours-1), h.runs[j*h.hours+h.hours-1].String()
				for _, in := range h.reads[l0][i] {
					emit(h.tables[l0][in], job, first, last, lastRun)
				}
				emit(job, h.tables[l][i], first, last, lastRun)
			}
		}
	}))
	benchdb.Must(tx.Commit())
}

// copyVersions writes every table's snapshots of hours [from, to): committed through the REST
// catalog (source commit, seen in the table); a reported output's commit names its run.
func (h *history) copyVersions(ctx context.Context, tx *sql.Tx, rng *rand.Rand, from, to int) int {
	cols := []string{"id", "asset_id", "version", "snapshot_id", "parent_version", "sequence_number", "operation", "summary", "principal",
		"committed_at", "source", "seen_in_table", "run_id", "first_seen"}
	return copyRows(ctx, tx, "dataset_versions", cols, func(emit func(...any)) {
		for hr := from; hr < to; hr++ {
			for l, layer := range h.tables {
				op, principal := "append", "loader@bench"
				if l > 0 {
					op, principal = "overwrite", "etl@bench"
				}
				for i, id := range layer {
					at := h.committed(l, hr)
					parent := ""
					if hr > 0 {
						parent = h.version(l, i, hr-1)
					}
					runID := ""
					if l > 0 {
						j := (l-1)*h.perLayer + i
						if kind, _ := outputLabel(j, hr); kind == "reported" {
							runID = h.runs[j*h.hours+hr].String()
						}
					}
					summary := `{"added-records":"1000","total-records":"` + strconv.Itoa(1000*(hr+1)) + `"}`
					emit(v7(at, rng), id, h.version(l, i, hr), h.snap[(l*h.perLayer+i)*h.hours+hr], parent, int64(hr+1), op, summary, principal,
						at, "commit", true, runID, at)
				}
			}
		}
	})
}

// copyRuns writes the runs of hours [from, to), completed.
func (h *history) copyRuns(ctx context.Context, tx *sql.Tx, from, to int) int {
	cols := []string{"id", "job_asset_id", "state", "state_time", "started_at", "ended_at", "parent_run_id", "event_count", "created_at", "updated_at"}
	return copyRows(ctx, tx, "runs", cols, func(emit func(...any)) {
		for hr := from; hr < to; hr++ {
			for l0, layer := range h.jobs {
				for i, job := range layer {
					j := l0*h.perLayer + i
					start, end := h.runStart(l0+1, hr), h.runEnd(l0+1, hr)
					emit(h.runs[j*h.hours+hr].String(), job, "COMPLETE", end, start, end, "", 2, start, end)
				}
			}
		}
	})
}

// copyRunIOs writes the inputs and outputs of the runs of hours [from, to), first seen at the
// run's START event.
func (h *history) copyRunIOs(ctx context.Context, tx *sql.Tx, from, to int) int {
	return copyRows(ctx, tx, "run_ios", []string{"run_id", "asset_id", "role", "first_seen"}, func(emit func(...any)) {
		for hr := from; hr < to; hr++ {
			for l0 := range h.jobs {
				for i := range h.jobs[l0] {
					j := l0*h.perLayer + i
					run, start := h.runs[j*h.hours+hr].String(), h.runStart(l0+1, hr)
					for _, in := range h.reads[l0][i] {
						emit(run, h.tables[l0][in], "input", start)
					}
					emit(run, h.tables[l0+1][i], "output", start)
				}
			}
		}
	})
}

// copyRunVersions pins the runs of hours [from, to): each input to its version current at the
// run's start (the input table's snapshot of the hour), the output to the snapshot it committed.
func (h *history) copyRunVersions(ctx context.Context, tx *sql.Tx, rng *rand.Rand, from, to int) int {
	cols := []string{"id", "run_id", "asset_id", "role", "version", "kind", "basis", "flagged", "conflict", "at", "updated_at"}
	return copyRows(ctx, tx, "run_versions", cols, func(emit func(...any)) {
		for hr := from; hr < to; hr++ {
			for l0 := range h.jobs {
				l := l0 + 1
				for i := range h.jobs[l0] {
					j := l0*h.perLayer + i
					run, start, end := h.runs[j*h.hours+hr].String(), h.runStart(l, hr), h.runEnd(l, hr)
					for k, in := range h.reads[l0][i] {
						kind, basis := inputLabel(j, hr, k)
						emit(v7(start, rng), run, h.tables[l0][in], "input", h.version(l0, in, hr), kind, basis, false, "", start, end)
					}
					kind, basis := outputLabel(j, hr)
					emit(v7(end, rng), run, h.tables[l][i], "output", h.version(l, i, hr), kind, basis, false, "", end, end)
				}
			}
		}
	})
}

func copyRows(ctx context.Context, tx *sql.Tx, table string, cols []string, rows func(emit func(...any))) int {
	stmt, err := tx.PrepareContext(ctx, benchdb.CopyStatement(table, cols...))
	benchdb.Must(err)
	n := 0
	rows(func(v ...any) {
		_, err := stmt.ExecContext(ctx, v...)
		benchdb.Must(err)
		n++
	})
	_, err = stmt.ExecContext(ctx)
	benchdb.Must(err)
	benchdb.Must(stmt.Close())
	return n
}

// startTable is the table of layer l whose downstream within depth layers reaches the most
// tables (a table no job reads has no blast radius), and how many it reaches.
func (h *history) startTable(l, depth int) (int, int) {
	readers := make([][][]int, h.layers-1) // [layer][i]: the jobs (= tables of layer+1) reading tables[layer][i]
	for l0 := range h.reads {
		readers[l0] = make([][]int, h.perLayer)
		for i, ins := range h.reads[l0] {
			for _, in := range ins {
				readers[l0][in] = append(readers[l0][in], i)
			}
		}
	}
	best, bestN := 0, -1
	for i := range h.perLayer {
		frontier, n := map[int]bool{i: true}, 0
		for d := l; d < min(h.layers-1, l+depth); d++ {
			next := map[int]bool{}
			for t := range frontier {
				for _, o := range readers[d][t] {
					next[o] = true
				}
			}
			n += len(next)
			frontier = next
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	return best, bestN
}

// bench is the timed part: the history, the server over it and the baseline's database.
type bench struct {
	ctx    context.Context
	db     *sql.DB
	base   string
	client *http.Client
	h      *history
	cases  []*result
}

// result is one case's figures: each side's times and what it answered.
type result struct {
	name, sideA, sideB string
	a, b               []time.Duration
	sizeA, sizeB       string
	notes              []string
}

func (r *result) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(r.notes, s) {
		r.notes = append(r.notes, s)
	}
}

// impactCTE is the blast radius as one query over the same rows: the versions derived,
// transitively within $3 runs, from ($1, $2) (an input edge to the version, then the output
// edges of the same run), and for each table reached its current version (the newest by commit
// time, as the endpoint reads it for a table that is not an Iceberg table Tidemark tracks) and
// whether that is derived.
const impactCTE = `WITH RECURSIVE d(asset_id, version, depth) AS (
		SELECT $1::uuid, $2::text, 0
	UNION
		SELECT o.asset_id, o.version, d.depth + 1 FROM d
		JOIN run_versions i ON i.asset_id = d.asset_id AND i.version = d.version AND i.role = 'input'
		JOIN run_versions o ON o.run_id = i.run_id AND o.role = 'output' AND o.version <> ''
		WHERE d.depth < $3
), derived AS (
	SELECT asset_id, version, min(depth) AS depth FROM d WHERE depth > 0 GROUP BY asset_id, version
), cur AS (
	SELECT t.asset_id, c.version FROM (SELECT DISTINCT asset_id FROM derived) t
	LEFT JOIN LATERAL (SELECT v.version FROM dataset_versions v WHERE v.asset_id = t.asset_id AND v.committed_at IS NOT NULL
		ORDER BY v.committed_at DESC LIMIT 1) c ON true
)
SELECT x.asset_id, x.version, x.depth, cur.version,
	cur.version IS NOT NULL AND EXISTS (SELECT 1 FROM derived y WHERE y.asset_id = cur.asset_id AND y.version = cur.version)
FROM derived x JOIN cur ON cur.asset_id = x.asset_id`

// cteCounts is what the CTE found: tables reached, versions derived, tables whose current
// version is derived.
type cteCounts struct{ tables, versions, currentDerived int }

func (b *bench) impactBaseline(asset uuid.UUID, version string, depth int) (time.Duration, cteCounts) {
	t0 := time.Now()
	rows, err := b.db.QueryContext(b.ctx, impactCTE, asset, version, depth)
	benchdb.Must(err)
	tables, derived := map[string]bool{}, map[string]bool{}
	var c cteCounts
	for rows.Next() {
		var id, v, cur string
		var d int
		var curDerived bool
		var curV sql.NullString
		benchdb.Must(rows.Scan(&id, &v, &d, &curV, &curDerived))
		cur = curV.String
		c.versions++
		if !tables[id] {
			tables[id] = true
			if curDerived {
				derived[id+"/"+cur] = true
			}
		}
	}
	benchdb.Must(rows.Err())
	rows.Close()
	took := time.Since(t0)
	c.tables, c.currentDerived = len(tables), len(derived)
	return took, c
}

// get GETs url and reads the whole answer; it returns the status, the body and how long that
// took (to the answer's last byte).
func (b *bench) get(u string) (int, []byte, time.Duration) {
	t0 := time.Now()
	res, err := b.client.Get(u)
	benchdb.Must(err)
	body, err := io.ReadAll(res.Body)
	benchdb.Must(err)
	res.Body.Close()
	return res.StatusCode, body, time.Since(t0)
}

// impactCounts reads what an impact answer holds, as far as its shape is known here: the
// tables listed, the derived versions listed under them, the tables whose current version is
// derived, and whether it says truncated. -1: the answer has no such field.
type impactCounts struct {
	tables, versions, currentDerived int
	truncated                        bool
}

func countImpact(body []byte) impactCounts {
	c := impactCounts{tables: -1, versions: -1, currentDerived: -1}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return c
	}
	_ = json.Unmarshal(top["truncated"], &c.truncated)
	var tables []map[string]json.RawMessage
	if json.Unmarshal(top["tables"], &tables) != nil || tables == nil {
		return c
	}
	c.tables = len(tables)
	for _, t := range tables {
		for _, key := range []string{"derived_versions", "derived"} {
			var derived []json.RawMessage
			if json.Unmarshal(t[key], &derived) == nil && derived != nil {
				c.versions = max(c.versions, 0) + len(derived)
				break
			}
		}
		var cur struct {
			Derived *bool `json:"derived"`
		}
		if json.Unmarshal(t["current"], &cur) == nil && cur.Derived != nil {
			c.currentDerived = max(c.currentDerived, 0)
			if *cur.Derived {
				c.currentDerived++
			}
		}
	}
	return c
}

func countStr(n int) string {
	if n < 0 {
		return "?"
	}
	return strconv.Itoa(n)
}

func (b *bench) run() {
	h := b.h
	l := max(0, h.layers-1-*impactDepth)
	i, reach := h.startTable(l, *impactDepth)
	asset, hr := h.tables[l][i], h.hours/2
	version := h.version(l, i, hr)
	fmt.Printf("start: table bench.l%02d.t%03d (%s), layer %d of %d, whose downstream reaches %d tables within %d layers; its version %s (hour %d of %d)\n",
		l, i, asset, l, h.layers, reach, *impactDepth, version, hr, h.hours)

	// a. The blast radius: the endpoint against the CTE.
	imp := &result{name: fmt.Sprintf("impact depth %d", *impactDepth), sideA: "HTTP .../versions/{v}/impact", sideB: "WITH RECURSIVE in PostgreSQL"}
	b.cases = append(b.cases, imp)
	impactURL := fmt.Sprintf("%s/api/v1/assets/%s/versions/%s/impact?depth=%d", b.base, asset, version, *impactDepth)
	endpoint := true
	var got impactCounts
	var gotSize int
	var want cteCounts
	sideImpact := func(timed bool) {
		if !endpoint {
			return
		}
		status, body, took := b.get(impactURL)
		switch {
		case status == http.StatusOK:
			got, gotSize = countImpact(body), len(body)
			if timed {
				imp.a = append(imp.a, took)
			}
		case status == http.StatusNotFound && !routeKnown(body, version):
			imp.note("endpoint not on this build (404: %s)", problemDetail(body))
			endpoint = false
		default:
			imp.note("the endpoint answered %d: %s", status, excerpt(body))
			endpoint = false
		}
	}
	sideCTE := func(timed bool) {
		took, c := b.impactBaseline(asset, version, *impactDepth)
		want = c
		if timed {
			imp.b = append(imp.b, took)
		}
	}

	// b. Lineage at a time against lineage now.
	at := h.hour(hr).Add(30 * time.Minute)
	lin := &result{name: fmt.Sprintf("lineage downstream depth %d", *lineageDepth), sideA: "HTTP lineage at=" + at.Format(time.RFC3339), sideB: "HTTP lineage now (memory)"}
	b.cases = append(b.cases, lin)
	lineageURL := fmt.Sprintf("%s/api/v1/assets/%s/lineage?direction=downstream&depth=%d", b.base, asset, *lineageDepth)
	atURL := lineageURL + "&at=" + url.QueryEscape(at.Format(time.RFC3339))
	atOK := true
	var atNodes, nowNodes, atSize, nowSize int
	sideAt := func(timed bool) {
		if !atOK {
			return
		}
		status, body, took := b.get(atURL)
		if status != http.StatusOK {
			lin.note("the server refused at (%d: %s)", status, excerpt(body))
			atOK = false
			return
		}
		var a struct {
			At    *string           `json:"at"`
			Nodes []json.RawMessage `json:"nodes"`
		}
		benchdb.Must(json.Unmarshal(body, &a))
		if a.At == nil { // both sides would time the graph now
			lin.note("the server ignored at (its answer names no at: the graph now); not timed")
			atOK = false
			return
		}
		atNodes, atSize = len(a.Nodes), len(body)
		if timed {
			lin.a = append(lin.a, took)
		}
	}
	sideNow := func(timed bool) {
		status, body, took := b.get(lineageURL)
		if status != http.StatusOK {
			log.Fatalf("%s answered %d: %s", lineageURL, status, excerpt(body))
		}
		var a struct {
			Nodes []json.RawMessage `json:"nodes"`
		}
		benchdb.Must(json.Unmarshal(body, &a))
		nowNodes, nowSize = len(a.Nodes), len(body)
		if timed {
			lin.b = append(lin.b, took)
		}
	}

	// One untimed warm-up each, then the rounds; the side that goes first alternates.
	for r := -1; r < *rounds; r++ {
		timed := r >= 0
		if r == 0 && *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			benchdb.Must(err)
			benchdb.Must(pprof.StartCPUProfile(f))
			defer func() { pprof.StopCPUProfile(); benchdb.Must(f.Close()) }()
		}
		pairs := [][2]func(bool){{sideImpact, sideCTE}, {sideAt, sideNow}}
		for _, p := range pairs {
			first, second := p[0], p[1]
			if r%2 != 0 {
				first, second = second, first
			}
			first(timed)
			second(timed)
		}
	}

	imp.sizeB = fmt.Sprintf("%d tables, %d versions derived, %d tables' current version derived", want.tables, want.versions, want.currentDerived)
	if len(imp.a) > 0 {
		imp.sizeA = fmt.Sprintf("%d tables, %s versions derived, %s tables' current version derived; %d bytes", got.tables,
			countStr(got.versions), countStr(got.currentDerived), gotSize)
		if got.truncated {
			imp.note("the endpoint's answer says truncated")
		}
		if got.tables >= 0 && (got.tables != want.tables || (got.versions >= 0 && got.versions != want.versions) ||
			(got.currentDerived >= 0 && got.currentDerived != want.currentDerived)) {
			imp.note("the counts differ: endpoint %d tables / %s versions / %s current derived, CTE %d / %d / %d",
				got.tables, countStr(got.versions), countStr(got.currentDerived), want.tables, want.versions, want.currentDerived)
		}
	}
	lin.sizeB = fmt.Sprintf("%d nodes, %d bytes", nowNodes, nowSize)
	if len(lin.a) > 0 {
		lin.sizeA = fmt.Sprintf("%d nodes, %d bytes", atNodes, atSize)
		if atNodes != nowNodes {
			lin.note("at and now differ: %d nodes then, %d now", atNodes, nowNodes)
		}
	}
}

// problemDetail is the detail of a problem document, else the start of the body.
func problemDetail(body []byte) string {
	var p struct {
		Detail string `json:"detail"`
	}
	if json.Unmarshal(body, &p) == nil && p.Detail != "" {
		return p.Detail
	}
	return excerpt(body)
}

// routeKnown tells a 404 for a version the endpoint does not know (its detail names the
// version) from a 404 for a route the build does not have.
func routeKnown(body []byte, version string) bool {
	return strings.Contains(problemDetail(body), version)
}

func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fms", float64(benchdb.Stats(slices.Clone(ds)).P50.Microseconds())/1000)
}

func (b *bench) print(g generation) {
	fmt.Printf("\nMedians of %d rounds (each round runs both sides of a case in turn, the first alternating; one untimed warm-up each).\n", *rounds)
	fmt.Println("ratio = the second side's median over the first's (above 1: the first is faster).")
	fmt.Printf("%-28s | %-44s | %9s | %-28s | %9s | %7s\n", "case", "first side", "median", "second side", "median", "ratio")
	for _, c := range b.cases {
		ratio := "-"
		if len(c.a) > 0 && len(c.b) > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(benchdb.Stats(slices.Clone(c.b)).P50)/float64(benchdb.Stats(slices.Clone(c.a)).P50))
		}
		fmt.Printf("%-28s | %-44s | %9s | %-28s | %9s | %7s\n", c.name, c.sideA, median(c.a), c.sideB, median(c.b), ratio)
	}
	fmt.Println("\nsizes:")
	for _, c := range b.cases {
		a := c.sizeA
		if a == "" {
			a = "-"
		}
		fmt.Printf("  %s: first side %s; second side %s\n", c.name, a, c.sizeB)
		for _, n := range c.notes {
			fmt.Printf("    note: %s\n", n)
		}
	}
	fmt.Printf("\ngeneration: COPY %s, indexes %s, VACUUM ANALYZE %s, in all %s\n", g.copyTook.Round(time.Millisecond),
		g.indexTook.Round(time.Millisecond), g.vacuumTook.Round(time.Millisecond), (g.copyTook + g.indexTook + g.vacuumTook).Round(time.Millisecond))
	var names []string
	for t := range g.rows {
		names = append(names, t)
	}
	slices.Sort(names)
	fmt.Print("rows:")
	for _, t := range names {
		fmt.Printf(" %s %d;", t, g.rows[t])
	}
	fmt.Println()
}
