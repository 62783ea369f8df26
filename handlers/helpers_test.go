package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/warehouse"
)

// server is a real Tidemark API listening on 127.0.0.1:0 over a fresh database.
type testServer struct {
	t     testing.TB
	URL   string
	API   *handlers.API
	Shell *server.Server
	DB    *storage.DB
	Write string // token with the write scope
	Read  string // token with the read scope only
	Admin string // token with the admin scope
	// Cleanup runs scans (they are started from the command line or the scheduler, not the API).
	Cleanup *cleanup.Service
	client  *http.Client
	ahead   *atomic.Int64 // how far the cleanup clock runs ahead of the real one
	openapi openAPIRouter
}

// Later moves the cleanup service's clock forward (the confirmation gap between two scans).
func (s *testServer) Later(d time.Duration) { s.ahead.Add(int64(d)) }

func eachBackend(t *testing.T, fn func(t *testing.T, s *testServer)) {
	t.Helper()
	for _, b := range storagetest.Backends {
		t.Run(b, func(t *testing.T) { fn(t, startServer(t, storagetest.Open(t, b), nil)) })
	}
}

func startServer(t testing.TB, db *storage.DB, tweak func(*handlers.Config, *server.Config)) *testServer {
	t.Helper()
	ctx := context.Background()
	tokens := auth.NewStore(db.Client, nil)
	write, _, err := tokens.Create(ctx, "writer", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	read, _, err := tokens.Create(ctx, "reader", []auth.Scope{auth.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	admin, _, err := tokens.Create(ctx, "admin", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	var lin *lineage.Service
	var use *usage.Service
	cat := mustCatalog(t, db, catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]catalog.Summary) {
		lin.Graph().AssetsChanged(ctx, ids, written)
		use.NamesChanged(ctx, ids)
	}))
	use, err = usage.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	wh, err := warehouse.New(db, cat, tbls)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := reconcile.New(db, cat, tbls, use)
	if err != nil {
		t.Fatal(err)
	}
	lin, err = lineage.New(db, cat, lineage.WithRelations(app.MigrationRelations(rec)))
	if err != nil {
		t.Fatal(err)
	}
	if err := lin.Open(ctx); err != nil {
		t.Fatal(err)
	}
	ahead := &atomic.Int64{}
	clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	clean, err := cleanup.New(db, cat, tbls, cleanup.WithWarehouse(wh), cleanup.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := notify.New(db, cat, notify.WithPrivateWebhooks(true), notify.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	ver, err := versions.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := handlers.Config{
		Versions:  ver,
		Reconcile: rec,
		Cleanup:   clean,
		Notify:    notes,
		Tables:    tbls,
		Warehouse: wh,
		Catalog:   cat,
		Lineage:   lin,
		Usage:     use,
		Ping:      db.Ping,
		Logger:    testLogger(t),
		Version:   "test",
	}
	shell := server.Config{Tokens: tokens}
	if tweak != nil {
		tweak(&cfg, &shell)
	}
	if shell.Logger == nil {
		shell.Logger = cfg.Logger
	}
	shellSrv := server.New(shell)
	api := handlers.Mount(shellSrv, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: shellSrv, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return &testServer{t: t, URL: "http://" + ln.Addr().String(), API: api, Shell: shellSrv, DB: db, Write: write, Read: read, Admin: admin, Cleanup: clean,
		client: &http.Client{Timeout: 30 * time.Second}, ahead: ahead}
}

// req describes one request; body is marshalled unless it is a string or []byte.
type req struct {
	method, path string
	body         any
	token        string
	headers      map[string]string
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (s *testServer) do(t testing.TB, r req) resp {
	t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(j)
	}
	hr, err := http.NewRequest(r.method, s.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	for k, v := range r.headers {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	res, err := s.client.Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	s.checkResponse(t, hr, res, b)
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// must fails the test unless the response has status want.
func (s *testServer) must(t testing.TB, want int, r req) resp {
	t.Helper()
	got := s.do(t, r)
	if got.status != want {
		t.Fatalf("%s %s = %d, want %d: %s", r.method, r.path, got.status, want, got.body)
	}
	return got
}

// counts returns the row count of every table, to prove a refused request wrote nothing.
func (s *testServer) counts(t testing.TB) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"assets", "asset_names", "external_ids", "owners", "audit_events", "idempotency_keys", "api_tokens",
		"lineage_events", "runs", "run_ios", "lineage_edges", "column_edges", "asset_facets", "lineage_states",
		"usage_events", "usage_dailies", "usage_actor_dailies", "usage_names", "usage_pendings",
		"tidemark_iceberg_tables", "iceberg_manifests", "iceberg_manifest_lists", "table_syncs",
		"cleanup_scans", "cleanup_shard_walks", "cleanup_leases", "cleanup_observations",
		"proposals", "proposal_files", "proposal_steps", "outbox_messages", "webhooks", "cleanup_exemptions",
		"columns", "labels", "schema_changes", "glossary_terms", "classifications", "suggestion_decisions"} {
		var n int
		if err := s.DB.SQL.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

type asset struct {
	ID        string `json:"id"`
	Version   int64  `json:"version"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	Owners    []struct {
		Principal string `json:"principal"`
		Role      string `json:"role"`
	} `json:"owners"`
	ExternalIDs []struct {
		System string `json:"system"`
		Value  string `json:"value"`
	} `json:"external_ids"`
}

func (s *testServer) createAsset(t testing.TB, namespace, name string) asset {
	t.Helper()
	var a asset
	s.must(t, http.StatusCreated, req{method: "POST", path: "/api/v1/assets", token: s.Write,
		body: map[string]any{"kind": "table", "namespace": namespace, "name": name}}).decode(t, &a)
	return a
}

type problem struct {
	Type, Title, Detail, Field string
	Status                     int
}

// testLogger keeps the server's log and prints it only if the test fails, so a 500's cause is
// in the failure output without flooding passing runs.
func testLogger(t testing.TB) *slog.Logger {
	var mu sync.Mutex
	var buf bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("server log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// storageFor returns an SQLite database for tests whose subject is not storage.
func storageFor(t *testing.T) *storage.DB { return storagetest.Open(t, "sqlite") }

// storageFor2 is storageFor on the backend named in a subtest path (".../sqlite/..." or
// ".../postgres/..."), for tests that need several fresh databases per backend.
func storageFor2(t *testing.T, name string) *storage.DB {
	if strings.Contains(name, "/postgres") {
		return storagetest.Open(t, "postgres")
	}
	return storagetest.Open(t, "sqlite")
}

// mustCatalog returns a catalog over db, or the test stops.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}
