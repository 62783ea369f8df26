package main

import (
	"context"
	"net/url"
	"slices"

	"errors"
	"flag"
	"fmt"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/web"
)

type serveConfig struct {
	db              dbConfig
	addr            string
	webhookPrivate  bool
	authReads       bool
	noAuth          bool
	bodyLimit       int64
	shutdownTimeout time.Duration
	lineageLimit    int64
	graphSync       time.Duration
	usageLateness   time.Duration
	usageRetention  time.Duration
	logLevel        string
	logFormat       string
	tables          tablesConfig
	tablesSync      time.Duration
	cleanup         cleanupConfig
	scanInterval    time.Duration
	cleanupEvery    time.Duration
	demo            bool
	rateLimit       float64
	anonRateLimit   float64
	readTimeout     time.Duration
	writeTimeout    time.Duration
	publicURL       string
}

func serve(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg serveConfig
	cfg.db.register(fs)
	fs.StringVar(&cfg.addr, "addr", env("TIDEMARK_ADDR", "127.0.0.1:8080"), "listen address (TIDEMARK_ADDR)")
	fs.BoolVar(&cfg.authReads, "auth-reads", envBool("TIDEMARK_AUTH_READS"), "require a read-scoped token for reads too (TIDEMARK_AUTH_READS)")
	fs.BoolVar(&cfg.webhookPrivate, "webhook-allow-private", envBool("TIDEMARK_WEBHOOK_ALLOW_PRIVATE"), "deliver webhooks to loopback, private and link-local addresses too (always allowed when --addr is loopback) (TIDEMARK_WEBHOOK_ALLOW_PRIVATE)")
	fs.BoolVar(&cfg.noAuth, "insecure-no-auth", envBool("TIDEMARK_INSECURE_NO_AUTH"), "turn authentication off; refused unless --addr is loopback (TIDEMARK_INSECURE_NO_AUTH)")
	fs.Int64Var(&cfg.bodyLimit, "body-limit", envInt("TIDEMARK_BODY_LIMIT", handlers.DefaultBodyLimit), "largest request body in bytes (TIDEMARK_BODY_LIMIT)")
	fs.Int64Var(&cfg.lineageLimit, "lineage-body-limit", envInt("TIDEMARK_LINEAGE_BODY_LIMIT", handlers.DefaultLineageBodyLimit), "largest OpenLineage request in bytes, before and after gzip (TIDEMARK_LINEAGE_BODY_LIMIT)")
	fs.DurationVar(&cfg.graphSync, "graph-sync-interval", envDuration("TIDEMARK_GRAPH_SYNC_INTERVAL", 2*time.Second), "how often the in-memory lineage graph picks up other replicas' edges (TIDEMARK_GRAPH_SYNC_INTERVAL)")
	fs.DurationVar(&cfg.usageLateness, "usage-lateness", envDuration("TIDEMARK_USAGE_LATENESS", usage.DefaultLateness), "oldest usage record accepted (TIDEMARK_USAGE_LATENESS)")
	fs.DurationVar(&cfg.usageRetention, "usage-retention", envDuration("TIDEMARK_USAGE_RETENTION", usage.DefaultRetention), "how long raw usage events are kept; rollups are kept forever (TIDEMARK_USAGE_RETENTION)")
	fs.Float64Var(&cfg.rateLimit, "rate-limit", envFloat("TIDEMARK_RATE_LIMIT", 100), "requests per second one API token may send, in bursts of twice that (429 with Retry-After above); 0 is unlimited (TIDEMARK_RATE_LIMIT)")
	fs.Float64Var(&cfg.anonRateLimit, "rate-limit-anonymous", envFloat("TIDEMARK_RATE_LIMIT_ANONYMOUS", 50), "requests per second one client address may send without a token (and with unknown tokens); 0 is unlimited (TIDEMARK_RATE_LIMIT_ANONYMOUS)")
	fs.DurationVar(&cfg.readTimeout, "read-timeout", envDuration("TIDEMARK_READ_TIMEOUT", time.Minute), "longest a client may take to send a request, body included (TIDEMARK_READ_TIMEOUT)")
	fs.DurationVar(&cfg.writeTimeout, "write-timeout", envDuration("TIDEMARK_WRITE_TIMEOUT", 5*time.Minute), "longest from the end of a request's headers to the end of its answer (TIDEMARK_WRITE_TIMEOUT)")
	fs.StringVar(&cfg.publicURL, "public-url", env("TIDEMARK_PUBLIC_URL", ""), "the URL people and tools reach the server at; https:// marks cookies Secure and sends HSTS (TIDEMARK_PUBLIC_URL)")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", envDuration("TIDEMARK_SHUTDOWN_TIMEOUT", 30*time.Second), "how long in-flight requests may finish on SIGTERM (TIDEMARK_SHUTDOWN_TIMEOUT)")
	cfg.tables.register(fs)
	fs.BoolVar(&cfg.demo, "demo", envBool("TIDEMARK_DEMO"), "fill the catalog with a demo (a real Iceberg warehouse under <data-dir>/demo, lineage, usage, scans, proposals) before serving; done once (TIDEMARK_DEMO)")
	cfg.cleanup.register(fs)
	fs.DurationVar(&cfg.scanInterval, "scan-interval", envDuration("TIDEMARK_SCAN_INTERVAL", 24*time.Hour), "how often each Iceberg table is scanned for orphans and dangling references (a table's property tidemark.cleanup.scan-interval overrides it); 0 turns scheduled scans off (TIDEMARK_SCAN_INTERVAL)")
	fs.DurationVar(&cfg.tablesSync, "tables-sync-interval", envDuration("TIDEMARK_TABLES_SYNC_INTERVAL", 15*time.Minute), "how often the configured Iceberg catalogs are synced; 0 turns the schedule off (TIDEMARK_TABLES_SYNC_INTERVAL)")
	fs.DurationVar(&cfg.cleanupEvery, "cleanup-interval", envDuration("TIDEMARK_CLEANUP_INTERVAL", 10*time.Minute), "how often the cleanup bot re-evaluates and opens proposals and executes approved ones; 0 turns it off (TIDEMARK_CLEANUP_INTERVAL)")
	fs.StringVar(&cfg.logLevel, "log-level", env("TIDEMARK_LOG_LEVEL", "info"), "debug, info, warn or error (TIDEMARK_LOG_LEVEL)")
	fs.StringVar(&cfg.logFormat, "log-format", env("TIDEMARK_LOG_FORMAT", "json"), "json or text (TIDEMARK_LOG_FORMAT)")
	if err := checkEnv(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	if cfg.noAuth && !isLoopback(cfg.addr) {
		return fmt.Errorf("--insecure-no-auth is refused on %s: it is allowed only on a loopback address such as 127.0.0.1:8080", cfg.addr)
	}
	if cfg.rateLimit < 0 || cfg.anonRateLimit < 0 || cfg.readTimeout <= 0 || cfg.writeTimeout <= 0 {
		return fmt.Errorf("--rate-limit and --rate-limit-anonymous must not be negative, --read-timeout and --write-timeout must be positive")
	}
	tls, err := publicTLS(cfg.publicURL)
	if err != nil {
		return err
	}
	if cfg.bodyLimit <= 0 || cfg.lineageLimit <= 0 {
		return fmt.Errorf("--body-limit and --lineage-body-limit must be positive")
	}
	if cfg.scanInterval < 0 {
		return fmt.Errorf("--scan-interval must not be negative, not %s", cfg.scanInterval)
	}
	cfg.cleanup.minGap = cfg.tables.confirmGap
	if err := cfg.cleanup.check(); err != nil {
		return err
	}
	if cfg.cleanup.age < cleanup.MinAgeThreshold && !cfg.cleanup.allowYoung {
		return fmt.Errorf("--scan-age-threshold %s is below the 24h minimum; add --scan-allow-young if you are sure no write takes longer to commit", cfg.cleanup.age)
	}
	if cfg.tablesSync < 0 {
		return fmt.Errorf("--tables-sync-interval must not be negative, not %s", cfg.tablesSync)
	}
	if cfg.graphSync <= 0 {
		return fmt.Errorf("--graph-sync-interval must be positive, not %s", cfg.graphSync)
	}

	store, err := cfg.db.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	applied, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	log.Info("database ready", "dialect", store.Dialect, "migrations_applied", len(applied))
	if cfg.demo {
		path, err := setupDemo(ctx, store, cfg.db.dataDir, log)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		if cfg.tables.catalogs == "" {
			cfg.tables.catalogs = path
		}
	}

	var lin *lineage.Service
	var use *usage.Service
	cat := catalog.New(store.Client, catalog.WithLogger(log),
		catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID) {
			lin.Graph().AssetsChanged(ctx, ids)
			use.NamesChanged(ctx, ids) // usage records that waited for a name
		}))
	use, err = usage.New(store.Client, cat, usage.WithLogger(log), usage.WithLateness(cfg.usageLateness), usage.WithRetention(cfg.usageRetention))
	if err != nil {
		return err
	}
	if err := use.Open(ctx); err != nil {
		return err
	}
	lin = lineage.New(store.Client, cat, lineage.WithLogger(log), lineage.WithCompletedRuns(usageOfRuns(use)))
	loadStart := time.Now()
	if err := lin.Open(ctx); err != nil {
		return err
	}
	tbls, closeTables, err := cfg.tables.open(store.Client, cat, log)
	if err != nil {
		return err
	}
	defer closeTables()
	f := lin.Graph().Freshness()
	log.Info("lineage graph loaded", "nodes", f.Nodes, "edges", f.Edges, "took", time.Since(loadStart).String())
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go lin.Run(bg, cfg.graphSync)
	go use.Run(bg, time.Minute)
	go every(bg, time.Hour, func(ctx context.Context) {
		if n, err := cat.PurgeIdempotencyKeys(ctx); err != nil {
			log.Warn("purge idempotency keys failed; will retry", "err", err)
		} else if n > 0 {
			log.Info("forgot expired idempotency keys", "count", n)
		}
	})

	if n := len(tbls.Connections()); n > 0 && cfg.tablesSync > 0 {
		syncTables := func(ctx context.Context) {
			rep, err := tbls.Sync(ctx, nil)
			if err != nil {
				log.Warn("Iceberg catalog sync failed; will retry", "err", err)
				return
			}
			log.Info("Iceberg catalogs synced", "sync_id", rep.ID, "added", rep.Added, "renamed", rep.Renamed,
				"marked_deleted", rep.MarkedDeleted, "refreshed", rep.Refreshed, "errors", rep.Errors)
		}
		go func() {
			syncTables(bg) // at start, then on the schedule
			every(bg, cfg.tablesSync, syncTables)
		}()
		log.Info("Iceberg catalog sync scheduled", "connections", n, "interval", cfg.tablesSync.String())
	}

	clean := cfg.cleanup.service(store, tbls, cat, log, cleanup.WithUsage(use, func(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
		return lin.Downstream(ctx, id, 5)
	}), cleanup.WithPrivateWebhooks(cfg.webhookPrivate || isLoopback(cfg.addr)))
	if cfg.scanInterval > 0 {
		go clean.Run(bg, time.Minute, cfg.scanInterval, cfg.cleanup.options())
		log.Info("cleanup scans scheduled", "interval", cfg.scanInterval.String(), "age_threshold", cfg.cleanup.age.String(),
			"confirm_gap", cfg.cleanup.minGap.String(), "list_rate", cfg.cleanup.listRate, "head_rate", cfg.cleanup.headRate, "window", cfg.cleanup.window)
	}
	if cfg.cleanupEvery > 0 {
		go every(bg, cfg.cleanupEvery, func(ctx context.Context) {
			if rep, err := clean.Propose(ctx); err != nil {
				log.Warn("cleanup proposals failed; will retry", "err", err)
			} else if rep.Opened+rep.Withdrawn+rep.Expired > 0 {
				log.Info("cleanup proposals", "opened", rep.Opened, "withdrawn", rep.Withdrawn, "expired", rep.Expired)
			}
			if !clean.InWindow() {
				return // deletions wait for the maintenance window
			}
			if rep, err := clean.Execute(ctx, uuid.Nil, nil); err != nil {
				log.Warn("cleanup execution stopped; the next run resumes it", "err", err)
			} else if rep.Proposals > 0 {
				log.Info("cleanup executed", "proposals", rep.Proposals, "executed", rep.Executed, "stopped", rep.Stopped, "files_deleted", rep.Deleted, "bytes", rep.Bytes)
			}
		})
	}
	go clean.RunDispatcher(bg, 10*time.Second)

	api := handlers.New(handlers.Config{
		Tables:             tbls,
		Cleanup:            clean,
		Catalog:            cat,
		Lineage:            lin,
		Usage:              use,
		LineageBodyLimit:   cfg.lineageLimit,
		Tokens:             auth.NewStore(store.Client, nil),
		Ping:               store.Ping,
		Logger:             log,
		AuthReads:          cfg.authReads,
		NoAuth:             cfg.noAuth,
		BodyLimit:          cfg.bodyLimit,
		Version:            version,
		RateLimit:          cfg.rateLimit,
		AnonymousRateLimit: cfg.anonRateLimit,
		AllowedHosts:       allowedHosts(cfg),
		HSTS:               tls,
	})
	ui, err := web.New(web.Config{Catalog: cat, Lineage: lin, Usage: use, Tables: tbls, Cleanup: clean,
		Tokens: auth.NewStore(store.Client, nil), Logger: log, RequireSession: cfg.authReads && !cfg.noAuth, SecureCookies: tls})
	if err != nil {
		return err
	}
	for _, p := range web.Routes {
		api.Echo.Any(p, echo.WrapHandler(ui))
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: cfg.readTimeout,
		WriteTimeout: cfg.writeTimeout, IdleTimeout: 2 * time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "addr", ln.Addr().String(), "auth", !cfg.noAuth, "auth_reads", cfg.authReads)
	if cfg.noAuth {
		log.Warn("authentication is OFF (--insecure-no-auth): anyone who can reach this address can write")
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests", "timeout", cfg.shutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// isLoopback reports whether addr binds only to a loopback interface. An empty host binds every
// interface, so it is not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// usageOfRuns counts completed OpenLineage runs as usage: inputs read, outputs written.
func usageOfRuns(use *usage.Service) func(context.Context, []lineage.CompletedRun) error {
	seen := func(refs []lineage.DatasetRef) []usage.Seen {
		out := make([]usage.Seen, len(refs))
		for i, r := range refs {
			out[i] = usage.Seen{ID: r.ID, Namespace: r.Namespace, Name: r.Name}
		}
		return out
	}
	return func(ctx context.Context, runs []lineage.CompletedRun) error {
		out := make([]usage.RunUsage, len(runs))
		for i, r := range runs {
			out[i] = usage.RunUsage{RunID: r.RunID, JobID: r.JobID, At: r.At, Actor: r.Actor, Inputs: seen(r.Inputs), Outputs: seen(r.Outputs)}
		}
		return use.FromRuns(ctx, out)
	}
}

// every runs fn every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// allowedHosts are the Host names answered without authentication: the loopback names and the
// listen address (a DNS rebinding page's requests carry its own name). With authentication any.
func allowedHosts(cfg serveConfig) []string {
	if !cfg.noAuth {
		return nil
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if h, _, err := net.SplitHostPort(cfg.addr); err == nil && h != "" && !slices.Contains(hosts, h) {
		hosts = append(hosts, h)
	}
	return hosts
}

// publicTLS parses --public-url and reports whether it is HTTPS.
func publicTLS(public string) (bool, error) {
	if public == "" {
		return false, nil
	}
	u, err := url.Parse(public)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false, fmt.Errorf("--public-url %q: give an absolute http:// or https:// URL such as https://tidemark.example.com", public)
	}
	return u.Scheme == "https", nil
}
