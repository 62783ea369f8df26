package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestDuplicationNamesTheWritersAndTheOwner: a window with duplicated keys on the new side names
// the runs lineage saw write the new asset in that window (the one before it is not named), and
// the new finding reaches the migration owner's webhook through the outbox.
func TestDuplicationNamesTheWritersAndTheOwner(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon.AddDate(0, 0, 3)}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		lin := mustLineage(t, db, cat, lineage.WithClock(c.Now))
		// Two loads of the new table: Monday's and Tuesday's.
		for i, at := range []time.Time{mon.Add(3 * time.Hour), mon.Add(27 * time.Hour)} {
			ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"producer":"https://example.com/test",
				"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
				"run":{"runId":"0190b6e2-7a4c-7d3e-9f1a-00000000000%d"},"job":{"namespace":"etl","name":"load_orders"},
				"inputs":[],"outputs":[{"namespace":"s3://lake","name":"sales/orders"}]}`, at.Format(time.RFC3339), i+1)
			_, err := lin.Ingest(ctx, []byte(ev))
			must(t, err)
		}
		nw, err := cat.Resolve(ctx, "s3://lake", "sales/orders")
		must(t, err)
		old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: "orders"})
		must(t, err)
		svc := mustReconcile(t, db, cat, nil, nil, reconcile.WithClock(c.Now), reconcile.WithWriters(app.LineageWriters(lin)))
		m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "team-orders", Spec: reconcile.Spec{
			KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: mon,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 3, MinDays: 7},
			Old: reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}})
		must(t, err)

		var mu sync.Mutex
		var got []reconcile.FindingNotification
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var n reconcile.FindingNotification
			if err := json.Unmarshal(b, &n); err == nil {
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
			}
		}))
		t.Cleanup(hook.Close)
		notes, err := notify.New(db, cat, notify.WithClock(c.Now), notify.WithPrivateWebhooks(true)) // the receiver listens on loopback
		must(t, err)
		must(t, notes.SetWebhook(ctx, "team-orders", hook.URL))

		fig := func(rows, keys, dups int64) reconcile.SideFigures {
			return reconcile.SideFigures{Rows: rows, Keys: keys, DuplicateKeys: dups, Checksum: "a"}
		}
		r, err := svc.PostRun(ctx, m.ID, []reconcile.WindowFigures{
			{Start: mon, Old: fig(10, 10, 0), New: fig(10, 10, 0)},
			{Start: mon.AddDate(0, 0, 1), Old: fig(10, 10, 0), New: fig(12, 10, 2)}})
		must(t, err)
		if r.Clean {
			t.Fatal("a run with duplicated keys is clean")
		}
		ws, _, err := svc.Windows(ctx, m.ID, r.ID, reconcile.WindowQuery{Limit: 10})
		must(t, err)
		if len(ws) != 2 || len(ws[0].Writers) != 0 || len(ws[1].Writers) != 1 || ws[1].Writers[0].RunID != "0190b6e2-7a4c-7d3e-9f1a-000000000002" {
			t.Fatalf("writers: Monday %+v, Tuesday %+v; want Tuesday's load only, on Tuesday", ws[0].Writers, ws[1].Writers)
		}
		if delivered, failed, err := notes.Dispatch(ctx); err != nil || delivered != 1 || failed != 0 {
			t.Fatalf("dispatch: %d delivered, %d failed, %v; want the finding's notification", delivered, failed, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 1 || got[0].Event != "finding.opened" || got[0].Recipient != "team-orders" || got[0].Finding.Kind != "duplication" ||
			got[0].Finding.MigrationID != m.ID || !got[0].Finding.WindowStart.Equal(mon.AddDate(0, 0, 1)) || got[0].Finding.OpenedRunID != r.ID {
			t.Fatalf("notifications %+v", got)
		}
	})
}

// TestDeploysFromOpenLineage: the new asset's writer job states its version in its events
// (sourceCodeLocation); the first version seen is a baseline, the same version again nothing, a
// new one a deploy the streak counts, and a late event of an older run is not a deploy back.
func TestDeploysFromOpenLineage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon.AddDate(0, 0, 5)}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		var svc *reconcile.Service
		lin := mustLineage(t, db, cat, lineage.WithClock(c.Now), lineage.WithCompletedRuns(func(ctx context.Context, runs []lineage.CompletedRun) error {
			return app.MigrationWriters(svc)(ctx, runs)
		}))
		svc = mustReconcile(t, db, cat, nil, nil, reconcile.WithClock(c.Now))
		n := 0
		load := func(at time.Time, version string) {
			t.Helper()
			n++
			ev := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"producer":"https://example.com/test",
				"schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
				"run":{"runId":"0190b6e2-7a4c-7d3e-9f1a-%012d"},
				"job":{"namespace":"etl","name":"load_orders","facets":{"sourceCodeLocation":{"_producer":"https://example.com/test",
					"_schemaURL":"https://openlineage.io/spec/facets/1-0-0/SourceCodeLocationJobFacet.json","type":"git","url":"https://example.com/etl.git","version":%q}}},
				"inputs":[],"outputs":[{"namespace":"s3://lake","name":"sales/orders"}]}`, at.Format(time.RFC3339), n, version)
			_, err := lin.Ingest(ctx, []byte(ev))
			must(t, err)
		}
		load(mon.Add(time.Hour), "1.0") // before the migration exists: nothing to record
		nw, err := cat.Resolve(ctx, "s3://lake", "sales/orders")
		must(t, err)
		old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: "orders"})
		must(t, err)
		m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: reconcile.Spec{
			KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: mon,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 3, MinDays: 7, IncludeDeploy: true},
			Old: reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}})
		must(t, err)
		load(mon.Add(25*time.Hour), "1.0") // the baseline
		load(mon.Add(49*time.Hour), "1.0") // the same version
		load(mon.Add(73*time.Hour), "1.1") // a deploy
		load(mon.Add(50*time.Hour), "0.9") // a late event of an older run
		evs, err := svc.Events(ctx, m.ID, 10)
		must(t, err)
		var kinds []string
		for _, e := range evs {
			kinds = append(kinds, fmt.Sprintf("%s %s %s", e.Kind, e.Note, e.At.Format("Mon 15h")))
		}
		if want := []string{"deploy 1.1 Thu 01h", "writer_seen 1.0 Tue 01h"}; !slices.Equal(kinds, want) {
			t.Fatalf("events %v; want %v", kinds, want)
		}
		st, err := svc.Status(ctx, m.ID)
		must(t, err)
		if st.Deploys != 1 {
			t.Fatalf("status counts %d deploys; want 1 (the baseline is not one)", st.Deploys)
		}
	})
}
