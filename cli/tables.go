package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/tables"
)

// tablesConfig holds the Iceberg flags serve and the tables command share.
type tablesConfig struct {
	catalogs   string
	smallFile  int64
	confirmGap time.Duration
	roots      string
	ambient    bool
	fileLimit  int64
	warehouses string
	// defaulted: warehouses is serve's default, which a configuration file's warehouses replace.
	defaulted bool
}

func (c *tablesConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.catalogs, "iceberg-catalogs", "", "JSON file of Iceberg catalog connections to sync, IO properties, and served warehouses with their storage and access settings; see README (TIDEMARK_ICEBERG_CATALOGS)")
	fs.DurationVar(&c.confirmGap, "confirm-gap", tables.DefaultConfirmGap, "two cleanup walks confirm an orphan, and two catalog listings a dropped table, only this far apart (TIDEMARK_CONFIRM_GAP)")
	fs.StringVar(&c.roots, "warehouse-roots", "", "comma-separated locations (paths, file:// or s3:// URIs) under which tables may be registered by metadata location; the catalog connections' warehouses are roots too (TIDEMARK_WAREHOUSE_ROOTS)")
	fs.BoolVar(&c.ambient, "io-ambient-credentials", false, "let tables registered on object stores use this machine's own credentials (environment, profiles, instance metadata) when io_properties name none (TIDEMARK_IO_AMBIENT_CREDENTIALS)")
	fs.Int64Var(&c.fileLimit, "table-file-limit", tables.DefaultFileLimit, "largest Iceberg metadata, manifest list or manifest file read, in bytes (TIDEMARK_TABLE_FILE_LIMIT)")
	fs.StringVar(&c.warehouses, "iceberg-warehouses", "", "comma-separated NAME=LOCATION warehouses served over the Iceberg REST catalog protocol at /iceberg (serve's default: default=<data-dir>/warehouse; none serves none) (TIDEMARK_ICEBERG_WAREHOUSES)")
	fs.Int64Var(&c.smallFile, "small-file-size", tables.DefaultSmallFile, "data files below this many bytes count as small in table health (TIDEMARK_SMALL_FILE_SIZE)")
}

// appConfig is the tables part of the services' configuration: options and the catalog
// connections (not yet opened).
func (c *tablesConfig) appConfig(log *slog.Logger) (app.Config, error) {
	if c.confirmGap <= 0 {
		return app.Config{}, fmt.Errorf("--confirm-gap %s must be positive: one listing or one walk is not proof", c.confirmGap)
	}
	cfg := app.Config{Log: log, Tables: []tables.Option{tables.WithSmallFile(c.smallFile), tables.WithConfirmGap(c.confirmGap),
		tables.WithAmbientCredentials(c.ambient), tables.WithFileLimit(c.fileLimit)}}
	for _, r := range strings.Split(c.roots, ",") {
		if r = strings.TrimSpace(r); r != "" {
			cfg.Tables = append(cfg.Tables, tables.WithWarehouseRoots(r))
		}
	}
	ws, err := parseWarehouses(c.warehouses)
	if err != nil {
		return app.Config{}, err
	}
	var more []tables.Option
	if c.catalogs != "" {
		var served int
		if more, cfg.Connections, served, err = tables.LoadConfigWarehouses(c.catalogs); err != nil {
			return app.Config{}, err
		}
		if served > 0 && c.defaulted {
			ws = nil // the file names the warehouses: serve's default one is not wanted
		}
	}
	cfg.Tables = append(cfg.Tables, tables.WithWarehouses(ws...))
	cfg.Tables = append(cfg.Tables, more...)
	return cfg, nil
}

// cmdEnv is what the tables and cleanup commands share: the database, Iceberg catalog and log
// flags, and once opened the application's services.
type cmdEnv struct {
	db       dbConfig
	tc       tablesConfig
	cc       *cleanupConfig     // the cleanup commands' flags, when they have them
	sources  map[string]*sql.DB // the migrations commands' PostgreSQL sources; the app closes them
	logLevel *string
	app      *app.App
}

func newCmdEnv(fs *flag.FlagSet) *cmdEnv {
	e := &cmdEnv{}
	e.db.register(fs)
	e.tc.register(fs)
	e.logLevel = fs.String("log-level", "warn", "debug, info, warn or error (TIDEMARK_LOG_LEVEL)")
	return e
}

// open opens and migrates the database and builds the services; with graph the lineage graph
// is loaded too (the cleanup bot's unused-asset checks follow it downstream).
func (e *cmdEnv) open(ctx context.Context, stderr io.Writer, graph bool) error {
	log, err := newLogger(stderr, *e.logLevel, "text")
	if err != nil {
		return err
	}
	cfg, err := e.tc.appConfig(log)
	if err != nil {
		return err
	}
	if e.cc != nil {
		cfg.Cleanup = e.cc.appOptions()
	}
	cfg.LoadGraph = graph
	cfg.MigrationSources = e.sources
	store, err := e.db.open(ctx)
	if err != nil {
		return err
	}
	if _, err := store.Migrate(ctx); err != nil {
		store.Close()
		return err
	}
	e.app, err = app.Open(ctx, store, cfg)
	return err
}

func (e *cmdEnv) close() {
	if e.app != nil {
		if err := e.app.Close(); err != nil {
			e.app.Log.Warn("close", "err", err)
		}
	}
}

const tablesHelp = `Usage:
  tidemark tables register [flags] METADATA_LOCATION   bind a table to an asset and inspect it
  tidemark tables sync     [flags]                     reconcile every configured Iceberg catalog
  tidemark tables refresh  [flags] ASSET_ID            reload a table's metadata and inspect it
  tidemark tables list     [flags]
`

func tablesCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tablesHelp)
		return errors.New("tables: say register, sync, refresh or list")
	}
	fs := flag.NewFlagSet("tables "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newCmdEnv(fs)
	force := fs.Bool("force", false, "register: accept a metadata file older than the table's current one (moves the table back in time)")
	namespace := fs.String("namespace", "", "register: the asset namespace (default: from the table location, as OpenLineage names it)")
	name := fs.String("name", "", "register: the asset name (default: the table location's path)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	defer e.close()
	if err := e.open(ctx, stderr, false); err != nil {
		return err
	}
	svc := e.app.Tables
	ctx = catalog.WithActor(ctx, "cli")
	out := func(v any, text func()) error {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		text()
		return nil
	}
	switch args[0] {
	case "register":
		if fs.NArg() != 1 {
			return errors.New("tables register: give exactly one metadata location")
		}
		t, rep, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: fs.Arg(0), Namespace: *namespace, Name: *name, Force: *force})
		if err != nil {
			return err
		}
		return out(map[string]any{"table": t, "refresh": rep}, func() {
			fmt.Fprintf(stdout, "registered table %s as asset %s\n", t.TableUUID, t.AssetID)
			printRefresh(stdout, rep)
		})
	case "refresh":
		if fs.NArg() != 1 {
			return errors.New("tables refresh: give exactly one asset ID")
		}
		id, err := uuid.Parse(fs.Arg(0))
		if err != nil {
			return fmt.Errorf("tables refresh: %q is not an asset ID", fs.Arg(0))
		}
		rep, err := svc.Refresh(ctx, id)
		if err != nil {
			return err
		}
		return out(rep, func() { printRefresh(stdout, rep) })
	case "sync":
		if len(svc.Connections()) == 0 {
			return errors.New("tables sync: no Iceberg catalog is configured; pass --iceberg-catalogs FILE (see README)")
		}
		start := time.Now()
		rep, err := svc.Sync(ctx, func(conn string, done, total int) {
			if conn != "" {
				fmt.Fprintf(stderr, "[%d/%d] syncing %s ... (%s)\n", done+1, total, conn, time.Since(start).Round(time.Millisecond))
			}
		})
		if err != nil {
			return err
		}
		if err := out(rep, func() { printSync(stdout, rep) }); err != nil {
			return err
		}
		if rep.Errors > 0 {
			return fmt.Errorf("tables sync: %d catalogs, namespaces or tables could not be read (listed above); nothing in them was marked deleted", rep.Errors)
		}
		return nil
	case "list":
		ts, _, err := svc.List(ctx, uuid.Nil, 1000)
		if err != nil {
			return err
		}
		return out(ts, func() {
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ASSET ID\tSOURCE\tIDENTIFIER\tSNAPSHOT\tREFRESHED\tERROR")
			for _, t := range ts {
				src, snap, ref := t.Connection, "-", "-"
				if src == "" {
					src = "(registered)"
				}
				if t.CurrentSnapshotID != nil {
					snap = fmt.Sprint(*t.CurrentSnapshotID)
				}
				if t.RefreshedAt != nil {
					ref = t.RefreshedAt.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.AssetID, src, t.Identifier, snap, ref, t.Error)
			}
			w.Flush()
		})
	}
	fmt.Fprint(stderr, tablesHelp)
	return fmt.Errorf("tables: unknown subcommand %q", args[0])
}

func printRefresh(w io.Writer, r tables.RefreshReport) {
	fmt.Fprintf(w, "inspected %d snapshots in %s: read %d manifest lists and %d manifests (%d entries) from storage; %d lists and %d manifests came from the cache\n",
		r.Snapshots, r.Duration, r.ManifestListsRead, r.ManifestsRead, r.EntriesRead, r.ManifestListsHit, r.ManifestsCached)
}

func printSync(w io.Writer, r tables.SyncReport) {
	for _, c := range r.Connections {
		if c.Error != "" {
			fmt.Fprintf(w, "%s: UNREACHABLE, nothing from it was marked deleted: %s\n", c.Name, c.Error)
			continue
		}
		fmt.Fprintf(w, "%s: %d namespaces, %d tables: %d added, %d renamed, %d restored, %d marked deleted, %d refreshed, %d unchanged, %d failed; %d manifests read, %d from cache\n",
			c.Name, c.Namespaces, c.Tables, len(c.Added), len(c.Renamed), len(c.Restored), len(c.Deleted), c.Refreshed, c.Unchanged, len(c.Failed), c.ManifestsRead, c.ManifestsCached)
		for _, ch := range c.Added {
			fmt.Fprintf(w, "  added          %s (asset %s)\n", ch.Identifier, ch.AssetID)
		}
		for _, ch := range c.Renamed {
			fmt.Fprintf(w, "  renamed        %s -> %s (asset %s)\n", ch.From, ch.Identifier, ch.AssetID)
		}
		for _, ch := range c.Restored {
			fmt.Fprintf(w, "  restored       %s (asset %s)\n", ch.Identifier, ch.AssetID)
		}
		for _, ch := range c.Deleted {
			fmt.Fprintf(w, "  marked deleted %s (asset %s); no file was touched\n", ch.Identifier, ch.AssetID)
		}
		for _, ns := range c.Unreachable {
			fmt.Fprintf(w, "  UNREACHABLE    namespace %s, not treated as empty: %s\n", ns.Namespace, ns.Error)
		}
		for _, ch := range c.Failed {
			fmt.Fprintf(w, "  FAILED         %s: %s\n", ch.Identifier, ch.Error)
		}
	}
}

// parseWarehouses reads NAME=LOCATION pairs; "none" is no warehouse.
func parseWarehouses(v string) ([]tables.Warehouse, error) {
	if v = strings.TrimSpace(v); v == "" || v == "none" {
		return nil, nil
	}
	var out []tables.Warehouse
	for _, part := range strings.Split(v, ",") {
		name, loc, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(loc) == "" {
			return nil, fmt.Errorf("--iceberg-warehouses: %q is not NAME=LOCATION (e.g. main=s3://bucket/warehouse or main=/srv/warehouse)", part)
		}
		out = append(out, tables.Warehouse{Name: strings.TrimSpace(name), Location: strings.TrimSpace(loc)})
	}
	return out, nil
}
