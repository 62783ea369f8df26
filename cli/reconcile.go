package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/reconcile"

	_ "github.com/lib/pq" // migration sources on PostgreSQL
)

// migrationSources opens (lazily: nothing connects yet) the PostgreSQL databases named in
// "name=DSN,name=DSN": the old or new side of a dataset migration may be read from them. Give
// each a role that can only read.
func migrationSources(spec string) (map[string]*sql.DB, error) {
	out := map[string]*sql.DB{}
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	for _, part := range strings.Split(spec, ",") {
		name, dsn, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, dsn = strings.TrimSpace(name), strings.TrimSpace(dsn)
		if !ok || name == "" || dsn == "" {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: %q must look like name=postgres://user@host:5432/db", redactDSN(part))
		}
		if _, dup := out[name]; dup {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: the name %q is given twice", name)
		}
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("--migration-sources: %s: %w", name, err)
		}
		out[name] = db
	}
	return out, nil
}

func closeAll(dbs map[string]*sql.DB) {
	for _, db := range dbs {
		db.Close()
	}
}

// redactDSN hides a password in an error message.
func redactDSN(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if at := strings.LastIndex(s, "@"); at > i {
			if colon := strings.Index(s[i+3:at], ":"); colon >= 0 {
				return s[:i+3+colon+1] + "***" + s[at:]
			}
		}
	}
	return s
}

const reconcileHelp = `Usage (dataset migrations; "tidemark migrate" is the database's own schema):
  tidemark reconcile list   [flags]                 every dataset migration and its state
  tidemark reconcile status [flags] MIGRATION_ID    the streak, readiness, what the cutover rule lacks
  tidemark reconcile run    [flags] MIGRATION_ID    reconcile now (what serve does every --reconcile-interval)
  tidemark reconcile change-log --table S.T --time-column C --log S.T [--grain 1h]
                                                    print the SQL that installs a change log on a
                                                    PostgreSQL side (run it as the table's owner)
Create migrations through the API (POST /api/v1/migrations).
`

// changeLogCmd prints the script that installs a change log (reconcile.ChangeLogSQL); it
// connects to nothing: Tidemark only reads the source, so its owner runs the script.
func changeLogCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reconcile change-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", "", "the side's table, schema.table")
	column := fs.String("time-column", "", "the migration's time column")
	log := fs.String("log", "", "the change log table to create, schema.table (name it in the side's change_log)")
	grain := fs.Duration("grain", reconcile.DefaultChangeGrain, "the time bin a change is logged at (a window overlapping a changed bin is read again)")
	if err := parse(fs, args); err != nil {
		return err
	}
	script, err := reconcile.ChangeLogSQL(*table, *column, *log, *grain)
	if err != nil {
		return fmt.Errorf("reconcile change-log: %w", err)
	}
	_, err = io.WriteString(stdout, script)
	return err
}

func reconcileCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, reconcileHelp)
		return errors.New("reconcile: say list, status or run")
	}
	what := args[0]
	if what == "change-log" {
		return changeLogCmd(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("reconcile "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newCmdEnv(fs)
	sources := fs.String("migration-sources", "", "PostgreSQL databases a side may be read from: name=DSN,... (TIDEMARK_MIGRATION_SOURCES)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var id uuid.UUID
	switch what {
	case "list":
	case "status", "run":
		if fs.NArg() != 1 {
			return fmt.Errorf("reconcile %s: give one migration ID", what)
		}
		var err error
		if id, err = uuid.Parse(fs.Arg(0)); err != nil {
			return fmt.Errorf("reconcile %s: %q is not a migration ID", what, fs.Arg(0))
		}
	default:
		fmt.Fprint(stderr, reconcileHelp)
		return fmt.Errorf("reconcile: unknown command %q", what)
	}
	srcs, err := migrationSources(*sources)
	if err != nil {
		return err
	}
	e.sources = srcs
	defer e.close()
	if err := e.open(ctx, stderr, false); err != nil {
		closeAll(srcs)
		return err
	}
	svc := e.app.Reconcile
	out := func(v any, text func()) error {
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		text()
		return nil
	}
	switch what {
	case "list":
		ms, err := svc.List(ctx, uuid.Nil, 1000)
		if err != nil {
			return err
		}
		return out(ms, func() {
			for _, m := range ms {
				fmt.Fprintf(stdout, "%s  %s -> %s  %s  owner %s\n", m.ID, m.OldAssetID, m.NewAssetID, m.State, m.Owner)
			}
		})
	case "status":
		st, err := svc.Status(ctx, id)
		if err != nil {
			return err
		}
		return out(st, func() {
			fmt.Fprintf(stdout, "migration %s (%s): %d consecutive clean runs\n", id, st.Migration.State, st.Streak)
			if st.Ready {
				fmt.Fprintln(stdout, "ready to cut over")
			}
			for _, m := range st.Missing {
				fmt.Fprintf(stdout, "  still needs %s\n", m)
			}
			if st.Broken != nil {
				fmt.Fprintf(stdout, "  broken by run %s: %s\n", st.Broken.ID, strings.Join(st.Broken.Causes, "; "))
			}
		})
	}
	run, err := svc.Reconcile(ctx, id)
	if run.ID == uuid.Nil {
		return err
	}
	perr := out(run, func() {
		state := "clean"
		if !run.Clean {
			state = "not clean"
		}
		fmt.Fprintf(stdout, "run %s: %s; %d windows, %d rows old, %d rows new, %.1f s\n", run.ID, state, len(run.Windows),
			run.Cost.RowsOld, run.Cost.RowsNew, run.Cost.Seconds)
		for _, c := range run.Causes {
			fmt.Fprintf(stdout, "  %s\n", c)
		}
	})
	return errors.Join(err, perr)
}
