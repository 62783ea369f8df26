package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/demo"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/web"
)

type serveConfig struct {
	db              dbConfig
	addr            string
	webhookPrivate  bool
	stopWindow      time.Duration
	authReads       bool
	noAuth          bool
	bodyLimit       int64
	shutdownTimeout time.Duration
	lineageLimit    int64
	graphSync       time.Duration
	lineageMax      int
	budgetNodes     int
	budgetClient    int
	sources         string
	reconcileEvery  time.Duration
	usageLateness   time.Duration
	usageRetention  time.Duration
	logLevel        string
	logFormat       string
	tables          tablesConfig
	tablesSync      time.Duration
	cleanup         cleanupConfig
	scanInterval    scanIntervalFlag
	scanMin         time.Duration
	scanMax         time.Duration
	refChecks       time.Duration
	cleanupEvery    time.Duration
	demo            bool
	rateLimit       float64
	anonRateLimit   float64
	readTimeout     time.Duration
	writeTimeout    time.Duration
	publicURL       string
}

// serveFlags registers serve's flags on fs (the README's configuration table documents them; a
// test holds the two together).
func serveFlags(fs *flag.FlagSet, cfg *serveConfig) {
	cfg.db.register(fs)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen address (TIDEMARK_ADDR)")
	fs.BoolVar(&cfg.authReads, "auth-reads", false, "require a read-scoped token for reads too (TIDEMARK_AUTH_READS)")
	fs.BoolVar(&cfg.webhookPrivate, "webhook-allow-private", false, "deliver webhooks to loopback, private and link-local addresses too (always allowed when --addr is loopback) (TIDEMARK_WEBHOOK_ALLOW_PRIVATE)")
	fs.BoolVar(&cfg.noAuth, "insecure-no-auth", false, "turn authentication off; refused unless --addr is loopback (TIDEMARK_INSECURE_NO_AUTH)")
	fs.Int64Var(&cfg.bodyLimit, "body-limit", handlers.DefaultBodyLimit, "largest request body in bytes (TIDEMARK_BODY_LIMIT)")
	fs.Int64Var(&cfg.lineageLimit, "lineage-body-limit", handlers.DefaultLineageBodyLimit, "largest OpenLineage request in bytes, before and after gzip (TIDEMARK_LINEAGE_BODY_LIMIT)")
	fs.DurationVar(&cfg.graphSync, "graph-sync-interval", 2*time.Second, "how often the in-memory lineage graph picks up other replicas' edges (TIDEMARK_GRAPH_SYNC_INTERVAL)")
	fs.IntVar(&cfg.lineageMax, "lineage-max-nodes", lineage.DefaultMaxNodes, "most nodes one lineage answer may hold (the limit parameter's ceiling) (TIDEMARK_LINEAGE_MAX_NODES)")
	fs.IntVar(&cfg.budgetNodes, "lineage-budget-nodes", 0, "most nodes all lineage answers in flight may hold together; more wait up to 2s, then 503 with Retry-After; 0 is 4 × the per-client budget (TIDEMARK_LINEAGE_BUDGET_NODES)")
	fs.IntVar(&cfg.budgetClient, "lineage-budget-per-client", 0, "most nodes one client's lineage answers in flight may hold together (a token, else an address), also the largest limit; 0 is --lineage-max-nodes (TIDEMARK_LINEAGE_BUDGET_PER_CLIENT)")
	fs.StringVar(&cfg.sources, "migration-sources", "", "PostgreSQL databases dataset migrations may read a side from: name=DSN,... (use a role that can only read) (TIDEMARK_MIGRATION_SOURCES)")
	fs.DurationVar(&cfg.reconcileEvery, "reconcile-interval", 6*time.Hour, "how often each dataset migration is reconciled; 0 turns scheduled runs off (TIDEMARK_RECONCILE_INTERVAL)")
	fs.DurationVar(&cfg.usageLateness, "usage-lateness", usage.DefaultLateness, "oldest usage record accepted (TIDEMARK_USAGE_LATENESS)")
	fs.DurationVar(&cfg.usageRetention, "usage-retention", usage.DefaultRetention, "how long raw usage events are kept; rollups are kept forever (TIDEMARK_USAGE_RETENTION)")
	fs.Float64Var(&cfg.rateLimit, "rate-limit", 100, "requests per second one API token may send, in bursts of twice that (429 with Retry-After above); 0 is unlimited (TIDEMARK_RATE_LIMIT)")
	fs.Float64Var(&cfg.anonRateLimit, "rate-limit-anonymous", 50, "requests per second one client address may send without a token (and with unknown tokens); 0 is unlimited (TIDEMARK_RATE_LIMIT_ANONYMOUS)")
	fs.DurationVar(&cfg.readTimeout, "read-timeout", time.Minute, "longest a client may take to send a request, body included (TIDEMARK_READ_TIMEOUT)")
	fs.DurationVar(&cfg.writeTimeout, "write-timeout", 5*time.Minute, "longest from the end of a request's headers to the end of its answer (TIDEMARK_WRITE_TIMEOUT)")
	fs.StringVar(&cfg.publicURL, "public-url", "", "the URL people and tools reach the server at; https:// marks cookies Secure and sends HSTS (TIDEMARK_PUBLIC_URL)")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may finish on SIGTERM (TIDEMARK_SHUTDOWN_TIMEOUT)")
	cfg.tables.register(fs)
	fs.BoolVar(&cfg.demo, "demo", false, "fill the catalog with a demo (a real Iceberg warehouse under <data-dir>/demo, lineage, usage, scans, proposals) before serving; done once (TIDEMARK_DEMO)")
	cfg.cleanup.register(fs)
	cfg.scanInterval = scanIntervalFlag{d: 24 * time.Hour}
	fs.Var(&cfg.scanInterval, "scan-interval", "how often each Iceberg table's location is scanned for orphans (a table's property tidemark.cleanup.scan-interval overrides it), or auto: each table's break-even cadence from its last scan's cost and orphan growth, within --scan-interval-min and --scan-interval-max; 0 turns scheduled scans off (TIDEMARK_SCAN_INTERVAL)")
	fs.DurationVar(&cfg.scanMin, "scan-interval-min", 6*time.Hour, "with --scan-interval auto, the shortest cadence (TIDEMARK_SCAN_INTERVAL_MIN)")
	fs.DurationVar(&cfg.scanMax, "scan-interval-max", 30*24*time.Hour, "with --scan-interval auto, the longest cadence, also when orphans do not grow (TIDEMARK_SCAN_INTERVAL_MAX)")
	fs.DurationVar(&cfg.refChecks, "check-refs-interval", 24*time.Hour, "how often every file each Iceberg table's retained snapshots and refs reference is checked by key for dangling references (a stopped check resumes sooner); 0 turns scheduled checks off (TIDEMARK_CHECK_REFS_INTERVAL)")
	fs.DurationVar(&cfg.tablesSync, "tables-sync-interval", 15*time.Minute, "how often the configured Iceberg catalogs are synced; 0 turns the schedule off (TIDEMARK_TABLES_SYNC_INTERVAL)")
	fs.DurationVar(&cfg.cleanupEvery, "cleanup-interval", 10*time.Minute, "how often the cleanup bot re-evaluates and opens proposals and executes approved ones; 0 turns it off (TIDEMARK_CLEANUP_INTERVAL)")
	fs.DurationVar(&cfg.stopWindow, "cleanup-stop-window", cleanup.DefaultStopWindow, "an approved proposal waits this long before it may be executed; until its execution starts a person can cancel it (TIDEMARK_CLEANUP_STOP_WINDOW)")
	fs.StringVar(&cfg.logLevel, "log-level", "info", "debug, info, warn or error (TIDEMARK_LOG_LEVEL)")
	fs.StringVar(&cfg.logFormat, "log-format", "json", "json or text (TIDEMARK_LOG_FORMAT)")
}

func serve(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg serveConfig
	serveFlags(fs, &cfg)
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		return err
	}
	if cfg.noAuth && !isLoopback(cfg.addr) {
		return fmt.Errorf("--insecure-no-auth is refused on %s: it is allowed only on a loopback address such as 127.0.0.1:8080", cfg.addr)
	}
	if err := cfg.check(); err != nil {
		return err
	}
	tls, err := publicTLS(cfg.publicURL)
	if err != nil {
		return err
	}

	store, err := cfg.db.open(ctx)
	if err != nil {
		return err
	}
	applied, err := store.Migrate(ctx)
	if err != nil {
		store.Close()
		return err
	}
	log.Info("database ready", "dialect", store.Dialect, "migrations_applied", len(applied))
	if cfg.demo {
		path, err := demo.Setup(ctx, store, cfg.db.dataDir, log)
		if err != nil {
			store.Close()
			return err
		}
		if cfg.tables.catalogs == "" {
			cfg.tables.catalogs = path
		}
	}
	if err := defaultWarehouse(&cfg.tables, cfg.db.dataDir); err != nil {
		store.Close()
		return err
	}
	acfg, err := cfg.tables.appConfig(log)
	if err != nil {
		store.Close()
		return err
	}
	acfg.Lineage = append(acfg.Lineage, lineage.WithMaxNodes(cfg.lineageMax), lineage.WithBudget(cfg.budgetNodes, cfg.budgetClient))
	if acfg.MigrationSources, err = migrationSources(cfg.sources); err != nil {
		store.Close()
		return err
	}
	acfg.Usage = []usage.Option{usage.WithLateness(cfg.usageLateness), usage.WithRetention(cfg.usageRetention)}
	acfg.Cleanup = append(cfg.cleanup.appOptions(), cleanup.WithStopWindow(cfg.stopWindow))
	acfg.Notify = []notify.Option{notify.WithPrivateWebhooks(cfg.webhookPrivate || isLoopback(cfg.addr))}
	if cfg.scanInterval.auto {
		acfg.Cleanup = append(acfg.Cleanup, cleanup.WithAutoCadence(cfg.scanMin, cfg.scanMax))
	}
	a, err := app.Open(ctx, store, acfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Warn("close", "err", err)
		}
	}()
	h, err := a.Handler(server.Config{RateLimit: cfg.rateLimit, AnonymousRateLimit: cfg.anonRateLimit, AllowedHosts: allowedHosts(cfg), HSTS: tls},
		handlers.Config{LineageBodyLimit: cfg.lineageLimit, AuthReads: cfg.authReads, NoAuth: cfg.noAuth, BodyLimit: cfg.bodyLimit, Version: Version},
		web.Config{RequireSession: cfg.authReads && !cfg.noAuth, SecureCookies: tls})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: cfg.readTimeout,
		WriteTimeout: cfg.writeTimeout, IdleTimeout: 2 * time.Minute}
	log.Info("serving", "addr", ln.Addr().String(), "auth", !cfg.noAuth, "auth_reads", cfg.authReads)
	if cfg.noAuth {
		log.Warn("authentication is OFF (--insecure-no-auth): anyone who can reach this address can write")
	}
	// One plain line for the person who started it, besides the JSON logs: where to go and how
	// to sign in.
	fmt.Fprintf(stderr, "Tidemark is serving at %s (the API is described at /api/openapi.json). To sign in to the UI, create a token: %s token create --name you --scopes admin\n", serverURL(cfg.publicURL, ln.Addr().String()), invokedAs(os.Args[0]))
	if ready != nil {
		ready <- ln.Addr().String()
	}
	return a.Serve(ctx, ln, srv, app.Schedule{GraphSync: cfg.graphSync, TablesSync: cfg.tablesSync, ScanInterval: cfg.scanInterval.d,
		ScanOptions: cfg.cleanup.options(), RefChecks: cfg.refChecks, RefCheckOptions: cleanup.RefCheckOptions{RecheckDelay: cfg.cleanup.recheck},
		CleanupEvery: cfg.cleanupEvery, Reconcile: cfg.reconcileEvery}, cfg.shutdownTimeout)
}

// check refuses bad flag values before anything starts.
func (cfg *serveConfig) check() error {
	if cfg.rateLimit < 0 || cfg.anonRateLimit < 0 || cfg.readTimeout <= 0 || cfg.writeTimeout <= 0 {
		return fmt.Errorf("--rate-limit and --rate-limit-anonymous must not be negative, --read-timeout and --write-timeout must be positive")
	}
	if cfg.bodyLimit <= 0 || cfg.lineageLimit <= 0 {
		return fmt.Errorf("--body-limit and --lineage-body-limit must be positive")
	}
	if cfg.scanInterval.d < 0 {
		return fmt.Errorf("--scan-interval must not be negative, not %s", cfg.scanInterval.d)
	}
	if cfg.scanInterval.auto && (cfg.scanMin <= 0 || cfg.scanMax < cfg.scanMin) {
		return fmt.Errorf("--scan-interval auto needs 0 < --scan-interval-min (%s) <= --scan-interval-max (%s)", cfg.scanMin, cfg.scanMax)
	}
	if cfg.stopWindow < 0 {
		return fmt.Errorf("--cleanup-stop-window must not be negative, not %s", cfg.stopWindow)
	}
	if cfg.refChecks < 0 {
		return fmt.Errorf("--check-refs-interval must not be negative, not %s", cfg.refChecks)
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
	if cfg.reconcileEvery < 0 {
		return fmt.Errorf("--reconcile-interval must not be negative, not %s", cfg.reconcileEvery)
	}
	if cfg.lineageMax < 1 || cfg.lineageMax > 10_000_000 {
		return fmt.Errorf("--lineage-max-nodes must be from 1 to 10000000, not %d", cfg.lineageMax)
	}
	if cfg.budgetNodes < 0 || cfg.budgetClient < 0 || (cfg.budgetNodes > 0 && cfg.budgetClient > cfg.budgetNodes) {
		return fmt.Errorf("--lineage-budget-nodes (%d) and --lineage-budget-per-client (%d) must not be negative, and one client's budget must fit in the whole", cfg.budgetNodes, cfg.budgetClient)
	}
	return nil
}

// serverURL is where people reach the server: --public-url, or the address it listens on
// (an unspecified host shown as 127.0.0.1).
func serverURL(public, addr string) string {
	if public != "" {
		return strings.TrimSuffix(public, "/") + "/"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
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

// defaultWarehouse serves one warehouse beside the database when none is configured, so the
// quick start's engines can commit at once.
func defaultWarehouse(c *tablesConfig, dataDir string) error {
	if c.warehouses != "" {
		return nil
	}
	dir, err := filepath.Abs(filepath.Join(dataDir, "warehouse"))
	if err != nil {
		return err
	}
	c.warehouses, c.defaulted = "default="+dir, true
	return nil
}

// scanIntervalFlag is --scan-interval: a duration, or auto (the default cadence of 24h for a
// table without a cost history, then each table's break-even cadence within the bounds).
type scanIntervalFlag struct {
	d    time.Duration
	auto bool
}

func (f *scanIntervalFlag) String() string {
	if f.auto {
		return "auto"
	}
	return f.d.String()
}

func (f *scanIntervalFlag) Set(v string) error {
	if v == "auto" {
		f.d, f.auto = 24*time.Hour, true
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("give a duration such as 24h, 0 to turn scheduled scans off, or auto")
	}
	f.d, f.auto = d, false
	return nil
}

// invokedAs is how the reader started this binary, for the commands the banner suggests: `go run .`
// builds into a temporary directory, and its reader has no tidemark binary.
func invokedAs(arg0 string) string {
	dir := filepath.Dir(arg0)
	if strings.Contains(dir, "go-build") {
		return "go run ."
	}
	if filepath.Base(arg0) == "tidemark" && !strings.Contains(arg0, "/") {
		return "tidemark"
	}
	return arg0
}
