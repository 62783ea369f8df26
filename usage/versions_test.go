package usage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/usage"
)

// TestRecordVersion: a record's version is stored with it; one longer than 256 bytes, or not
// UTF-8, is refused and stores nothing.
func TestRecordVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "orders")
		at := t0.Add(-time.Hour)
		res, err := e.use.Record(ctx, []usage.Record{
			{AssetID: a.ID, Kind: "read", At: at, IdempotencyKey: "k1", Source: "iceberg-rest", Version: "6983201927462530943"},
			{AssetID: a.ID, Kind: "read", At: at, IdempotencyKey: "k2", Version: strings.Repeat("v", usage.MaxVersionBytes+1)},
			{AssetID: a.ID, Kind: "read", At: at, IdempotencyKey: "k3", Version: "\xff"},
			{AssetID: a.ID, Kind: "write", At: at, IdempotencyKey: "k4"},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{usage.StatusAccepted, usage.StatusRefused, usage.StatusRefused, usage.StatusAccepted}
		for i, r := range res {
			if r.Status != want[i] {
				t.Fatalf("record %d: %s (%s); want %s", i, r.Status, r.Reason, want[i])
			}
		}
		evs, err := e.db.Client.UsageEvent.Query().Where(usageevent.AssetID(a.ID)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, ev := range evs {
			got[string(ev.Kind)] = ev.Version
		}
		if len(evs) != 2 || got["read"] != "6983201927462530943" || got["write"] != "" {
			t.Fatalf("stored %d events, versions %v; want the read's version and none on the write", len(evs), got)
		}
	})
}

// TestRunsCarryVersions: a completed OpenLineage run's usage (through app.UsageOfRuns) carries
// the version the event states for each input (the Iceberg scan report's snapshot, exactly) and
// output (the version facet), and none where it states none.
func TestRunsCarryVersions(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		e.clock.Set(time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC))
		lin, err := lineage.New(e.db, e.cat, lineage.WithClock(e.clock.Now), lineage.WithCompletedRuns(app.UsageOfRuns(e.use)))
		if err != nil {
			t.Fatal(err)
		}
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ev := `{"eventType":"COMPLETE","eventTime":"2024-06-01T11:00:00Z","run":{"runId":"0190a0a0-0000-7000-8000-000000000001"},
			"job":{"namespace":"etl","name":"daily"},
			"inputs":[{"namespace":"w","name":"src","inputFacets":{"icebergScanReport":{"_producer":"p","_schemaURL":"s","snapshotId":9007199254740993}}},
				{"namespace":"w","name":"plain"}],
			"outputs":[{"namespace":"w","name":"dst","facets":{"version":{"_producer":"p","_schemaURL":"s","datasetVersion":"v42"}}}]}`
		if _, err := lin.Ingest(ctx, []byte(ev)); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"src": "9007199254740993", "plain": "", "dst": "v42"} {
			res, err := e.cat.Resolve(ctx, "w", name)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := e.db.Client.UsageEvent.Query().Where(usageevent.AssetID(res.Asset.ID)).All(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 1 || evs[0].Version != want || evs[0].Source != "openlineage" {
				t.Fatalf("%s: %d events %+v; want one with version %q", name, len(evs), evs, want)
			}
		}
	})
}
