package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/tables/tablestest"
)

// signalWriter collects output and closes seen once it contains want.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func newSignalWriter(want string) *signalWriter {
	return &signalWriter{want: want, seen: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestServeEndToEnd runs the binary's own serve command on 127.0.0.1:0 with a temp data
// directory, uses a token made by `tidemark token create`, and checks that a request in flight
// when shutdown begins still completes.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var tokenOut, tokenErr bytes.Buffer
	if err := Run(context.Background(), []string{"token", "create", "--data-dir", dir, "--name", "e2e", "--scopes", "write"}, &tokenOut, &tokenErr, nil); err != nil {
		t.Fatalf("token create: %v: %s", err, tokenErr.String())
	}
	token := strings.TrimSpace(tokenOut.String())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newSignalWriter("shutting down")
	addr, done := startServe(t, ctx, logs, "--data-dir", dir, "--addr", "127.0.0.1:0")
	base := "http://" + addr

	res, err := http.Get(base + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", res, err)
	}
	res.Body.Close()
	// A plain start-up line says where to go and how to sign in.
	if !strings.Contains(logs.String(), "Tidemark is serving at "+base+"/") || !strings.Contains(logs.String(), " token create --name you --scopes admin") {
		t.Fatalf("no start-up line with the URL and how to sign in:\n%s", logs.String())
	}
	// A wrong page is an HTML 404; a wrong API path stays problem+json.
	for path, want := range map[string]string{"/no-such-page": "text/html", "/assets/x/y/z": "text/html", "/api/v1/no-such-thing": "application/problem+json"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %s, want 404 %s", path, res.StatusCode, res.Header.Get("Content-Type"), want)
		}
	}

	// Start a create and hold its body back until shutdown has begun. Expect: 100-continue makes
	// the server say when the handler starts reading the body, so the request is surely in flight.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"kind":"table","namespace":"warehouse","name":"orders"}`
	fmt.Fprintf(conn, "POST /api/v1/assets HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, token, len(body))
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("expected 100 Continue, got %q, %v", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-logs.seen
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	res, err = http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("in-flight request during shutdown: %v, %v", res, err)
	}
	res.Body.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(logs.String(), `"msg":"stopped"`) {
		t.Fatalf("logs lack the stop line:\n%s", logs.String())
	}
	if _, err := filepath.Glob(filepath.Join(dir, "tidemark.db")); err != nil {
		t.Fatal(err)
	}
}

func TestServeRefusesNoAuthOffLoopback(t *testing.T) {
	err := Run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--addr", "0.0.0.0:0", "--insecure-no-auth"}, io.Discard, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "only on a loopback address") {
		t.Fatalf("err = %v", err)
	}
}

func TestIsLoopback(t *testing.T) {
	cases := map[string]bool{"127.0.0.1:8080": true, "[::1]:80": true, "localhost:1": true, ":8080": false, "0.0.0.0:80": false, "10.0.0.1:80": false, "nonsense": false}
	for addr, want := range cases {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"migrate", "--data-dir", dir, "--dry-run"}, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "pending migration") || strings.HasPrefix(out.String(), "0 ") {
		t.Fatalf("dry run: %s", out.String())
	}
	out.Reset()
	if err := Run(context.Background(), []string{"migrate", "--data-dir", dir}, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "applied ") || strings.Contains(out.String(), "applied 0 ") {
		t.Fatalf("migrate: %s", out.String())
	}
	if err := Run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard, nil); err == nil {
		t.Fatal("unknown command accepted")
	}
}

// TestTablesCommand syncs a real Iceberg SQL catalog (SQLite file) configured in a file, then
// lists and refreshes the table from the command line.
func TestTablesCommand(t *testing.T) {
	ctx := context.Background()
	l := tablestest.NewLake(t)
	tbl := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 3, time.Now()))
	dir := t.TempDir()
	cfg := lakeConfig(t, l, dir)
	var out, errs strings.Builder
	if err := Run(ctx, []string{"tables", "sync", "--data-dir", dir, "--iceberg-catalogs", cfg}, &out, &errs, nil); err != nil {
		t.Fatalf("sync: %v\n%s%s", err, out.String(), errs.String())
	}
	if !strings.Contains(out.String(), "1 added") || !strings.Contains(out.String(), "added          db.orders") || !strings.Contains(errs.String(), "[1/1] syncing lake") {
		t.Fatalf("sync output:\n%s\nstderr:\n%s", out.String(), errs.String())
	}
	out.Reset()
	if err := Run(ctx, []string{"tables", "list", "--data-dir", dir, "--json"}, &out, &errs, nil); err != nil {
		t.Fatal(err)
	}
	var list []struct {
		AssetID   string `json:"asset_id"`
		TableUUID string `json:"table_uuid"`
	}
	if err := json.Unmarshal([]byte(out.String()), &list); err != nil || len(list) != 1 || list[0].TableUUID != tbl.Metadata().TableUUID().String() {
		t.Fatalf("list: %v %s", err, out.String())
	}
	l.Append(tbl, tablestest.Rows(3, 3, time.Now()))
	out.Reset()
	if err := Run(ctx, []string{"tables", "refresh", "--data-dir", dir, "--iceberg-catalogs", cfg, list[0].AssetID}, &out, &errs, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "read 1 manifest lists and 1 manifests") {
		t.Fatalf("refresh after one commit: %s", out.String())
	}
	// An unreachable catalog fails the command, loudly.
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"connections":[{"name":"gone","type":"sql","dialect":"sqlite","uri":"file:`+filepath.Join(dir, "missing", "x.db")+`"}]}`), 0o600)
	out.Reset()
	err := Run(ctx, []string{"tables", "sync", "--data-dir", dir, "--iceberg-catalogs", bad}, &out, &errs, nil)
	if err == nil || !strings.Contains(out.String(), "gone: UNREACHABLE") {
		t.Fatalf("sync of an unreachable catalog: %v\n%s", err, out.String())
	}
}

// TestCleanupScanCommand scans a synced table twice from the command line: the second scan
// confirms the old orphan; a threshold under 24h without the override is refused.
func TestCleanupScanCommand(t *testing.T) {
	ctx := context.Background()
	l := tablestest.NewLake(t)
	tbl := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 3, time.Now()))
	l.WriteFile(tbl, "data/leftover.parquet", 100, time.Now().Add(-100*time.Hour))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "catalogs.json")
	body := fmt.Sprintf(`{"connections":[{"name":%q,"type":"sql","dialect":"sqlite","uri":%q}]}`, tablestest.Name, "file:"+filepath.Join(l.Dir, "catalog.db"))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	if err := Run(ctx, []string{"tables", "sync", "--data-dir", dir, "--iceberg-catalogs", cfg}, &out, &errs, nil); err != nil {
		t.Fatalf("sync: %v\n%s", err, errs.String())
	}
	// Two passes must be two moments; the default gap is an hour, this test takes a millisecond.
	scan := []string{"cleanup", "scan", "--data-dir", dir, "--iceberg-catalogs", cfg, "--table", "iceberg://lake/db.orders", "--scan-recheck-delay", "1ms", "--confirm-gap", "1ms"}
	if err := Run(ctx, append(slices.Clone(scan[:len(scan)-2]), "--confirm-gap", "0s"), &out, &errs, nil); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("a zero confirmation gap: %v", err)
	}
	for i, want := range []string{"0 (0 B) confirmed", "1 (100 B) confirmed by two consecutive complete walks at least 1ms apart"} {
		out.Reset()
		errs.Reset()
		if err := Run(ctx, scan, &out, &errs, nil); err != nil {
			t.Fatalf("scan %d: %v\n%s%s", i+1, err, out.String(), errs.String())
		}
		if !strings.Contains(out.String(), want) || !strings.Contains(errs.String(), "confirming: 2/2 shards") {
			t.Fatalf("scan %d output:\n%s\nstderr:\n%s", i+1, out.String(), errs.String())
		}
	}
	out.Reset()
	if err := Run(ctx, []string{"cleanup", "propose", "--data-dir", dir, "--iceberg-catalogs", cfg}, &out, &errs, nil); err != nil || !strings.Contains(out.String(), "1 opened") {
		t.Fatalf("propose: %v %s %s", err, out.String(), errs.String())
	}
	out.Reset()
	if err := Run(ctx, []string{"cleanup", "execute", "--data-dir", dir, "--iceberg-catalogs", cfg}, &out, &errs, nil); err != nil || !strings.Contains(out.String(), "executed 0 of 0 proposals") {
		t.Fatalf("execute without approval: %v %s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "leftover.parquet")); err != nil {
		t.Fatalf("an unapproved orphan is gone: %v", err)
	}
	err := Run(ctx, append(scan, "--scan-age-threshold", "1h"), &out, &errs, nil)
	if err == nil || !strings.Contains(err.Error(), "1-day minimum") {
		t.Fatalf("1h threshold: %v", err)
	}
}

// TestBadEnvironment: a value a flag would refuse is refused from the environment too, naming
// the variable, instead of leaving the default in place silently.
func TestBadEnvironment(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ key, value string }{
		{"TIDEMARK_AUTH_READS", "yes"},
		{"TIDEMARK_SCAN_INTERVAL", "1d"},
		{"TIDEMARK_SCAN_LIST_RATE", "fast"},
		{"TIDEMARK_BODY_LIMIT", "1MB"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Setenv(tc.key, tc.value)
			var out, errs strings.Builder
			err := Run(ctx, []string{"serve", "--data-dir", t.TempDir()}, &out, &errs, nil)
			if err == nil || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("serve with %s=%s: %v", tc.key, tc.value, err)
			}
		})
	}
	// A good value is taken, and the command line still wins over it.
	t.Setenv("TIDEMARK_CONFIRM_GAP", "0s")
	var out, errs strings.Builder
	if err := Run(ctx, []string{"cleanup", "propose", "--data-dir", t.TempDir()}, &out, &errs, nil); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("TIDEMARK_CONFIRM_GAP=0s was not applied: %v", err)
	}
	if err := Run(ctx, []string{"cleanup", "propose", "--data-dir", t.TempDir(), "--confirm-gap", "1h"}, &out, &errs, nil); err != nil {
		t.Fatalf("the command line did not win over the environment: %v", err)
	}
}

// TestServeDropsSlowClients: a client that sends its request a byte at a time cannot hold a
// connection open past --read-timeout (200 such clients once all stayed open).
func TestServeDropsSlowClients(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(t, ctx, io.Discard, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--read-timeout", "300ms",
		"--tables-sync-interval", "0", "--scan-interval", "0", "--cleanup-interval", "0")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/assets HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
	// Keep dripping; the server must close the connection (the write or the read fails).
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		buf := make([]byte, 512)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-closed:
			cancel()
			<-done
			return
		case <-time.After(100 * time.Millisecond):
		}
		if i == 300 {
			t.Fatal("a client dripping its body was still connected after 30 s with --read-timeout 300ms")
		}
		conn.Write([]byte(" "))
	}
}

// TestServeBehindTLS: with an https public URL, cookies are Secure and answers carry HSTS;
// without one they are not; a public URL that is not one is refused at start.
func TestServeBehindTLS(t *testing.T) {
	if err := Run(context.Background(), []string{"serve", "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--public-url", "tidemark.example.com"}, io.Discard, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "--public-url") {
		t.Fatalf("a public URL without scheme: err = %v", err)
	}
	for _, tc := range []struct {
		public string
		secure bool
	}{{"https://tidemark.example.com", true}, {"http://tidemark.example.com", false}} {
		t.Run(tc.public, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			addr, done := startServe(t, ctx, io.Discard, "--data-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--public-url", tc.public,
				"--tables-sync-interval", "0", "--scan-interval", "0", "--cleanup-interval", "0")
			defer func() { cancel(); <-done }()
			res, err := http.Get("http://" + addr + "/signin")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if len(res.Cookies()) == 0 {
				t.Fatal("the sign-in page set no cookie")
			}
			for _, c := range res.Cookies() {
				if c.Secure != tc.secure {
					t.Errorf("cookie %s Secure = %v, want %v", c.Name, c.Secure, tc.secure)
				}
			}
			if got := res.Header.Get("Strict-Transport-Security") != ""; got != tc.secure {
				t.Errorf("HSTS sent = %v, want %v", got, tc.secure)
			}
		})
	}
}
