package demo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/usage"
)

// The demo's version story: a bad append and what it poisoned.
//
// db.payments is appended three times: a good load, a bad one (every amount negated) and the
// fix. build_payments_daily reads it and writes db.payments_daily; build_finance_report reads
// that and writes db.finance_report. Both jobs run after the bad load; after the fix only
// build_payments_daily runs again. So the bad snapshot's blast radius shows payments_daily
// recovered and finance_report still affected, with build_finance_report the run to repeat.
// The runs say what they read and wrote as Spark's integration does (a version facet, the
// Iceberg scan and commit reports), or say nothing and leave it to inference; an analyst reads
// the poisoned report and an auditor reads the bad snapshot by time travel after the fix.
//
// It happens now, in real commits: Iceberg dates a snapshot when it commits, so the story's
// times are seconds apart.

// storyTables are the story's tables, with their owners.
var storyTables = []struct{ name, owner string }{
	{"payments", "team-payments"}, {"payments_daily", "team-finance"}, {"finance_report", "team-finance"},
}

func (b *builder) versionStory() error {
	ctx := b.ctx
	if err := b.storyTables(); err != nil {
		return err
	}
	appendTo := func(name string, rows int, sign float64) (string, error) {
		t, err := b.tbls[name].Append(ctx, signedRecords(b.tbls[name], rows, b.now.Add(-time.Duration(rows)*time.Minute), time.Minute, sign), nil)
		if err != nil {
			return "", fmt.Errorf("demo: append to %s: %w", name, err)
		}
		b.tbls[name] = t
		return strconv.FormatInt(t.CurrentSnapshot().SnapshotID, 10), nil
	}
	// run posts a run's START, does its commit, and posts its COMPLETE: the commit lies inside
	// the run's window, as a real run's would. in and out say what the events state.
	var runs []string
	run := func(job, output string, in, out func(v string) string) (string, error) {
		id := uuid.NewString()
		runs = append(runs, id)
		// Snapshots are dated to the millisecond: the window starts on one, a little before.
		time.Sleep(3 * time.Millisecond)
		start := time.Now().UTC().Truncate(time.Millisecond).Add(-time.Millisecond)
		if err := b.event(id, "START", job, start, in(""), ""); err != nil {
			return "", err
		}
		v, err := appendTo(output, 40, 1)
		if err != nil {
			return "", err
		}
		time.Sleep(2 * time.Millisecond)
		if err := b.event(id, "COMPLETE", job, time.Now().UTC(), in(""), out(v)); err != nil {
			return "", err
		}
		return v, nil
	}
	dataset := func(name string) func(facets string) string {
		return func(facets string) string {
			if facets != "" {
				facets = "," + facets
			}
			return fmt.Sprintf(`{"namespace":"iceberg://lake","name":"db.%s"%s}`, name, facets)
		}
	}
	payments, daily, report := dataset("payments"), dataset("payments_daily"), dataset("finance_report")
	versionFacet := func(v string) string {
		return fmt.Sprintf(`"facets":{"version":{"_producer":"demo","_schemaURL":"demo","datasetVersion":%q}}`, v)
	}
	none := func(d func(string) string) func(string) string { return func(string) string { return d("") } }

	p1, err := appendTo("payments", 120, 1)
	if err != nil {
		return err
	}
	// The first run states both versions in the version facet.
	if _, err := run("build_payments_daily", "payments_daily",
		func(string) string { return payments(versionFacet(p1)) }, func(v string) string { return daily(versionFacet(v)) }); err != nil {
		return err
	}
	time.Sleep(3 * time.Millisecond)
	p2, err := appendTo("payments", 120, -1) // the bad load
	if err != nil {
		return err
	}
	// The run after it states nothing: its input is inferred (p2 was current when it started),
	// its output too (the only snapshot committed while it ran).
	d2, err := run("build_payments_daily", "payments_daily", none(payments), none(daily))
	if err != nil {
		return err
	}
	// The report's run sends Iceberg's scan and commit reports.
	if _, err := run("build_finance_report", "finance_report",
		func(string) string {
			return daily(fmt.Sprintf(`"inputFacets":{"icebergScanReport":{"_producer":"demo","_schemaURL":"demo","snapshotId":%s,"filterDescription":"true"}}`, d2))
		},
		func(v string) string {
			return report(fmt.Sprintf(`"outputFacets":{"icebergCommitReport":{"_producer":"demo","_schemaURL":"demo","snapshotId":%s,"operation":"append"}}`, v))
		}); err != nil {
		return err
	}
	time.Sleep(3 * time.Millisecond)
	if _, err := appendTo("payments", 120, 1); err != nil { // the fix
		return err
	}
	// Only build_payments_daily runs again; its input is inferred (the fix was current).
	if _, err := run("build_payments_daily", "payments_daily", none(payments), func(v string) string { return daily(versionFacet(v)) }); err != nil {
		return err
	}

	return b.storyPinned(runs, p2)
}

// storyTables creates the story's tables, has the catalog learn of them first (so the runs'
// datasets resolve to them), and gives them owners and db.payments its description.
func (b *builder) storyTables() error {
	ctx := b.ctx
	for _, t := range storyTables {
		tbl, err := b.lake.CreateTable(ctx, table.Identifier{"db", t.name}, demoSchema)
		if err != nil {
			return fmt.Errorf("demo: create %s: %w", t.name, err)
		}
		b.tbls[t.name] = tbl
	}
	// The catalog learns of the tables first, so the runs' datasets resolve to them.
	if _, err := b.live.Sync(ctx, nil); err != nil {
		return err
	}
	for _, t := range storyTables {
		ref, ok, err := b.cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://lake", "db."+t.name)
		if err != nil || !ok {
			return fmt.Errorf("demo: table %s not synced: %v", t.name, err)
		}
		b.ids[t.name] = ref.ID
		if _, err := b.cat.SetOwner(ctx, ref.ID, catalog.AnyVersion, catalog.OwnerInput{Principal: t.owner, Role: "owner"}); err != nil {
			return err
		}
	}
	if _, err := b.cat.Update(ctx, b.ids["payments"], catalog.AnyVersion, catalog.UpdateInput{Description: ptr(
		"Payments as the processor reports them, appended by the hourly load. The second load of the demo negated every amount: open its version to see what it poisoned.")}); err != nil {
		return err
	}
	return nil
}

// storyPinned records the story's new snapshots, pins its runs to them (as serve's resolver
// would within seconds) and adds the reads of the report and a time-travel read of the bad load.
func (b *builder) storyPinned(runs []string, bad string) error {
	ctx := b.ctx
	if _, err := b.live.Sync(ctx, nil); err != nil {
		return err
	}
	if err := b.vers.ResolveRuns(ctx, runs); err != nil {
		return err
	}
	reportNow := strconv.FormatInt(b.tbls["finance_report"].CurrentSnapshot().SnapshotID, 10)
	now := time.Now().UTC()
	_, err := b.use.Record(ctx, []usage.Record{
		{Namespace: "iceberg://lake", Name: "db.finance_report", Kind: "read", Actor: "cfo-dashboard", At: now, QueryID: "demo-report-1", Source: "trino", Version: reportNow},
		{Namespace: "iceberg://lake", Name: "db.finance_report", Kind: "read", Actor: "analyst", At: now, QueryID: "demo-report-2", Source: "trino", Version: reportNow},
		{Namespace: "iceberg://lake", Name: "db.payments", Kind: "read", Actor: "auditor", At: now, QueryID: "demo-payments-tt", Source: "trino", Version: bad},
	})
	b.log.Info("demo: the bad load of db.payments", "snapshot", bad, "page", "/assets/"+b.ids["payments"].String()+"/versions/"+bad)
	return err
}

// event posts one OpenLineage event of a run of a job in namespace spark.
func (b *builder) event(runID, typ, job string, at time.Time, input, output string) error {
	ev := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"run":{"runId":%q},"job":{"namespace":"spark","name":%q},"inputs":[%s],"outputs":[%s],"producer":"https://github.com/tidemark/tidemark/demo","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		typ, at.Format(time.RFC3339Nano), runID, job, input, output)
	if _, err := b.lin.Ingest(b.ctx, []byte(ev)); err != nil {
		return fmt.Errorf("demo: ingest %s of %s: %w", strings.ToLower(typ), job, err)
	}
	return nil
}
