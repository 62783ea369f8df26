// Command tidemark is the Tidemark data catalog: `tidemark serve` runs the API, `tidemark
// migrate` brings the database schema up to date, `tidemark token` manages API tokens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/ent/storage"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const helpText = `tidemark: a data catalog keyed on immutable asset IDs

Usage:
  tidemark serve    [flags]   run the API (migrates the database first)
  tidemark migrate  [flags]   apply pending database migrations and exit
  tidemark token create --name NAME --scopes read|write|admin[,...]
  tidemark token list | tidemark token revoke --name NAME
  tidemark tables register|sync|refresh|list [flags]   Iceberg tables (see tidemark tables)
  tidemark cleanup scan [--table ID|NAME] [flags]      orphan and dangling-reference scans
  tidemark version

Every flag falls back to an environment variable (shown in each command's -h).
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "tidemark:", err)
		}
		os.Exit(2)
	}
}

// run executes one command. ready, when set, receives the serving address (tests listen on :0).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, helpText)
		return flag.ErrHelp
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr, ready)
	case "migrate":
		return migrate(ctx, args[1:], stdout, stderr)
	case "token":
		return token(ctx, args[1:], stdout, stderr)
	case "tables":
		return tablesCmd(ctx, args[1:], stdout, stderr)
	case "cleanup":
		return cleanupCmd(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "tidemark", version)
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, helpText)
		return nil
	}
	fmt.Fprint(stderr, helpText)
	return fmt.Errorf("unknown command %q", args[0])
}

// dbConfig holds the flags every command that touches the database shares.
type dbConfig struct {
	dsn     string
	dataDir string
}

func (c *dbConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", env("TIDEMARK_DATA_DIR", "data"), "directory for the embedded database and other state (TIDEMARK_DATA_DIR)")
	fs.StringVar(&c.dsn, "db", env("TIDEMARK_DB", ""), "database: empty for SQLite in --data-dir, a file path for SQLite, or postgres://... (TIDEMARK_DB)")
}

// open opens (not migrates) the configured database.
func (c *dbConfig) open(ctx context.Context) (*storage.DB, error) {
	dsn := c.dsn
	if dsn == "" {
		dsn = filepath.Join(c.dataDir, "tidemark.db")
	}
	return storage.Open(ctx, dsn)
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", format)
}

func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var db dbConfig
	db.register(fs)
	dryRun := fs.Bool("dry-run", false, "list pending migrations without applying them")
	if err := checkEnv(fs); err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	if *dryRun {
		pending, err := store.Pending(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d pending migration(s)\n", len(pending))
		for _, p := range pending {
			fmt.Fprintln(stdout, " ", p)
		}
		return nil
	}
	applied, err := store.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migration(s) to %s\n", len(applied), store.Dialect)
	for _, v := range applied {
		fmt.Fprintln(stdout, " ", v)
	}
	return nil
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func envBool(key string) bool {
	b, _ := strconv.ParseBool(os.Getenv(key))
	return b
}

func envInt(key string, def int64) int64 {
	if n, err := strconv.ParseInt(os.Getenv(key), 10, 64); err == nil {
		return n
	}
	return def
}

func envFloat(key string, def float64) float64 {
	if f, err := strconv.ParseFloat(os.Getenv(key), 64); err == nil {
		return f
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil {
		return d
	}
	return def
}

var envInUsage = regexp.MustCompile(`\((TIDEMARK_[A-Z0-9_]+)\)\s*$`)

// checkEnv sets every flag whose usage names an environment variable (it ends in
// "(TIDEMARK_...)") from that variable when it is set, through the flag's own parser, so a value
// the flag would refuse on the command line (TIDEMARK_AUTH_READS=yes, TIDEMARK_SCAN_INTERVAL=1d)
// stops the command with an error naming it instead of silently leaving the default. Command-line
// flags, parsed after, still win.
func checkEnv(fs *flag.FlagSet) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		m := envInUsage.FindStringSubmatch(f.Usage)
		if m == nil {
			return
		}
		v, ok := os.LookupEnv(m[1])
		if !ok {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q is not a valid value for --%s: %v", m[1], v, f.Name, err))
		}
	})
	return errors.Join(errs...)
}
