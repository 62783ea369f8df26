// Package app builds a Tidemark process once, in one place: the services over a migrated store
// (catalog, usage, lineage, Iceberg tables, cleanup) wired to each other, the HTTP handler (the
// API and the web UI), and the background loops. Serve runs the loops and the server under one
// group; on shutdown the server drains, the loops are cancelled and waited for, and only then
// does Close release the catalog connections and the store, so nothing writes after close.
package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/restcatalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/warehouse"
	"github.com/tidemark/tidemark/web"
)

// UnusedDownstreamDepth is how many lineage hops downstream the cleanup bot looks for reads
// before it calls an asset unused: a table nobody queries may still feed one people read.
const UnusedDownstreamDepth = 5

// PendingCommitAge is how long a served table's commit may stay pending before it is settled:
// far longer than writing one metadata file and swapping a pointer take.
const PendingCommitAge = 5 * time.Minute

// ServedInspection is how often served tables committed to since are inspected again (health,
// snapshots, files): at most once a round, however often they are written.
const ServedInspection = 15 * time.Second

// Config is what the services are built with.
type Config struct {
	Log      *slog.Logger
	Usage    []usage.Option
	Versions []versions.Option
	Lineage  []lineage.Option
	Tables   []tables.Option
	// Warehouse configures the service serving the warehouses tables.WithWarehouses names.
	Warehouse []warehouse.Option
	// Connections are the Iceberg catalogs the tables service syncs; Close closes them.
	Connections []*tables.Connection
	Cleanup     []cleanup.Option
	Notify      []notify.Option
	// MigrationSources are the PostgreSQL databases dataset migrations may read a side from,
	// by name; Close closes them.
	MigrationSources map[string]*sql.DB
	// LoadGraph loads the lineage graph into memory before Open returns (the cleanup commands,
	// whose unused-asset checks follow it downstream); commands that only scan or sync tables
	// skip it. Serve loads it in the background whatever this says: the server answers at once,
	// lineage answers 503 "loading" until it is in, /healthz says which, and the cleanup bot
	// judges nothing unused meanwhile.
	LoadGraph bool
}

// App is a built process.
type App struct {
	Store     *storage.DB
	Log       *slog.Logger
	Catalog   *catalog.Catalog
	Usage     *usage.Service
	Lineage   *lineage.Service
	Tables    *tables.Service
	Warehouse *warehouse.Service
	Cleanup   *cleanup.Service
	Notify    *notify.Service
	Reconcile *reconcile.Service
	Versions  *versions.Service
	conns     []*tables.Connection
	sources   map[string]*sql.DB
	// served is the Iceberg REST face once Handler mounted it: its held table loads become
	// reads in the background (restcatalog/loads.go).
	served atomic.Pointer[restcatalog.Face]
}

// Open builds the services over store (migrated already) and, with cfg.LoadGraph, loads the
// lineage graph (Serve loads it otherwise). The App owns store from now on: Close closes it.
func Open(ctx context.Context, store *storage.DB, cfg Config) (*App, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &App{Store: store, Log: cfg.Log, conns: cfg.Connections, sources: cfg.MigrationSources}
	var err error
	if a.Catalog, err = catalog.New(store, catalog.WithLogger(cfg.Log),
		catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]catalog.Summary) {
			a.Lineage.Graph().AssetsChanged(ctx, ids, written)
			a.Usage.NamesChanged(ctx, ids) // usage records that waited for a name
		})); err != nil {
		return nil, a.closeOnError(err)
	}
	// The default classifications (pii, tier), so tags such as pii.email are checked and
	// propagate from the start; existing ones, perhaps changed by an admin, stay as they are.
	if err := a.Catalog.EnsureClassifications(ctx); err != nil {
		return nil, a.closeOnError(err)
	}
	if a.Versions, err = versions.New(store, a.Catalog, append([]versions.Option{versions.WithLogger(cfg.Log)}, cfg.Versions...)...); err != nil {
		return nil, a.closeOnError(err)
	}
	if a.Usage, err = usage.New(store, a.Catalog, append([]usage.Option{usage.WithLogger(cfg.Log)}, cfg.Usage...)...); err != nil {
		return nil, a.closeOnError(err)
	}
	if a.Lineage, err = lineage.New(store, a.Catalog, append([]lineage.Option{lineage.WithLogger(cfg.Log),
		lineage.WithCompletedRuns(func(ctx context.Context, runs []lineage.CompletedRun) error {
			if err := UsageOfRuns(a.Usage)(ctx, runs); err != nil {
				return err
			}
			return MigrationWriters(a.Reconcile)(ctx, runs)
		}),
		lineage.WithRelations(func(ctx context.Context, id uuid.UUID) ([]lineage.Relation, error) {
			return MigrationRelations(a.Reconcile)(ctx, id)
		})},
		cfg.Lineage...)...); err != nil {
		return nil, a.closeOnError(err)
	}
	if cfg.LoadGraph {
		if err := a.Lineage.Open(ctx); err != nil {
			return nil, a.closeOnError(fmt.Errorf("load the lineage graph: %w", err))
		}
	}
	topts := append([]tables.Option{tables.WithLogger(cfg.Log), tables.WithConnections(cfg.Connections...), tables.WithVersions(a.Versions)}, cfg.Tables...)
	if a.Tables, err = tables.New(store, a.Catalog, topts...); err != nil {
		return nil, a.closeOnError(err)
	}
	wopts := append([]warehouse.Option{warehouse.WithLogger(cfg.Log), warehouse.WithVersions(a.Versions),
		warehouse.WithViewLineage(func(ctx context.Context, ev []byte) error { _, err := a.Lineage.Ingest(ctx, ev); return err })}, cfg.Warehouse...)
	if a.Warehouse, err = warehouse.New(store, a.Catalog, a.Tables, wopts...); err != nil {
		return nil, a.closeOnError(err)
	}
	copts := append([]cleanup.Option{cleanup.WithLogger(cfg.Log),
		cleanup.WithUsage(a.Usage, func(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
			return a.Lineage.Downstream(ctx, id, UnusedDownstreamDepth)
		}), cleanup.WithWarehouse(a.Warehouse), cleanup.WithVersions(a.Versions)}, cfg.Cleanup...)
	ropts := []reconcile.Option{reconcile.WithLogger(cfg.Log), reconcile.WithWriters(LineageWriters(a.Lineage))}
	for name, db := range cfg.MigrationSources {
		ropts = append(ropts, reconcile.WithConnection(name, db))
	}
	if a.Reconcile, err = reconcile.New(store, a.Catalog, a.Tables, a.Usage, ropts...); err != nil {
		return nil, a.closeOnError(err)
	}
	// A migrated asset is retired only after its cutover and a final clean reconciliation.
	copts = append(copts, cleanup.WithMigrationGate(a.Reconcile.RetirementGate))
	if a.Cleanup, err = cleanup.New(store, a.Catalog, a.Tables, copts...); err != nil {
		return nil, a.closeOnError(err)
	}
	if a.Notify, err = notify.New(store, a.Catalog, append([]notify.Option{notify.WithLogger(cfg.Log)}, cfg.Notify...)...); err != nil {
		return nil, a.closeOnError(err)
	}
	return a, nil
}

func (a *App) closeOnError(err error) error {
	return errors.Join(err, a.Close())
}

// Close releases the catalog connections and the store. Call it after Serve returned.
func (a *App) Close() error {
	var errs []error
	for _, c := range a.conns {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close Iceberg catalog %s: %w", c.Name, err))
		}
	}
	for name, db := range a.sources {
		if err := db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close migration source %s: %w", name, err))
		}
	}
	if err := a.Store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close the database: %w", err))
	}
	return errors.Join(errs...)
}

// Schedule is how often the background work runs; a zero interval turns that work off (the
// graph sync, the notifier and the dispatcher always run; the last two every
// notify.WithInterval, in Config.Notify).
type Schedule struct {
	GraphSync    time.Duration
	TablesSync   time.Duration // also once at start
	ScanInterval time.Duration
	ScanOptions  cleanup.ScanOptions
	// RefChecks is how often each table's references are checked by key in full; 0 never.
	RefChecks       time.Duration
	RefCheckOptions cleanup.RefCheckOptions
	CleanupEvery    time.Duration // propose, then execute inside the maintenance window
	Reconcile       time.Duration // how often each migration is reconciled; 0 never
}

// DefaultHandler is Handler with every face's default configuration: what a test of one face
// needs when it drives the others too (a web test committing through the REST catalog), without
// importing their packages.
func (a *App) DefaultHandler() (*server.Server, error) {
	return a.Handler(server.Config{}, handlers.Config{}, web.Config{})
}

// Handler builds the HTTP shell configured by shell and mounts the three faces into it: the
// API configured by api and the web UI by ui (their service fields are filled here), and the
// Iceberg REST catalog.
func (a *App) Handler(shell server.Config, api handlers.Config, ui web.Config) (*server.Server, error) {
	tokens := auth.NewStore(a.Store.Client, nil) // one store: the shell's tokens and the UI's sessions
	shell.Tokens, shell.Logger = tokens, a.Log
	srv := server.New(shell)
	api.Catalog, api.Lineage, api.Usage, api.Tables, api.Cleanup, api.Reconcile = a.Catalog, a.Lineage, a.Usage, a.Tables, a.Cleanup, a.Reconcile
	api.Warehouse = a.Warehouse
	api.Ping, api.Logger = a.Store.Ping, a.Log
	api.SearchIndex = a.Catalog.IndexStatus
	api.Notify = a.Notify
	api.Versions = a.Versions
	handlers.Mount(srv, api)
	ui.Catalog, ui.Lineage, ui.Usage, ui.Tables, ui.Cleanup, ui.Reconcile = a.Catalog, a.Lineage, a.Usage, a.Tables, a.Cleanup, a.Reconcile
	ui.Warehouse, ui.Notify, ui.Versions = a.Warehouse, a.Notify, a.Versions
	ui.Tokens, ui.Logger = tokens, a.Log
	if _, err := web.Mount(srv, ui); err != nil {
		return nil, err
	}
	a.served.Store(restcatalog.Mount(srv, restcatalog.Config{Warehouse: a.Warehouse, Tokens: tokens, Logger: a.Log, AuthReads: api.AuthReads,
		NoAuth: api.NoAuth, RecordUse: a.recordServedUse, RecordScan: a.recordServedScan, ScanReported: a.Versions.ScanReported, Purged: a.proposePurges}))
	return srv, nil
}

// Serve answers on ln with srv and runs the background work on sched until ctx ends. Then the
// server stops taking requests and lets in-flight ones finish (up to drain), and the loops are
// cancelled; Serve returns once all of them have returned.
func (a *App) Serve(ctx context.Context, ln net.Listener, srv *http.Server, sched Schedule, drain time.Duration) error {
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	g, gctx := errgroup.WithContext(bg)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("app: serve: %w", err)
		}
		return nil
	})
	a.background(g, gctx, sched)

	select {
	case <-ctx.Done():
	case <-gctx.Done(): // the server failed
	}
	a.Log.Info("shutting down: waiting for in-flight requests", "timeout", drain.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	stop() // the loops: each finishes or abandons its step (a scan is marked stopped)
	err := g.Wait()
	if f := a.served.Load(); f != nil {
		f.FlushLoads(context.WithoutCancel(ctx), true) // held loads count as reads
	}
	if shutdownErr != nil {
		err = errors.Join(err, fmt.Errorf("app: shutdown: %w", shutdownErr))
	}
	a.Log.Info("stopped")
	return err
}

// background starts the background work in g: one list of jobs, each owned by its domain
// (loop.Job: a step every interval, a failure logged and retried, ending with ctx).
func (a *App) background(g *errgroup.Group, ctx context.Context, s Schedule) {
	if s.GraphSync <= 0 {
		s.GraphSync = 2 * time.Second
	}
	jobs := []*loop.Job{
		a.Lineage.Job(s.GraphSync),
		a.Usage.Job(time.Minute),
		a.Versions.ResolveJob(), // runs pinned to the versions they read and wrote
		a.Catalog.IndexJob(),
		a.Catalog.KeyPurgeJob(),
		a.Tables.SyncJob(s.TablesSync),
		a.Warehouse.SettleJob(PendingCommitAge),
		a.Warehouse.InspectionJob(ServedInspection),
		a.Cleanup.ScanJob(time.Minute, s.ScanInterval, s.ScanOptions),
		a.Cleanup.RefCheckJob(time.Minute, s.RefChecks, s.RefCheckOptions),
		a.Cleanup.ProposeJob(s.CleanupEvery),
		a.Notify.DispatchJob(),
		a.Notify.NotifierJob(), // subscribers: audit log -> outbox
		a.Reconcile.Job(time.Minute, s.Reconcile),
	}
	if f := a.served.Load(); f != nil {
		jobs = append(jobs, f.LoadsJob())
	}
	for _, j := range jobs {
		if j != nil {
			g.Go(func() error { return j.Run(ctx) })
		}
	}
}

// FlushLoads records every table load the Iceberg REST face holds (restcatalog/loads.go) now,
// as the server does when it stops.
func (a *App) FlushLoads(ctx context.Context) {
	if f := a.served.Load(); f != nil {
		f.FlushLoads(ctx, true)
	}
}
