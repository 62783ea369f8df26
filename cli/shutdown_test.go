package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/storage"
)

// TestShutdownDuringScanAndDispatch: SIGTERM (the context ending) while a cleanup scan walks a
// table and a webhook delivery is in flight. serve returns without error; every background loop
// has returned before the database closes (no "database is closed", no error logged), the scan
// is recorded as stopped, not left running.
func TestShutdownDuringScanAndDispatch(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"token", "create", "--data-dir", dir, "--name", "ops", "--scopes", "admin"}, &out, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(out.String())
	delivering := make(chan struct{}, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		delivering <- struct{}{}
		time.Sleep(3 * time.Second) // a slow receiver: the delivery is in flight at shutdown
	}))
	defer receiver.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := newSignalWriter(`"msg":"stopped"`)
	// Scans start at once (every demo table is due) and crawl at half a LIST a second.
	addr, done := startServe(t, ctx, logs, "--demo", "--data-dir", dir, "--addr", "127.0.0.1:0", "--scan-interval", "1ms",
		"--scan-list-rate", "0.5", "--cleanup-interval", "1s", "--tables-sync-interval", "0")
	base := "http://" + addr
	call := func(method, path string, body any, v any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 {
			t.Fatalf("%s %s = %d: %s", method, path, res.StatusCode, b)
		}
		if v != nil {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A read of the asset of an unused-asset proposal withdraws it, which notifies the asset's
	// owners: point them at the slow receiver first.
	var props struct {
		Items []struct {
			ID      string `json:"id"`
			AssetID string `json:"asset_id"`
		} `json:"items"`
	}
	call("GET", "/api/v1/proposals?state=open&kind=unused_asset", nil, &props)
	if len(props.Items) == 0 {
		t.Fatal("the demo has no open unused-asset proposal")
	}
	var asset struct {
		Owners []struct{ Principal string } `json:"owners"`
	}
	p := props.Items[0]
	call("GET", "/api/v1/assets/"+p.AssetID, nil, &asset)
	for _, o := range asset.Owners {
		call("PUT", "/api/v1/webhooks/"+o.Principal, map[string]string{"url": receiver.URL}, nil)
	}
	call("POST", "/api/v1/usage", map[string]any{"events": []map[string]any{{"asset": map[string]string{"id": p.AssetID},
		"kind": "read", "at": time.Now().UTC().Add(-time.Minute), "query_id": "shutdown-test", "source": "test"}}}, nil)
	select {
	case <-delivering:
	case <-time.After(30 * time.Second):
		t.Fatalf("no webhook delivery started\n%s", logs.String())
	}
	running := func() bool {
		var scans struct {
			Items []struct{ State string } `json:"items"`
		}
		call("GET", "/api/v1/scans", nil, &scans)
		for _, s := range scans.Items {
			if s.State == "running" {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no scan running\n%s", logs.String())
		}
	}

	cancel() // SIGTERM
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop\n%s", logs.String())
	}
	text := logs.String()
	for _, bad := range []string{"database is closed", `"level":"ERROR"`, "panic"} {
		if strings.Contains(text, bad) {
			t.Errorf("the logs after shutdown contain %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, `"msg":"stopped"`) {
		t.Fatalf("no stop line:\n%s", text)
	}
	store, err := storage.Open(context.Background(), filepath.Join(dir, "tidemark.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n, err := store.Client.CleanupScan.Query().Where(cleanupscan.StateEQ(cleanupscan.StateRunning)).Count(context.Background()); err != nil || n != 0 {
		t.Fatalf("%d scans left running after shutdown (%v)", n, err)
	}
}
