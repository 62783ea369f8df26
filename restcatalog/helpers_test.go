package restcatalog_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the "rest" catalog type
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// testServer is a Tidemark serving one warehouse ("main") over HTTP on 127.0.0.1, as engines reach it.
type testServer struct {
	URL       string
	App       *app.App
	Shell     *server.Server
	Token     string // an admin token
	Writer    string // a token with the write scope only
	Warehouse string // local path of the warehouse
	lake      *tablestest.Lake
}

func newServer(t *testing.T, db *storage.DB, opts ...warehouse.Option) *testServer {
	t.Helper()
	return newServerWith(t, db, func(c *app.Config, _ *server.Config) { c.Warehouse = append(c.Warehouse, opts...) })
}

// newServerWith lets a test change the services' configuration (cleanup options, faults).
func newServerWith(t *testing.T, db *storage.DB, configure func(*app.Config, *server.Config)) *testServer {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	cfg := app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: wh})}}
	var shell server.Config
	configure(&cfg, &shell)
	a, err := app.Open(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := a.Handler(shell, handlers.Config{}, web.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	store := auth.NewStore(db.Client, nil)
	tok, _, err := store.Create(ctx, "engine", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := store.Create(ctx, "writer", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	return &testServer{URL: srv.URL, App: a, Shell: h, Token: tok, Writer: w, Warehouse: wh, lake: tablestest.NewLake(t)}
}

// client is iceberg-go's REST catalog client, loaded the way engines load it.
func (s *testServer) client(t testing.TB) icecat.Catalog {
	t.Helper()
	cat, err := icecat.Load(context.Background(), "tidemark", iceberg.Properties{
		"type": "rest", "uri": s.URL + "/iceberg", "token": s.Token, "warehouse": "main"})
	if err != nil {
		t.Fatalf("load the REST catalog: %v", err)
	}
	return cat
}

// append writes n rows through the table's catalog (Tidemark) and returns the new table.
func (s *testServer) append(t testing.TB, tbl *table.Table, from, n int) *table.Table {
	t.Helper()
	return s.lake.Append(tbl, tablestest.Rows(from, n, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)))
}

// create makes a table in namespace ns (created first when missing) through cat.
func create(t testing.TB, cat icecat.Catalog, ns, name string, opts ...icecat.CreateTableOpt) *table.Table {
	t.Helper()
	ctx := context.Background()
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, tablestest.Schema, opts...)
	if err != nil {
		t.Fatalf("create %s.%s: %v", ns, name, err)
	}
	return tbl
}
