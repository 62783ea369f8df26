// Command budget measures what the lineage node budget buys (issue 47, item 4): it builds
// tidemark, ingests a fan-out graph of about 99,000 nodes over SQLite, then serves it twice, with
// the default budget and with the budget lifted, fires concurrent anonymous Marquez requests for
// the whole graph at each, and prints the server's RSS before and after, its peak, and how
// many answers were whole (200) or refused (503).
//
//	go run ./bench/budget [-jobs 99] [-clients 32]
//
// Measured on 2026-12-04 (2 shared cores, SQLite; 99,001 nodes ingested in 3m10s), 32 requests
// from one address: with the default budget 1 whole answer and 31 refusals (503, Retry-After),
// RSS 155 MiB before, peak 276 MiB; with the budget lifted 32 whole answers in 1m46s, RSS 152
// MiB before, peak 2754 MiB.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

const outputs = 999 // datasets one job writes: an event names at most 1000

func main() {
	jobs := flag.Int("jobs", 99, "jobs reading the source, each writing 999 datasets (99: about 99,000 nodes)")
	clients := flag.Int("clients", 32, "concurrent anonymous requests")
	flag.Parse()
	dir, err := os.MkdirTemp("", "tidemark-budget-")
	must(err)
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tidemark")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	must(build.Run())
	nodes := 1 + *jobs + *jobs*outputs

	base, _, stop := serve(bin, dir)
	start := time.Now()
	ingest(base, *jobs)
	fmt.Printf("ingested %d nodes in %s\n", nodes, time.Since(start).Round(time.Millisecond))
	stop()

	for _, mode := range []struct {
		name  string
		flags []string
	}{
		{"default budget", nil},
		{"budget lifted", []string{"--lineage-budget-nodes", "1000000000", "--lineage-budget-per-client", "1000000000"}},
	} {
		base, pid, stop := serve(bin, dir, append([]string{"--lineage-max-nodes", strconv.Itoa(max(nodes, 100_000))}, mode.flags...)...)
		burst(mode.name, base, pid, nodes, *clients)
		stop()
	}
}

// burst fires clients concurrent requests for the whole graph and prints what they got and
// what the server's memory did.
func burst(name, base string, pid, nodes, clients int) {
	before := status(pid, "VmRSS")
	url := fmt.Sprintf("%s/api/v1/lineage?nodeId=dataset:bench:src&depth=2&limit=%d", base, nodes)
	var mu sync.Mutex
	count := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := fetch(url, nodes)
			mu.Lock()
			count[o]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Printf("%s: %d requests in %s: %v; RSS before %d MiB, after %d MiB, peak %d MiB\n", name, clients,
		time.Since(start).Round(time.Millisecond), count, before>>20, status(pid, "VmRSS")>>20, status(pid, "VmHWM")>>20)
}

func fetch(url string, nodes int) string {
	res, err := http.Get(url)
	if err != nil {
		return "error"
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, res.Body)
		return strconv.Itoa(res.StatusCode)
	}
	var g struct {
		Graph     []json.RawMessage `json:"graph"`
		Truncated bool              `json:"truncated"`
	}
	if err := json.NewDecoder(res.Body).Decode(&g); err != nil || len(g.Graph) != nodes || g.Truncated {
		return "200 not whole"
	}
	return "200"
}

// ingest posts jobs runs, each reading bench:src and writing 999 datasets, 20 runs a batch (a
// batch body stays under the 4 MiB limit).
func ingest(base string, jobs int) {
	now := time.Now().UTC().Format(time.RFC3339)
	for first := 0; first < jobs; first += 20 {
		var events []map[string]any
		for j := first; j < min(first+20, jobs); j++ {
			outs := make([]map[string]string, outputs)
			for o := range outs {
				outs[o] = map[string]string{"namespace": "bench", "name": fmt.Sprintf("out_%03d_%03d", j, o)}
			}
			events = append(events, map[string]any{"eventType": "COMPLETE", "eventTime": now, "producer": "https://example.com/bench",
				"run": map[string]string{"runId": uuid.NewString()}, "job": map[string]string{"namespace": "bench", "name": fmt.Sprintf("job_%03d", j)},
				"inputs": []map[string]string{{"namespace": "bench", "name": "src"}}, "outputs": outs})
		}
		body, err := json.Marshal(events)
		must(err)
		res, err := http.Post(base+"/api/v1/lineage/batch", "application/json", bytes.NewReader(body))
		must(err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), `"status":"success"`) {
			log.Fatalf("batch: %d %s", res.StatusCode, b)
		}
	}
}

// serve starts tidemark over the SQLite file in dir and returns its URL once the lineage graph
// is loaded, its process ID, and a function that stops it.
func serve(bin, dir string, extra ...string) (string, int, func()) {
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--log-format", "json", "--insecure-no-auth",
		"--rate-limit-anonymous", "0", "--tables-sync-interval", "0", "--scan-interval", "0", "--cleanup-interval", "0",
		"--check-refs-interval", "0", "--reconcile-interval", "0"}, extra...)...)
	stderr, err := cmd.StderrPipe()
	must(err)
	must(cmd.Start())
	addr, loaded := make(chan string, 1), make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "serving":
				addr <- line.Addr
			case "lineage graph loaded":
				close(loaded)
			}
		}
	}()
	base := "http://" + <-addr
	<-loaded
	return base, cmd.Process.Pid, func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
}

// status reads a size field (VmRSS, VmHWM) of /proc/<pid>/status, in bytes.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			must(err)
			return kb << 10
		}
	}
	return 0
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
