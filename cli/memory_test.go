package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Memory bounds of the lineage budget, at this test's scale (a Marquez answer of 20,001 nodes,
// about 7 MB of JSON). The server runs under prlimit --as, so a regression that lets answers
// pile up kills the server (the test sees it dead), never the machine.
const (
	memJobs        = 20  // jobs reading one source dataset
	memOutputs     = 999 // datasets each job writes (an event names at most 1000)
	memNodes       = 1 + memJobs + memJobs*memOutputs
	memClients     = 32
	memAddressSpan = 3 << 30 // Go reserves address space up front; 3 GiB is ample for a few hundred MiB used
	// memPeakBound: measured on 2026-12-04, the server peaked at 207 MiB with the default budget
	// (one address holds at most 4 of these answers at once: per client 100,000 nodes) and at
	// 639 MiB with the budget lifted (all 32 at once). 400 MiB leaves the first room to vary
	// and fails the second.
	memPeakBound = 400 << 20
)

// TestLineageMemoryUnderPrlimit builds the real binary, serves it under an address-space limit,
// ingests a fan-out of 20,001 nodes and fires 32 concurrent anonymous Marquez requests for all of
// it: every answer is a whole 200 or a 503 with Retry-After, the server is alive afterwards, and
// its peak RSS (VmHWM) stays under memPeakBound.
func TestLineageMemoryUnderPrlimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and serves the binary; not with -short")
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: VmHWM cannot be read")
	}
	dir := t.TempDir()
	built := time.Now()
	bin := filepath.Join(dir, "tidemark")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	build := exec.Command(goBin, "build", "-o", bin, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built the binary in %s", time.Since(built).Round(time.Millisecond))
	cmd := exec.Command(prlimit, "--as="+strconv.Itoa(memAddressSpan), "--", bin, "serve", "--data-dir", dir, "--addr", "127.0.0.1:0",
		"--log-format", "json", "--insecure-no-auth", "--rate-limit-anonymous", "0", "--tables-sync-interval", "0", "--scan-interval", "0",
		"--cleanup-interval", "0", "--check-refs-interval", "0", "--reconcile-interval", "0")
	base, exited := startLogged(t, cmd)
	pid := cmd.Process.Pid // prlimit sets the limit and execs the server: the same process

	start := time.Now()
	ingestFanOut(t, base)
	t.Logf("ingested %d nodes in %s", memNodes, time.Since(start).Round(time.Millisecond))
	url := fmt.Sprintf("%s/api/v1/lineage?nodeId=dataset:mem:src&depth=2&limit=%d", base, memNodes)
	var wg sync.WaitGroup
	outcomes := make([]string, memClients)
	for i := range memClients {
		wg.Add(1)
		go func() { defer wg.Done(); outcomes[i] = fetchWhole(url) }()
	}
	wg.Wait()
	ok := 0
	for i, o := range outcomes {
		switch o {
		case "200":
			ok++
		case "503":
		default:
			t.Errorf("request %d: %s", i, o)
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the server died under %d concurrent answers: %v", memClients, err)
	default:
	}
	if res, err := http.Get(base + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Fatalf("the server does not answer /healthz after the burst: %v", err)
	}
	peak := vmHWM(t, pid)
	t.Logf("%d of %d answers whole (200), the rest 503; peak RSS %d MiB (bound %d MiB)", ok, memClients, peak>>20, memPeakBound>>20)
	if ok == 0 {
		t.Error("no request got its answer: the budget refuses what it should serve")
	}
	if peak > memPeakBound {
		t.Errorf("peak RSS %d MiB, over the bound of %d MiB", peak>>20, memPeakBound>>20)
	}
}

// startLogged starts cmd and returns the address it serves at, once the lineage graph is
// loaded, and a channel that reports its exit. The server is interrupted at the test's end.
func startLogged(t *testing.T, cmd *exec.Cmd) (string, <-chan error) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
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
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	timeout := time.After(60 * time.Second)
	var a string
	select {
	case a = <-addr:
	case <-timeout:
		t.Fatal("the server did not start in time")
	}
	select {
	case <-loaded:
	case <-timeout:
		t.Fatal("the server did not load its lineage graph in time")
	}
	return "http://" + a, exited
}

// ingestFanOut posts, in one batch, memJobs runs each reading mem:src and writing memOutputs
// datasets of their own.
func ingestFanOut(t *testing.T, base string) {
	t.Helper()
	events := make([]map[string]any, 0, memJobs)
	now := time.Now().UTC().Format(time.RFC3339)
	for j := range memJobs {
		outs := make([]map[string]string, memOutputs)
		for o := range outs {
			outs[o] = map[string]string{"namespace": "mem", "name": fmt.Sprintf("out_%02d_%03d", j, o)}
		}
		events = append(events, map[string]any{"eventType": "COMPLETE", "eventTime": now, "producer": "https://example.com/memtest",
			"run": map[string]string{"runId": uuid.NewString()}, "job": map[string]string{"namespace": "mem", "name": fmt.Sprintf("job_%02d", j)},
			"inputs": []map[string]string{{"namespace": "mem", "name": "src"}}, "outputs": outs})
	}
	body, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Post(base+"/api/v1/lineage/batch", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.Contains(string(b), `"status":"success"`) {
		t.Fatalf("batch: %d %s", res.StatusCode, b)
	}
}

// fetchWhole is "200" for a whole answer of memNodes nodes, "503" for a refusal with
// Retry-After, and what went wrong otherwise.
func fetchWhole(url string) string {
	res, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case 503:
		if res.Header.Get("Retry-After") == "" {
			return "503 without Retry-After"
		}
		return "503"
	case 200:
		var g struct {
			Graph     []json.RawMessage `json:"graph"`
			Truncated *bool             `json:"truncated"`
		}
		if err := json.NewDecoder(res.Body).Decode(&g); err != nil {
			return "200 with a body that does not decode whole: " + err.Error()
		}
		if len(g.Graph) != memNodes || g.Truncated == nil || *g.Truncated {
			return fmt.Sprintf("200 with %d nodes (truncated %v), want all %d", len(g.Graph), g.Truncated, memNodes)
		}
		return "200"
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	return fmt.Sprintf("%d: %s", res.StatusCode, b)
}

// vmHWM is the peak resident set of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
