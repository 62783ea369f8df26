package versions_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// resolveEnv is a store with the catalog, lineage and versions over it, on a clock the test moves.
type resolveEnv struct {
	db  *storage.DB
	cat *catalog.Catalog
	lin *lineage.Service
	ver *versions.Service
	mu  sync.Mutex
	now time.Time
}

func newResolveEnv(t *testing.T, db *storage.DB) *resolveEnv {
	t.Helper()
	// The clock stands a day after the runs the tests post, so no event is ahead of it.
	e := &resolveEnv{db: db, now: resolveBase.Add(24 * time.Hour)}
	clock := func() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now }
	var err error
	if e.cat, err = catalog.New(db, catalog.WithClock(clock)); err != nil {
		t.Fatal(err)
	}
	if e.lin, err = lineage.New(db, e.cat, lineage.WithClock(clock)); err != nil {
		t.Fatal(err)
	}
	if e.ver, err = versions.New(db, e.cat, versions.WithClock(clock), versions.WithResolver(time.Second, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	return e
}

var resolveBase = time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)

func (e *resolveEnv) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

// post ingests a run event: inputs and outputs are "ns/name" with an optional "@facet=value"
// stating a version (facet is scan, commit or version).
func (e *resolveEnv) post(t *testing.T, runID, job, typ string, at time.Time, inputs, outputs []string) {
	t.Helper()
	ds := func(list []string, ioFacets string) string {
		var parts []string
		for _, d := range list {
			name, stated, _ := strings.Cut(d, "@")
			ns, n, _ := strings.Cut(name, "/")
			facets, io := "", ""
			if stated != "" {
				kind, v, _ := strings.Cut(stated, "=")
				switch kind {
				case "scan":
					io = fmt.Sprintf(`,"inputFacets":{"icebergScanReport":{"snapshotId":%s}}`, v)
				case "commit":
					io = fmt.Sprintf(`,"outputFacets":{"icebergCommitReport":{"snapshotId":%s}}`, v)
				case "version":
					facets = fmt.Sprintf(`,"facets":{"version":{"datasetVersion":%q}}`, v)
				}
			}
			parts = append(parts, fmt.Sprintf(`{"namespace":%q,"name":%q%s%s}`, ns, n, facets, io))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	ev := fmt.Sprintf(`{"eventType":%q,"eventTime":%q,"producer":"https://example.com/test","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
		"run":{"runId":%q},"job":{"namespace":"jobs","name":%q},"inputs":%s,"outputs":%s}`,
		typ, at.Format(time.RFC3339Nano), runID, job, ds(inputs, "input"), ds(outputs, "output"))
	if _, err := e.lin.Ingest(context.Background(), []byte(ev)); err != nil {
		t.Fatalf("ingest %s %s: %v", runID, typ, err)
	}
}

func (e *resolveEnv) asset(t *testing.T, ns, name string) uuid.UUID {
	t.Helper()
	ref, ok, err := e.cat.Lookup(context.Background(), catalog.SpaceDataset, ns, name)
	if err != nil || !ok {
		t.Fatalf("no asset %s/%s: %v", ns, name, err)
	}
	return ref.ID
}

// makeTable registers an Iceberg table row for the asset, so stated versions are checked
// against what the table showed.
func (e *resolveEnv) makeTable(t *testing.T, id uuid.UUID) {
	t.Helper()
	now := e.now
	if err := e.db.Client.IcebergTable.Create().SetID(id).SetTableUUID(uuid.NewString()).SetLocation("file:///t/" + id.String()).
		SetMetadataLocation("file:///t/m.json").SetCreatedAt(now).SetUpdatedAt(now).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (e *resolveEnv) commit(t *testing.T, asset uuid.UUID, snap int64, at time.Time, principal string, summary map[string]string) {
	t.Helper()
	if err := e.ver.Record(context.Background(), []versions.Observed{{AssetID: asset, SnapshotID: &snap, CommittedAt: at,
		Source: versions.SourceCommit, Principal: principal, Operation: "append", Summary: summary}}); err != nil {
		t.Fatal(err)
	}
}

// resolve runs the resolver once the lag has passed.
func (e *resolveEnv) resolve(t *testing.T) {
	t.Helper()
	e.advance(11 * time.Second)
	if _, err := e.ver.Resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type edgeWant struct {
	version, kind string
	flagged       bool
}

func (e *resolveEnv) edge(t *testing.T, runID string, asset uuid.UUID, role string) *ent.RunVersion {
	t.Helper()
	rv, err := e.db.Client.RunVersion.Query().Where(runversion.RunID(runID), runversion.AssetID(asset),
		runversion.RoleEQ(runversion.Role(role))).Only(context.Background())
	if err != nil {
		t.Fatalf("edge %s %s %s: %v", runID, asset, role, err)
	}
	return rv
}

func (e *resolveEnv) expect(t *testing.T, runID string, asset uuid.UUID, role string, want edgeWant) {
	t.Helper()
	rv := e.edge(t, runID, asset, role)
	if rv.Version != want.version || string(rv.Kind) != want.kind || rv.Flagged != want.flagged {
		t.Fatalf("run %s %s: got %q %s flagged=%v (%s), want %q %s flagged=%v", runID, role, rv.Version, rv.Kind, rv.Flagged, rv.Basis,
			want.version, want.kind, want.flagged)
	}
}

// TestResolveLabels: each rule of the labels on one store: stated facets, inference from the
// timeline, an exact join through a commit's summary, ambiguity left unknown, a late event that
// states a version replacing an inferred edge, and a stated version the table never had kept
// and flagged until the table shows it.
func TestResolveLabels(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newResolveEnv(t, db)
		t0 := resolveBase
		// A first run creates the assets: raw/orders -> job build -> mart/daily.
		e.post(t, "11111111-1111-4111-8111-111111111111", "build", "START", t0, []string{"raw/orders"}, []string{"mart/daily"})
		orders, daily := e.asset(t, "raw", "orders"), e.asset(t, "mart", "daily")
		e.makeTable(t, orders)
		e.makeTable(t, daily)
		e.commit(t, orders, 100, t0.Add(-time.Hour), "token:loader", nil)
		e.commit(t, orders, 101, t0.Add(-30*time.Minute), "token:loader", nil)
		e.commit(t, daily, 500, t0.Add(5*time.Minute), "token:spark", nil)
		e.post(t, "11111111-1111-4111-8111-111111111111", "build", "COMPLETE", t0.Add(10*time.Minute), []string{"raw/orders"}, []string{"mart/daily"})
		e.resolve(t)
		run1 := "11111111-1111-4111-8111-111111111111"
		e.expect(t, run1, orders, "input", edgeWant{"101", versions.Inferred, false})
		e.expect(t, run1, daily, "output", edgeWant{"500", versions.Inferred, false})

		// Stated on both sides; the input's snapshot is one the table never had: kept, flagged.
		run2 := "22222222-2222-4222-8222-222222222222"
		t1 := t0.Add(time.Hour)
		e.commit(t, daily, 501, t1.Add(time.Minute), "token:spark", nil)
		e.post(t, run2, "build", "COMPLETE", t1.Add(2*time.Minute), []string{"raw/orders@scan=999"}, []string{"mart/daily@commit=501"})
		e.resolve(t)
		e.expect(t, run2, orders, "input", edgeWant{"999", versions.Stated, true})
		e.expect(t, run2, daily, "output", edgeWant{"501", versions.Stated, false})
		// The table shows 999 later (a sync that lagged): the flag clears, the edge stays stated.
		e.commit(t, orders, 999, t1.Add(-time.Minute), "token:loader", nil)
		e.expect(t, run2, orders, "input", edgeWant{"999", versions.Stated, false})

		// Two commits in the window and no principal to tell them apart: unknown, never guessed.
		run3 := "33333333-3333-4333-8333-333333333333"
		t2 := t0.Add(2 * time.Hour)
		e.post(t, run3, "build", "START", t2, []string{"raw/orders"}, []string{"mart/daily"})
		e.commit(t, daily, 502, t2.Add(time.Minute), "token:a", nil)
		e.commit(t, daily, 503, t2.Add(2*time.Minute), "token:b", nil)
		e.post(t, run3, "build", "COMPLETE", t2.Add(3*time.Minute), []string{"raw/orders"}, []string{"mart/daily"})
		e.resolve(t)
		e.expect(t, run3, daily, "output", edgeWant{"", versions.Unknown, false})
		e.expect(t, run3, orders, "input", edgeWant{"999", versions.Inferred, false})
		// A commit whose summary names the run joins it exactly, and a late event that states
		// the input replaces the inferred edge.
		e.commit(t, daily, 504, t2.Add(150*time.Second), "token:c", map[string]string{versions.RunIDProperty: run3})
		e.post(t, run3, "build", "OTHER", t2.Add(4*time.Minute), []string{"raw/orders@version=101"}, nil)
		e.resolve(t)
		e.expect(t, run3, daily, "output", edgeWant{"504", versions.Reported, false})
		e.expect(t, run3, orders, "input", edgeWant{"101", versions.Stated, false})

		// An input with no version before the run's start is unknown.
		run4 := "44444444-4444-4444-8444-444444444444"
		e.post(t, run4, "other", "COMPLETE", t0.Add(-2*time.Hour), []string{"raw/orders"}, nil)
		e.resolve(t)
		e.expect(t, run4, orders, "input", edgeWant{"", versions.Unknown, false})

		// A non-numeric snapshotId is accepted and kept as the stated text, flagged.
		run5 := "55555555-5555-4555-8555-555555555555"
		e.post(t, run5, "other", "COMPLETE", t2, []string{`raw/orders@scan="latest"`}, nil)
		e.resolve(t)
		e.expect(t, run5, orders, "input", edgeWant{"latest", versions.Stated, true})

		// A dataset that is no table: its stated version is its timeline.
		run6 := "66666666-6666-4666-8666-666666666666"
		e.post(t, run6, "export", "COMPLETE", t2, nil, []string{"s3/export@version=v7"})
		e.resolve(t)
		export := e.asset(t, "s3", "export")
		e.expect(t, run6, export, "output", edgeWant{"v7", versions.Stated, false})
		n, err := db.Client.DatasetVersion.Query().Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// 100, 101, 999 of orders; 500-504 of daily; v7 of export.
		if n != 9 {
			t.Fatalf("%d versions recorded, want 9", n)
		}
	})
}
