package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/tables/tablestest"
)

// startServe runs `tidemark serve` with args until ctx ends and returns its address and a
// channel that receives what serve returned.
func startServe(t *testing.T, ctx context.Context, stderr io.Writer, args ...string) (string, <-chan error) {
	t.Helper()
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- Run(ctx, append([]string{"serve"}, args...), io.Discard, stderr, ready) }()
	select {
	case addr := <-ready:
		return addr, done
	case err := <-done:
		t.Fatalf("serve exited: %v", err)
	}
	return "", nil
}

// lakeConfig writes an Iceberg catalogs file naming the lake's SQL catalog, in dir.
func lakeConfig(t *testing.T, l *tablestest.Lake, dir string) string {
	t.Helper()
	cfg := filepath.Join(dir, "catalogs.json")
	body := fmt.Sprintf(`{"connections":[{"name":%q,"type":"sql","dialect":"sqlite","uri":%q,"warehouse":%q}]}`,
		tablestest.Name, "file:"+filepath.Join(l.Dir, "catalog.db"), "file://"+l.Warehouse)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}
