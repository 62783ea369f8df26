// Command load runs a bounded mixed load against a real `tidemark serve` on loopback and prints,
// per operation, the rate, p50/p99 latency and the answers by status. It builds the binary,
// creates a write token, starts the server (SQLite in a temporary directory, or the PostgreSQL
// database -postgres names: it creates and drops its own), and for -duration (60 s) runs at once:
// OpenLineage batches with new datasets in every event, single events, usage batches naming
// those datasets, asset reads, API searches, lineage neighbourhoods, web asset pages and web
// searches, and the migration routes: an external checker posting runs of 500 windows, the
// runs list, pages of a run's windows and the migration's web page, and requests with made-up
// HTTP methods of 4 KB. It prints the server's resident memory and the /metrics answer's size
// before and after. It stops by itself and exits 1 if any answer was a 500.
//
//	go run ./bench/load
//	go run ./bench/load -postgres 'postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable'
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark/tidemark/bench/internal/benchdb"
)

func main() {
	pg := flag.String("postgres", "", "PostgreSQL server (a user that may create databases); empty runs on SQLite")
	duration := flag.Duration("duration", 60*time.Second, "how long the load runs")
	workers := flag.Int("workers", 2, "concurrent clients per operation")
	flag.Parse()
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "tidemark-load-")
	benchdb.Must(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tidemark")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	benchdb.Must(build.Run())

	dbArgs := []string{"--data-dir", filepath.Join(dir, "data")}
	backend := "sqlite"
	if *pg != "" {
		dsn, drop := benchdb.CreateDB(ctx, *pg, "tidemark_load", false)
		defer drop()
		dbArgs = append(dbArgs, "--db", dsn)
		backend = "postgres"
	}
	out, err := exec.Command(bin, append([]string{"token", "create", "--name", "load", "--scopes", "write"}, dbArgs...)...).Output()
	benchdb.Must(err)
	token := strings.TrimSpace(string(out))
	out, err = exec.Command(bin, append([]string{"token", "create", "--name", "load-admin", "--scopes", "admin"}, dbArgs...)...).Output()
	benchdb.Must(err)
	admin := strings.TrimSpace(string(out))

	srv := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--rate-limit", "0", "--rate-limit-anonymous", "0",
		"--tables-sync-interval", "0", "--scan-interval", "0", "--cleanup-interval", "0"}, dbArgs...)...)
	stderr, err := srv.StderrPipe()
	benchdb.Must(err)
	benchdb.Must(srv.Start())
	defer func() { srv.Process.Signal(os.Interrupt); srv.Wait() }()
	base := "http://" + listenAddr(stderr)

	l := &load{base: base, token: token, client: &http.Client{Timeout: time.Minute}, stats: map[string]*opStats{}}
	// A seed, so reads have something to find from the first second.
	l.lineageBatch(10)
	l.migration = l.createMigration(admin)
	l.windowRun()
	rssBefore, metricsBefore := rss(srv.Process.Pid), l.metricsSize()
	ops := []struct {
		name string
		fn   func() (int, error)
	}{
		{"lineage batch (50 events, 6 new datasets each)", func() (int, error) { return l.lineageBatch(50) }},
		{"lineage event", func() (int, error) { return l.lineageBatch(0) }},
		{"usage batch (200 records)", l.usageBatch},
		{"GET asset", func() (int, error) { return l.get("/api/v1/assets/" + l.someAsset()) }},
		{"GET assets?q=", func() (int, error) { return l.get("/api/v1/assets?q=" + l.someWord()) }},
		{"GET asset lineage (depth 5)", func() (int, error) {
			return l.get("/api/v1/assets/" + l.someAsset() + "/lineage?direction=both&depth=5")
		}},
		{"web asset page", func() (int, error) { return l.get("/assets/" + l.someAsset()) }},
		{"web search", func() (int, error) { return l.get("/?q=" + l.someWord()) }},
		{"POST migration run (500 windows)", l.windowRun},
		{"GET migration runs (limit 500)", func() (int, error) { return l.get(l.migration + "/runs?limit=500") }},
		{"GET run windows (page of 500)", l.windowPage},
		{"web migration page", func() (int, error) { return l.get(strings.TrimPrefix(l.migration, "/api/v1")) }},
		{"made-up method (4 KB)", l.madeUpMethod},
	}
	deadline := time.Now().Add(*duration)
	var wg sync.WaitGroup
	for _, op := range ops {
		st := &opStats{status: map[int]int{}}
		l.stats[op.name] = st
		for range *workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					start := time.Now()
					code, err := op.fn()
					st.add(code, err, time.Since(start))
				}
			}()
		}
	}
	fmt.Fprintf(os.Stderr, "load: %s, %d clients per operation, %s on %s\n", backend, *workers, *duration, base)
	wg.Wait()

	rssAfter, metricsAfter := rss(srv.Process.Pid), l.metricsSize()
	fmt.Printf("backend %s, %s, %d clients per operation, %d datasets created\n", backend, *duration, *workers, l.datasets.Load())
	fmt.Printf("server RSS %d MiB before the load, %d MiB after; /metrics %d KiB before, %d KiB after\n",
		rssBefore>>20, rssAfter>>20, metricsBefore>>10, metricsAfter>>10)
	fmt.Printf("%-48s %8s %10s %10s  %s\n", "operation", "req/s", "p50", "p99", "answers by status")
	var fivehundreds int
	names := make([]string, 0, len(l.stats))
	for n := range l.stats {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		st := l.stats[n]
		s := benchdb.Stats(st.lat)
		fmt.Printf("%-48s %8.1f %10s %10s  %v\n", n, float64(len(st.lat))/duration.Seconds(), ms(s.P50), ms(s.P99), st.status)
		fivehundreds += st.status[500]
	}
	if fivehundreds > 0 {
		log.Fatalf("%d answers were 500", fivehundreds)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// listenAddr reads the server's log until it says where it listens, then drains the rest.
func listenAddr(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
			go io.Copy(io.Discard, r)
			return line.Addr
		}
		fmt.Fprintln(os.Stderr, sc.Text())
	}
	log.Fatal("the server stopped before it listened")
	return ""
}

type opStats struct {
	mu     sync.Mutex
	lat    []time.Duration
	status map[int]int // -1: transport error
}

func (s *opStats) add(code int, err error, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		code = -1
	}
	s.status[code]++
	s.lat = append(s.lat, d)
}

type load struct {
	base, token string
	client      *http.Client
	stats       map[string]*opStats
	seq         atomic.Int64
	datasets    atomic.Int64

	migration string // the migration's API path
	lastRun   atomic.Value

	mu     sync.Mutex
	assets []string // IDs read back from batches
	names  []string // dataset names created
}

func (l *load) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, l.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	res, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode == 500 {
		fmt.Fprintf(os.Stderr, "500 on %s %s: %s\n", method, path, b)
	}
	return res.StatusCode, b, err
}

func (l *load) get(path string) (int, error) {
	code, _, err := l.do("GET", path, nil)
	return code, err
}

// lineageBatch posts n run events (or one event to the single-event endpoint when n is 0), each
// job reading 5 new datasets and one known one and writing a new one.
func (l *load) lineageBatch(n int) (int, error) {
	single := n == 0
	n = max(n, 1)
	at := time.Now().UTC().Add(-time.Minute)
	evs := make([]map[string]any, n)
	var created []string
	for i := range n {
		k := l.seq.Add(1)
		var ins []map[string]any
		for j := range 5 {
			name := fmt.Sprintf("lake/%s/t%d_%d", word(k), k, j)
			created = append(created, name)
			ins = append(ins, map[string]any{"namespace": "s3://load", "name": name})
		}
		if known := l.someName(); known != "" {
			ins = append(ins, map[string]any{"namespace": "s3://load", "name": known})
		}
		out := fmt.Sprintf("lake/%s/out%d", word(k), k)
		created = append(created, out)
		evs[i] = map[string]any{
			"eventType": "COMPLETE", "eventTime": at.Format(time.RFC3339Nano),
			"producer": "https://example.com/load", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
			"run":     map[string]any{"runId": fmt.Sprintf("0190b6e2-7a4c-7d3e-9f1a-%012d", k)},
			"job":     map[string]any{"namespace": "load", "name": fmt.Sprintf("job%d", k)},
			"inputs":  ins,
			"outputs": []map[string]any{{"namespace": "s3://load", "name": out}},
		}
	}
	var code int
	var err error
	if single {
		code, _, err = l.do("POST", "/api/v1/lineage", evs[0])
	} else {
		code, _, err = l.do("POST", "/api/v1/lineage/batch", evs)
	}
	if err == nil && (code == 200 || code == 201) {
		l.datasets.Add(int64(len(created)))
		l.mu.Lock()
		l.names = append(l.names, created...)
		l.mu.Unlock()
		// Learn some IDs to read.
		if c, b, err := l.do("GET", "/api/v1/resolve?namespace=s3://load&name="+url.QueryEscape(created[len(created)-1]), nil); err == nil && c == 200 {
			var r struct {
				Asset struct {
					ID string `json:"id"`
				} `json:"asset"`
			}
			if json.Unmarshal(b, &r) == nil && r.Asset.ID != "" {
				l.mu.Lock()
				l.assets = append(l.assets, r.Asset.ID)
				l.mu.Unlock()
			}
		}
	}
	return code, err
}

func (l *load) usageBatch() (int, error) {
	// Read now: the datasets named exist (the ingest created them), so every record resolves
	// exactly, as a query log of a running catalog does.
	now := time.Now().UTC()
	var evs []map[string]any
	for i := range 200 {
		name := l.someName()
		if name == "" {
			name = "lake/none"
		}
		evs = append(evs, map[string]any{"asset": map[string]string{"namespace": "s3://load", "name": name}, "kind": "read",
			"actor": fmt.Sprintf("user%d", i%17), "at": now.Format(time.RFC3339Nano), "source": "load",
			"query_id": fmt.Sprintf("q-%d-%d", l.seq.Add(1), i)})
	}
	code, _, err := l.do("POST", "/api/v1/usage", map[string]any{"events": evs})
	return code, err
}

func (l *load) someAsset() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.assets) == 0 {
		return "0190b6e2-7a4c-7d3e-9f1a-000000000000"
	}
	return l.assets[rand.IntN(len(l.assets))]
}

func (l *load) someName() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.names) == 0 {
		return ""
	}
	return l.names[rand.IntN(len(l.names))]
}

func (l *load) someWord() string { return word(rand.Int64N(max(1, l.seq.Load()))) }

var words = []string{"orders", "customers", "events", "sessions", "payments", "refunds", "clicks", "carts", "stock", "prices"}

func word(k int64) string { return words[k%int64(len(words))] }

// createMigration creates a migration an external checker reports on, over two new assets.
func (l *load) createMigration(admin string) string {
	var ids []string
	for _, name := range []string{"shop.public.orders", "sales.orders"} {
		_, b, err := l.do("POST", "/api/v1/assets", map[string]any{"kind": "table", "namespace": "load://migration", "name": name})
		benchdb.Must(err)
		var a struct{ ID string }
		benchdb.Must(json.Unmarshal(b, &a))
		ids = append(ids, a.ID)
	}
	body, _ := json.Marshal(map[string]any{"old_asset_id": ids[0], "new_asset_id": ids[1], "owner": "team-orders", "key_columns": []string{"order_id"},
		"time_column": "ordered_at", "columns": []string{"amount"}, "window": "1h", "since": l.since(), "dedup_old": "first_wins",
		"dedup_new": "first_wins", "lag_bound": "1h", "cutover": map[string]any{"min_clean_runs": 3, "min_days": 7},
		"old": map[string]any{"kind": "external"}, "new": map[string]any{"kind": "external"}, "checker_token": "load"})
	req, _ := http.NewRequest("POST", l.base+"/api/v1/migrations", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := l.client.Do(req)
	benchdb.Must(err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 201 {
		log.Fatalf("create the migration: %d %s", res.StatusCode, b)
	}
	var m struct{ ID string }
	benchdb.Must(json.Unmarshal(b, &m))
	return "/api/v1/migrations/" + m.ID
}

func (l *load) since() time.Time { return time.Now().UTC().Add(-600 * time.Hour).Truncate(time.Hour) }

// windowRun posts a run of 500 windows, one in ten diverging, as an external checker does.
func (l *load) windowRun() (int, error) {
	since := l.since() // a later hour than the migration's since, so on its grid
	ws := make([]map[string]any, 500)
	for i := range ws {
		sum := "a"
		if i%10 == 0 {
			sum = fmt.Sprintf("b%d", rand.IntN(1000))
		}
		ws[i] = map[string]any{"start": since.Add(time.Duration(i) * time.Hour),
			"old": map[string]any{"rows": 100, "keys": 100, "duplicate_keys": 0, "checksum": "a"},
			"new": map[string]any{"rows": 100, "keys": 100, "duplicate_keys": 0, "checksum": sum}}
	}
	code, b, err := l.do("POST", l.migration+"/runs", map[string]any{"windows": ws})
	var r struct {
		WindowsURL string `json:"windows_url"`
	}
	if err == nil && code == 201 && json.Unmarshal(b, &r) == nil {
		l.lastRun.Store(r.WindowsURL)
	}
	return code, err
}

func (l *load) windowPage() (int, error) {
	u, _ := l.lastRun.Load().(string)
	return l.get(u + "?limit=500")
}

// madeUpMethod sends a request whose method is 4 KB of random letters.
func (l *load) madeUpMethod() (int, error) {
	m := make([]byte, 4096)
	for i := range m {
		m[i] = byte('A' + rand.IntN(26))
	}
	code, _, err := l.do(string(m), "/api/v1/assets", nil)
	return code, err
}

func (l *load) metricsSize() int {
	_, b, err := l.do("GET", "/metrics", nil)
	benchdb.Must(err)
	return len(b)
}

// rss is a process's resident memory in bytes, from /proc.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	benchdb.Must(err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
