// Package cli owns Tidemark's command line: each command's flags (every one also read from
// its TIDEMARK_* environment variable, through the flag's own parser), their validation, and
// what the command prints. What the commands run is built by package app.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"

	"github.com/tidemark/tidemark/storage"
)

// Version is the build's version (the tidemark command sets it from -ldflags).
var Version = "dev"

const helpText = `tidemark: a data catalog keyed on immutable asset IDs

Usage:
  tidemark serve    [flags]   run the API (migrates the database first)
  tidemark migrate  [flags]   apply pending database migrations and exit
  tidemark token create --name NAME --scopes read|write|admin[,...]
  tidemark token list | tidemark token revoke --name NAME
  tidemark tables register|sync|refresh|list [flags]   Iceberg tables (see tidemark tables)
  tidemark cleanup scan [--table ID|NAME] [flags]      orphan and dangling-reference scans
  tidemark reconcile list|status|run [flags]           dataset migrations (see tidemark reconcile)
  tidemark version

Every flag falls back to an environment variable (shown in each command's -h).
`

// Run executes one command. ready, when set, receives the serving address (tests listen on :0).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, ready chan<- string) error {
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
	case "reconcile":
		return reconcileCmd(ctx, args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "tidemark", Version)
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
	fs.StringVar(&c.dataDir, "data-dir", "data", "directory for the embedded database and other state (TIDEMARK_DATA_DIR)")
	fs.StringVar(&c.dsn, "db", "", "database: empty for SQLite in --data-dir, a file path for SQLite, or postgres://... (TIDEMARK_DB)")
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
	if err := parse(fs, args); err != nil {
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

var envInUsage = regexp.MustCompile(`\((TIDEMARK_[A-Z0-9_]+)\)\s*$`)

// parse is how every command reads its configuration, one mechanism for flags and environment:
// each flag whose usage ends in "(TIDEMARK_...)" is first set from that variable when it is set,
// through the flag's own parser, so a value the flag would refuse on the command line
// (TIDEMARK_AUTH_READS=yes, TIDEMARK_SCAN_INTERVAL=1d) stops the command with an error naming
// it instead of silently leaving the default; then the command line, which wins. Flags may
// come before or after the positional arguments (`tables register LOCATION --name N`), as the
// README writes them; "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) error {
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
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			positional = append(positional, rest...) // after "--" everything is an argument
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	// Leave the positional arguments where fs.Args finds them.
	return fs.Parse(append([]string{"--"}, positional...))
}
