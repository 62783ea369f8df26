package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tidemark/tidemark/app"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
)

// cleanupConfig holds the scan flags serve and the cleanup command share.
type cleanupConfig struct {
	age          time.Duration
	allowYoung   bool
	pageSize     int
	listRate     float64
	headRate     float64
	headParallel int
	shardPar     int
	recheck      time.Duration
	prices       cleanup.Prices
	unusedWindow time.Duration
	minAge       time.Duration
	grace        time.Duration
	openFor      time.Duration
	rejectQuiet  time.Duration
	minGap       time.Duration // --confirm-gap, registered with the tables flags
	window       string
}

func (c *cleanupConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.age, "scan-age-threshold", cleanup.DefaultAgeThreshold, "files younger than this are never orphan candidates; below 24h needs --scan-allow-young (TIDEMARK_SCAN_AGE_THRESHOLD)")
	fs.BoolVar(&c.allowYoung, "scan-allow-young", false, "allow an age threshold below 24h; logged and shown on every report (TIDEMARK_SCAN_ALLOW_YOUNG)")
	fs.IntVar(&c.pageSize, "scan-page-size", int(cleanup.DefaultPageSize), "entries per LIST page, for counting and pacing requests (TIDEMARK_SCAN_PAGE_SIZE)")
	fs.Float64Var(&c.listRate, "scan-list-rate", cleanup.DefaultListRate, "LIST requests per second during a walk, so a scan never runs at full speed against live storage; 0 unlimited (TIDEMARK_SCAN_LIST_RATE)")
	fs.Float64Var(&c.headRate, "scan-head-rate", cleanup.DefaultHeadRate, "HEAD requests per second for reference checks, and stat+delete pairs per second when executing; 0 unlimited (TIDEMARK_SCAN_HEAD_RATE)")
	fs.IntVar(&c.headParallel, "scan-head-parallel", int(8), "HEAD requests in flight at once (TIDEMARK_SCAN_HEAD_PARALLEL)")
	fs.IntVar(&c.shardPar, "scan-shard-parallel", cleanup.DefaultShardParallel, "shards of one scan walked at once, sharing --scan-list-rate (TIDEMARK_SCAN_SHARD_PARALLEL)")
	fs.DurationVar(&c.recheck, "scan-recheck-delay", cleanup.DefaultRecheckDelay, "how long a file the reference check found missing gets before its second check (TIDEMARK_SCAN_RECHECK_DELAY)")
	fs.DurationVar(&c.unusedWindow, "unused-window", cleanup.DefaultPolicy.UnusedWindow, "an asset with no reads (under any name) for this long may be proposed for retirement (TIDEMARK_UNUSED_WINDOW)")
	fs.DurationVar(&c.minAge, "unused-min-age", cleanup.DefaultPolicy.MinAssetAge, "only assets at least this old are proposed as unused (TIDEMARK_UNUSED_MIN_AGE)")
	fs.DurationVar(&c.grace, "retire-grace", cleanup.DefaultPolicy.Grace, "between dropping a retired table's metadata and deleting its files (TIDEMARK_RETIRE_GRACE)")
	fs.DurationVar(&c.openFor, "proposal-expiry", cleanup.DefaultPolicy.OpenFor, "an open proposal nobody decided expires after this (TIDEMARK_PROPOSAL_EXPIRY)")
	fs.DurationVar(&c.rejectQuiet, "reject-quiet", cleanup.DefaultPolicy.RejectQuiet, "a rejected proposal is not reopened for this long unless its evidence materially changes (TIDEMARK_REJECT_QUIET)")
	fs.StringVar(&c.window, "maintenance-window", "", "daily UTC window HH:MM-HH:MM for scheduled scans and executions, e.g. 01:00-05:00; empty: any time (TIDEMARK_MAINTENANCE_WINDOW)")
	fs.Float64Var(&c.prices.ListPer1000, "price-list-per-1000", cleanup.DefaultPrices.ListPer1000, "USD per 1,000 LIST requests (TIDEMARK_PRICE_LIST_PER_1000)")
	fs.Float64Var(&c.prices.GetPer1000, "price-get-per-1000", cleanup.DefaultPrices.GetPer1000, "USD per 1,000 GET/HEAD requests (TIDEMARK_PRICE_GET_PER_1000)")
	fs.Float64Var(&c.prices.StorageGBMonth, "price-gb-month", cleanup.DefaultPrices.StorageGBMonth, "USD per GB-month stored (TIDEMARK_PRICE_GB_MONTH)")
}

// check refuses bad values before anything runs.
func (c *cleanupConfig) check() error {
	if c.minGap <= 0 {
		return fmt.Errorf("--confirm-gap %s must be positive: two passes need two moments", c.minGap)
	}
	if c.shardPar < 1 || c.shardPar > 256 {
		return fmt.Errorf("--scan-shard-parallel must be from 1 to 256, not %d", c.shardPar)
	}
	if c.listRate < 0 || c.headRate < 0 {
		return errors.New("--scan-list-rate and --scan-head-rate must not be negative (0 is unlimited)")
	}
	_, err := cleanup.ParseWindow(c.window)
	return err
}

// appOptions are the cleanup service's options from the flags (check them first).
func (c *cleanupConfig) appOptions() []cleanup.Option {
	w, _ := cleanup.ParseWindow(c.window) // checked by check
	return []cleanup.Option{cleanup.WithPrices(c.prices), cleanup.WithPacing(c.pageSize, c.listRate, c.headRate, c.headParallel),
		cleanup.WithShardParallel(c.shardPar), cleanup.WithWindow(w),
		cleanup.WithPolicy(cleanup.Policy{UnusedWindow: c.unusedWindow, MinAssetAge: c.minAge, Grace: c.grace, OpenFor: c.openFor, RejectQuiet: c.rejectQuiet})}
}

func (c *cleanupConfig) options() cleanup.ScanOptions {
	return cleanup.ScanOptions{AgeThreshold: c.age, AllowYoung: c.allowYoung, MinGap: c.minGap}
}

const cleanupHelp = `Usage:
  tidemark cleanup scan [--table ID|NAME] [--shard PREFIX[,PREFIX...]] [--resume SCAN] [--from-inventory] [flags]
      walk table locations shard by shard for orphan files; prints progress on stderr and
      the report at the end
  tidemark cleanup check-refs [--table ID|NAME] [--fresh] [flags]
      check by key every file the retained snapshots and refs reference (dangling
      references); resumes a stopped check where it stopped
  tidemark cleanup propose [flags]
      re-evaluate open proposals (withdraw, expire) and open new ones from scans and usage
  tidemark cleanup execute [--proposal ID] [flags]
      execute approved proposals (and resume interrupted ones), metadata before data
`

func cleanupCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, cleanupHelp)
		return errors.New("cleanup: say scan, check-refs, propose or execute")
	}
	switch args[0] {
	case "scan":
	case "check-refs":
		return cleanupCheckRefs(ctx, args[1:], stdout, stderr)
	case "propose", "execute":
		return cleanupAct(ctx, args[0], args[1:], stdout, stderr)
	default:
		fmt.Fprint(stderr, cleanupHelp)
		return fmt.Errorf("cleanup: unknown subcommand %q", args[0])
	}
	fs := flag.NewFlagSet("cleanup scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newCmdEnv(fs)
	var cc cleanupConfig
	cc.register(fs)
	e.cc = &cc
	tableArg := fs.String("table", "", "the table's asset ID or name (namespace optional when the name is unambiguous); default every known table")
	shards := fs.String("shard", "", "walk only these shards, comma-separated (e.g. metadata/,data/ts_day=2026-11-01/)")
	resume := fs.String("resume", "", "a scan ID of --table: walk only the shards it did not complete")
	confirmOnly := fs.Bool("confirm-only", false, "a confirming pass: walk only the shards whose last walk left files to confirm")
	fromInventory := fs.Bool("from-inventory", false, "an inventory pass of a table Tidemark serves: settle the leftovers its write-path inventory recorded, listing nothing")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	cc.minGap = e.tc.confirmGap
	if err := cc.check(); err != nil {
		return err
	}
	defer e.close()
	if err := e.open(ctx, stderr, false); err != nil {
		return err
	}
	svc := e.app.Cleanup

	ids, err := scanTargets(ctx, e.app, *tableArg)
	if err != nil {
		return err
	}
	opt := cc.options()
	opt.ConfirmOnly, opt.FromInventory = *confirmOnly, *fromInventory
	if *shards != "" {
		opt.Shards = strings.Split(*shards, ",")
	}
	if *resume != "" {
		if *tableArg == "" {
			return errors.New("cleanup scan: --resume needs --table")
		}
		var err error
		if opt.Resume, err = uuid.Parse(*resume); err != nil {
			return fmt.Errorf("cleanup scan: --resume %q is not a scan ID", *resume)
		}
	}
	tty := isTerminal(stderr)
	failed := 0
	for i, id := range ids {
		start := time.Now()
		opt.Progress = func(p cleanup.Progress) {
			line := fmt.Sprintf("[table %d/%d] %s: %d/%d shards, %d entries listed, %.0f entries/s %s", i+1, len(ids), p.Phase,
				p.ShardsDone, p.ShardsTotal, p.Entries, float64(p.Entries)/max(time.Since(start).Seconds(), 0.001), p.Shard)
			if tty {
				fmt.Fprintf(stderr, "\r\033[K%s", line)
			} else if p.Entries%100000 == 0 || p.Phase != "walking" {
				fmt.Fprintln(stderr, line)
			}
		}
		rep, err := svc.Scan(ctx, id, opt)
		if tty {
			fmt.Fprintln(stderr)
		}
		if rep.ScanID == uuid.Nil && err != nil {
			return err // refused before it started (bad options, unknown table)
		}
		if err != nil {
			failed++
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
			continue
		}
		printScan(stdout, rep)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if failed > 0 {
		return fmt.Errorf("cleanup scan: %d of %d scans stopped with an error (see their reports)", failed, len(ids))
	}
	return nil
}

// cleanupAct runs the proposer or the executor once.
func cleanupAct(ctx context.Context, what string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cleanup "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newCmdEnv(fs)
	var cc cleanupConfig
	cc.register(fs)
	e.cc = &cc
	proposalArg := fs.String("proposal", "", "execute: only this proposal")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	cc.minGap = e.tc.confirmGap
	if err := cc.check(); err != nil {
		return err
	}
	defer e.close()
	if err := e.open(ctx, stderr, true); err != nil {
		return err
	}
	svc := e.app.Cleanup
	var result any
	switch what {
	case "propose":
		rep, err := svc.Propose(ctx)
		if err != nil {
			return err
		}
		result = rep
		if !*asJSON {
			fmt.Fprintf(stdout, "proposals: %d opened, %d withdrawn, %d expired, %d still open and unchanged\n", rep.Opened, rep.Withdrawn, rep.Expired, rep.Kept)
		}
	case "execute":
		id := uuid.Nil
		if *proposalArg != "" {
			var err error
			if id, err = uuid.Parse(*proposalArg); err != nil {
				return fmt.Errorf("cleanup execute: --proposal %q is not a proposal ID", *proposalArg)
			}
		}
		rep, err := svc.Execute(ctx, id, func(msg string) { fmt.Fprintln(stderr, msg) })
		if err != nil {
			return err
		}
		result = rep
		if !*asJSON {
			fmt.Fprintf(stdout, "executed %d of %d proposals (%d waiting for their grace period or for their tables to be readable, %d stopped because the world changed since approval, %d failed): %d files deleted (%s), %d skipped after re-verification\n",
				rep.Executed, rep.Proposals, rep.Waiting, rep.Stopped, rep.Failed, rep.Deleted, cleanup.BytesText(rep.Bytes), rep.Skipped)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(result)
	}
	return nil
}

// scanTargets resolves --table (an asset ID or a name, namespace optional when unambiguous),
// or, without it, every known table that is not gone.
func scanTargets(ctx context.Context, a *app.App, tableArg string) ([]uuid.UUID, error) {
	cat, tbls := a.Catalog, a.Tables
	var ids []uuid.UUID
	switch {
	case tableArg == "":
		for after := uuid.Nil; ; {
			ts, more, err := tbls.List(ctx, after, 500)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				if t.GoneAt == nil {
					ids = append(ids, t.AssetID)
				}
				after = t.AssetID
			}
			if !more {
				break
			}
		}
		if len(ids) == 0 {
			return nil, errors.New("cleanup scan: no Iceberg table is known yet; register one or sync a catalog first (tidemark tables)")
		}
	default:
		id, err := uuid.Parse(tableArg)
		if err != nil {
			ns, name := "", tableArg
			if i := strings.LastIndex(tableArg, "/"); i > 0 {
				ns, name = (tableArg)[:i], (tableArg)[i+1:]
			}
			res, rerr := cat.Resolve(ctx, ns, name)
			if rerr != nil {
				return nil, fmt.Errorf("cleanup scan: --table %q: %w", tableArg, rerr)
			}
			id = res.Asset.ID
		}
		ids = []uuid.UUID{id}
	}
	return ids, nil
}

func printScan(w io.Writer, r cleanup.Report) {
	fmt.Fprintf(w, "scan %s of %s (%s): %s\n", r.ScanID, r.AssetID, r.Location, r.State)
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "  %s\n", r.Summary)
	if r.ThresholdOverride {
		fmt.Fprintf(w, "  AGE THRESHOLD OVERRIDE: %s (below the 24h minimum)\n", r.AgeThreshold)
	}
	for _, h := range r.Holes {
		last := "never"
		if h.LastCompleteAt != nil {
			last = h.LastCompleteAt.Format(time.RFC3339)
		}
		fmt.Fprintf(w, "  hole: shard %s %s (last walked to completion: %s)\n", h.Shard, h.Outcome, last)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// cleanupCheckRefs runs the reference check of one table or every known table.
func cleanupCheckRefs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cleanup check-refs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := newCmdEnv(fs)
	var cc cleanupConfig
	cc.register(fs)
	e.cc = &cc
	tableArg := fs.String("table", "", "the table's asset ID or name; default every known table")
	fresh := fs.Bool("fresh", false, "start a new pass instead of resuming a stopped one")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	cc.minGap = e.tc.confirmGap
	if err := cc.check(); err != nil {
		return err
	}
	defer e.close()
	if err := e.open(ctx, stderr, false); err != nil {
		return err
	}
	ids, err := scanTargets(ctx, e.app, *tableArg)
	if err != nil {
		return err
	}
	failed := 0
	for i, id := range ids {
		opt := cleanup.RefCheckOptions{RecheckDelay: cc.recheck, Fresh: *fresh, Progress: func(p cleanup.RefCheckProgress) {
			if p.UnitsDone%100 == 0 || p.Phase != "checking" {
				fmt.Fprintf(stderr, "[table %d/%d] %s: %d/%d units, %d files checked\n", i+1, len(ids), p.Phase, p.UnitsDone, p.UnitsTotal, p.FilesChecked)
			}
		}}
		rep, err := e.app.Cleanup.CheckRefs(ctx, id, opt)
		if rep.CheckID == uuid.Nil && err != nil {
			return err // refused before it started (unknown table, another worker on it)
		}
		if err != nil {
			failed++
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			printRefCheck(stdout, rep)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if failed > 0 {
		return fmt.Errorf("cleanup check-refs: %d of %d checks stopped with an error (see their reports)", failed, len(ids))
	}
	return nil
}

func printRefCheck(w io.Writer, r cleanup.RefCheckReport) {
	fmt.Fprintf(w, "reference check %s of %s: %s\n", r.CheckID, r.AssetID, r.State)
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	fmt.Fprintf(w, "  %s\n", r.Summary)
	for _, d := range r.Dangling {
		fmt.Fprintf(w, "  dangling: %s (%s, snapshot %d, refs %v)\n", d.Path, d.Content, d.SnapshotID, d.Refs)
	}
}
