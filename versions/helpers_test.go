package versions_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// t0 is the fixtures' epoch: every time in them is an offset from it.
var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// clock is a settable clock for the catalog, so renames happen at known times.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// fixture is a versions service over a fresh database, with helpers that write the rows the
// questions read: assets through the catalog, everything else through ent directly (the
// resolver that fills run_versions is not the subject here).
type fixture struct {
	t     *testing.T
	ctx   context.Context
	db    *storage.DB
	cat   *catalog.Catalog
	svc   *versions.Service
	clock *clock
	seq   int
}

// eachBackend runs fn on SQLite and PostgreSQL, each with a fresh database. A test that calls
// it more than once names each case (caseOn): a repeated subtest name gets a "#01" suffix,
// which an SQLite file: DSN would read as a URI fragment.
func eachBackend(t *testing.T, fn func(t *testing.T, f *fixture), opts ...versions.Option) {
	t.Helper()
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) { fn(t, newFixture(t, db, opts...)) })
}

// caseOn is eachBackend under a named subtest.
func caseOn(t *testing.T, name string, fn func(t *testing.T, f *fixture), opts ...versions.Option) {
	t.Helper()
	t.Run(name, func(t *testing.T) { eachBackend(t, fn, opts...) })
}

func newFixture(t *testing.T, db *storage.DB, opts ...versions.Option) *fixture {
	t.Helper()
	clk := &clock{now: t0}
	cat, err := catalog.New(db, catalog.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := versions.New(db, cat, append([]versions.Option{versions.WithClock(clk.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: context.Background(), db: db, cat: cat, svc: svc, clock: clk}
}

// asset creates an asset (a table, or a job) with owners.
func (f *fixture) asset(kind catalog.Kind, namespace, name string, owners ...string) uuid.UUID {
	f.t.Helper()
	in := catalog.CreateInput{Kind: kind, Namespace: namespace, Name: name}
	for _, o := range owners {
		in.Owners = append(in.Owners, catalog.OwnerInput{Principal: o})
	}
	res, err := f.cat.Create(f.ctx, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Asset.ID
}

func (f *fixture) rename(id uuid.UUID, when time.Time, namespace, name string) {
	f.t.Helper()
	a, err := f.cat.Get(f.ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	prev := f.clock.Now()
	f.clock.Set(when)
	defer f.clock.Set(prev)
	if _, err := f.cat.Rename(f.ctx, id, a.Version, namespace, name); err != nil {
		f.t.Fatal(err)
	}
}

// version records a version committed at when (zero: nothing dated it).
func (f *fixture) version(assetID uuid.UUID, version string, when time.Time) {
	f.t.Helper()
	q := f.db.Client.DatasetVersion.Create().SetAssetID(assetID).SetVersion(version).SetSource(versions.SourceSync).
		SetSeenInTable(true).SetFirstSeen(t0).SetOperation("append").SetSummary(`{"added-records":"10"}`).SetPrincipal("loader")
	if n, err := strconv.ParseInt(version, 10, 64); err == nil {
		q.SetSnapshotID(n)
	}
	if !when.IsZero() {
		q.SetCommittedAt(when)
	}
	if _, err := q.Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// run records a run of a job.
func (f *fixture) run(id string, job uuid.UUID, start, end time.Time) {
	f.t.Helper()
	if _, err := f.db.Client.Run.Create().SetID(id).SetJobAssetID(job).SetState(run.StateCOMPLETE).SetStateTime(end).
		SetStartedAt(start).SetEndedAt(end).SetCreatedAt(start).SetUpdatedAt(end).Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// io records that a run read or wrote an asset, with no version edge (not resolved yet).
func (f *fixture) io(runID string, assetID uuid.UUID, role string, when time.Time) {
	f.t.Helper()
	if _, err := f.db.Client.RunIO.Create().SetRunID(runID).SetAssetID(assetID).SetRole(runio.Role(role)).SetFirstSeen(when).Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

type edgeOpt func(*edgeSpec)

type edgeSpec struct{ flagged bool }

func flagged(e *edgeSpec) { e.flagged = true }

// edge records a run's input or output and its version edge (version "" with label unknown).
func (f *fixture) edge(runID string, assetID uuid.UUID, role, version, label string, when time.Time, opts ...edgeOpt) {
	f.t.Helper()
	var spec edgeSpec
	for _, o := range opts {
		o(&spec)
	}
	f.io(runID, assetID, role, when)
	if _, err := f.db.Client.RunVersion.Create().SetRunID(runID).SetAssetID(assetID).SetRole(runversion.Role(role)).
		SetVersion(version).SetKind(runversion.Kind(label)).SetBasis("test: " + label).SetFlagged(spec.flagged).
		SetAt(when).SetUpdatedAt(when).Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// read records a usage read of an asset (version "" when the source did not say).
func (f *fixture) read(assetID uuid.UUID, version, actor string, when time.Time) {
	f.t.Helper()
	f.seq++
	if _, err := f.db.Client.UsageEvent.Create().SetEventKey(fmt.Sprintf("test:%d", f.seq)).SetAssetID(assetID).
		SetKind(usageevent.KindRead).SetActor(actor).SetSource("test").SetAt(when).SetDay(when.Format(time.DateOnly)).
		SetReceivedAt(when).SetVersion(version).Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// iceberg binds an Iceberg table to an asset with its current snapshot.
func (f *fixture) iceberg(assetID uuid.UUID, current int64) {
	f.t.Helper()
	if _, err := f.db.Client.IcebergTable.Create().SetID(assetID).SetTableUUID(uuid.NewString()).SetLocation("file:///tmp/" + assetID.String()).
		SetMetadataLocation("file:///tmp/" + assetID.String() + "/metadata/v1.metadata.json").SetCurrentSnapshotID(current).
		SetCreatedAt(t0).SetUpdatedAt(t0).Save(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// chain is the three-layer story: raw.orders -> build_daily -> mart.orders_daily ->
// build_report -> mart.revenue, with a bad append a2 to raw.orders, both jobs run on it, the
// fix a3 and a rerun of build_daily only. mart.orders_daily (an Iceberg table, current snapshot
// its rebuilt version) was called mart.daily_orders until 3h.
type chain struct {
	raw, daily, revenue     uuid.UUID
	buildDaily, buildReport uuid.UUID
}

// Versions of the chain.
const (
	a1, a2, a3    = "1001", "1002", "1003"
	od1, od2, od3 = "2001", "2002", "2003"
	rv1           = "rev-1"
)

const h = time.Hour

// chainVariant changes the rerun of build_daily.
type chainVariant int

const (
	rerunKnown   chainVariant = iota // the rerun read a3, inferred
	rerunUnknown                     // which raw.orders version the rerun read is unknown
)

func (f *fixture) chain(variant chainVariant) chain {
	f.t.Helper()
	c := chain{
		raw:         f.asset(catalog.KindTable, "raw", "orders", "ingest-team"),
		daily:       f.asset(catalog.KindTable, "mart", "daily_orders", "alice"),
		revenue:     f.asset(catalog.KindTable, "mart", "revenue", "bob", "carol"),
		buildDaily:  f.asset(catalog.KindJob, "airflow", "build_daily"),
		buildReport: f.asset(catalog.KindJob, "airflow", "build_report"),
	}
	f.version(c.raw, a1, at(1*h))
	f.version(c.raw, a2, at(2*h)) // the bad append
	f.version(c.raw, a3, at(5*h)) // the fix

	f.run("r1", c.buildDaily, at(1*h+10*time.Minute), at(1*h+20*time.Minute))
	f.edge("r1", c.raw, versions.Input, a1, versions.Stated, at(1*h+10*time.Minute))
	f.edge("r1", c.daily, versions.Output, od1, versions.Stated, at(1*h+20*time.Minute))
	f.version(c.daily, od1, at(1*h+20*time.Minute))

	f.run("r2", c.buildDaily, at(2*h+10*time.Minute), at(2*h+20*time.Minute))
	f.edge("r2", c.raw, versions.Input, a2, versions.Reported, at(2*h+10*time.Minute))
	f.edge("r2", c.daily, versions.Output, od2, versions.Inferred, at(2*h+20*time.Minute))
	f.version(c.daily, od2, at(2*h+20*time.Minute))

	f.rename(c.daily, at(3*h), "mart", "orders_daily")

	f.run("r3", c.buildReport, at(3*h+10*time.Minute), at(3*h+20*time.Minute))
	f.edge("r3", c.daily, versions.Input, od2, versions.Stated, at(3*h+10*time.Minute))
	f.edge("r3", c.revenue, versions.Output, rv1, versions.Stated, at(3*h+20*time.Minute))
	f.version(c.revenue, rv1, at(3*h+20*time.Minute))

	f.run("r4", c.buildDaily, at(5*h+10*time.Minute), at(5*h+20*time.Minute))
	switch variant {
	case rerunKnown:
		f.edge("r4", c.raw, versions.Input, a3, versions.Inferred, at(5*h+10*time.Minute))
	case rerunUnknown:
		f.edge("r4", c.raw, versions.Input, "", versions.Unknown, at(5*h+10*time.Minute))
	}
	f.edge("r4", c.daily, versions.Output, od3, versions.Reported, at(5*h+20*time.Minute))
	f.version(c.daily, od3, at(5*h+20*time.Minute))
	f.iceberg(c.daily, 2003)
	return c
}
