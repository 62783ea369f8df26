package main

// The two catalogs a commit goes through: Tidemark's REST catalog, served in-process over HTTP
// on 127.0.0.1 and called with iceberg-go's REST client, and iceberg-go's own SQL catalog on a
// database file, over the same warehouse directory. Both are wrapped so the catalog's part of a
// commit (CommitTable) is timed and labelled the same way.

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/bench/internal/benchdb"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// side is one catalog, as the benchmark's writers see it.
type side struct {
	name string
	cat  *timedCatalog
	post *postTimer // the commit request's round trip (REST only)
}

// timedCatalog times CommitTable (the whole catalog call a commit makes) and labels its CPU
// time, so the SQL catalog's share shows in a profile beside Tidemark's server.
type timedCatalog struct {
	catalog.Catalog
	label string
	mu    sync.Mutex
	last  time.Duration
}

func (c *timedCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	var (
		meta table.Metadata
		loc  string
		err  error
	)
	start := time.Now()
	pprof.Do(ctx, pprof.Labels("side", c.label), func(ctx context.Context) {
		meta, loc, err = c.Catalog.CommitTable(ctx, id, reqs, ups)
	})
	d := time.Since(start)
	c.mu.Lock()
	c.last = d
	c.mu.Unlock()
	return meta, loc, err
}

func (c *timedCatalog) lastCommit() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// create makes a table through the catalog and returns it bound to the timed catalog, so the
// tables its commits return are bound to it too.
func (c *timedCatalog) create(ctx context.Context, id table.Identifier, schema *iceberg.Schema) *table.Table {
	tbl, err := c.Catalog.CreateTable(ctx, id, schema)
	benchdb.Must(err)
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c)
}

// postTimer records the round trip of the last commit request (POST .../tables/{table}).
type postTimer struct {
	http.RoundTripper
	mu   sync.Mutex
	last time.Duration
}

func (t *postTimer) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.RoundTripper.RoundTrip(r)
	if r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/tables/") {
		t.mu.Lock()
		t.last = time.Since(start)
		t.mu.Unlock()
	}
	return resp, err
}

func (t *postTimer) lastPost() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// tidemarkSide serves Tidemark on 127.0.0.1 with one warehouse and connects iceberg-go's REST
// client to it. Server requests carry the CPU label side=tidemark-server and report their
// commit steps to phases.
func tidemarkSide(ctx context.Context, store *storage.DB, dir string, phases *phaseLog) (*side, *app.App) {
	a, err := app.Open(ctx, store, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: dir})}})
	benchdb.Must(err)
	h, err := a.Handler(server.Config{}, handlers.Config{}, web.Config{})
	benchdb.Must(err)
	labelled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), pprof.Labels("side", "tidemark-server"), func(ctx context.Context) {
			start := time.Now()
			var steps []phaseTime
			var mu sync.Mutex
			ctx = warehouse.WithPhaseTimer(ctx, func(p string, d time.Duration) {
				mu.Lock()
				steps = append(steps, phaseTime{p, d})
				mu.Unlock()
			})
			h.ServeHTTP(w, r.WithContext(ctx))
			if r.Method == http.MethodPost && len(steps) > 0 {
				phases.add(append(steps, phaseTime{"request", time.Since(start)}))
			}
		})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	benchdb.Must(err)
	go func() { _ = http.Serve(ln, labelled) }()
	tok, _, err := auth.NewStore(store.Client, nil).Create(ctx, "bench", []auth.Scope{auth.ScopeAdmin})
	benchdb.Must(err)
	// Enough idle connections for every concurrent writer (the default keeps 2 a host, and a
	// writer without one would pay a new TCP connection a commit).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	post := &postTimer{RoundTripper: tr}
	cat, err := rest.NewCatalog(ctx, "tidemark", "http://"+ln.Addr().String()+"/iceberg", rest.WithOAuthToken(tok),
		rest.WithWarehouseLocation("main"), rest.WithCustomTransport(post))
	benchdb.Must(err)
	benchdb.Must(cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil))
	return &side{name: "tidemark", cat: &timedCatalog{Catalog: cat, label: "tidemark-client"}, post: post}, a
}

// sqlSide opens iceberg-go's SQL catalog on dsn (an SQLite file with Tidemark's own SQLite
// settings, or a PostgreSQL database) with its warehouse at dir.
func sqlSide(ctx context.Context, dsn, dir string) *side {
	driver, dialect := "sqlite", sqlcat.SQLite
	if storage.IsPostgres(dsn) {
		driver, dialect = "postgres", sqlcat.Postgres
	} else {
		dsn = storage.SQLiteDSN(dsn)
	}
	db, err := sql.Open(driver, dsn)
	benchdb.Must(err)
	if dialect == sqlcat.Postgres {
		db.SetMaxOpenConns(20) // as Tidemark's store
		db.SetMaxIdleConns(10)
	}
	cat, err := sqlcat.NewCatalog("bench", db, dialect, iceberg.Properties{"warehouse": "file://" + dir})
	benchdb.Must(err)
	benchdb.Must(cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil))
	return &side{name: "sqlcat", cat: &timedCatalog{Catalog: cat, label: "sqlcat"}}
}

// addFiles commits n made-up data files in one append (no duplicate check: the names are new).
func addFiles(ctx context.Context, tbl *table.Table, name string, from, n int) *table.Table {
	files := make([]iceberg.DataFile, n)
	for i := range files {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/%s-%09d.parquet", tbl.Location(), name, from+i), iceberg.ParquetFile, nil, nil, nil, 1000, 64<<20)
		benchdb.Must(err)
		files[i] = b.Build()
	}
	tx := tbl.NewTransaction()
	benchdb.Must(tx.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()))
	out, err := tx.Commit(ctx)
	benchdb.Must(err)
	return out
}
