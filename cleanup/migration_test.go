package cleanup_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestMigratedAssetRetirement: the old side of a migration is proposed for retirement only after
// the cutover and a clean reconciliation after it, which the evidence cites; an approved
// retirement stops if the asset becomes the old side of a migration that is not cut over.
func TestMigratedAssetRetirement(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var rec *reconcile.Service
		e := newEnv(t, db, cleanup.WithMigrationGate(func(ctx context.Context, id uuid.UUID) (bool, uuid.UUID, string, error) {
			return rec.RetirementGate(ctx, id)
		}))
		var err error
		rec, err = reconcile.New(db, e.cat, e.tables, e.usage, reconcile.WithClock(e.clock.Now))
		must(t, err)
		next, err := e.cat.Create(e.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "s3://lake", Name: "events_v2"})
		must(t, err)
		since := e.clock.Now().UTC().Truncate(24 * time.Hour)
		migrate := func(to uuid.UUID) reconcile.Migration {
			t.Helper()
			m, err := rec.Create(e.ctx, reconcile.CreateInput{OldAssetID: e.id, NewAssetID: to, Owner: "team-events", Spec: reconcile.Spec{
				KeyColumns: []string{"id"}, TimeColumn: "ts", Columns: []string{"region"}, WindowSeconds: 86400, Since: since,
				DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a test of retirement"},
				Old: reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}})
			must(t, err)
			return m
		}
		cleanRun := func(m reconcile.Migration) reconcile.Run {
			t.Helper()
			r, err := rec.PostRun(e.ctx, m.ID, []reconcile.WindowFigures{{Start: since,
				Old: reconcile.SideFigures{Rows: 5, Keys: 5, Checksum: "x"}, New: reconcile.SideFigures{Rows: 5, Keys: 5, Checksum: "x"}}})
			must(t, err)
			if !r.Clean {
				t.Fatalf("run: %v", r.Causes)
			}
			return r
		}
		m := migrate(next.Asset.ID)
		e.clock.Add(100 * 24 * time.Hour) // long unread
		if r := e.propose(); len(e.proposals(cleanup.KindUnusedAsset, "open")) != 0 {
			t.Fatalf("retirement proposed while the migration is not cut over: %+v", r)
		}
		cleanRun(m)
		if _, err := rec.CutOver(e.ctx, m.ID, reconcile.SourceSpec{Kind: reconcile.SourceExternal}); err != nil {
			t.Fatal(err)
		}
		if e.propose(); len(e.proposals(cleanup.KindUnusedAsset, "open")) != 0 {
			t.Fatal("retirement proposed after the cutover but before a final reconciliation")
		}
		// The final reconciliation is the newest: a clean run followed by one that is not clean
		// does not close the books.
		e.clock.Add(time.Minute)
		cleanRun(m)
		e.clock.Add(time.Minute)
		if _, err := rec.PostRun(e.ctx, m.ID, []reconcile.WindowFigures{{Start: since,
			Old: reconcile.SideFigures{Rows: 5, Keys: 5, Checksum: "x"}, New: reconcile.SideFigures{Rows: 6, Keys: 5, DuplicateKeys: 1, Checksum: "x"}}}); err != nil {
			t.Fatal(err)
		}
		if e.propose(); len(e.proposals(cleanup.KindUnusedAsset, "open")) != 0 {
			t.Fatal("retirement proposed while the newest reconciliation since the cutover was not clean")
		}
		e.clock.Add(time.Minute)
		final := cleanRun(m)
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 || ps[0].Evidence.FinalReconciliation == nil || *ps[0].Evidence.FinalReconciliation != final.ID {
			t.Fatalf("proposals after the final reconciliation: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire it"); err != nil {
			t.Fatal(err)
		}
		// Meanwhile someone starts moving the same data elsewhere: the executor re-reads the
		// world and stops.
		other, err := e.cat.Create(e.ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "s3://lake", Name: "events_v3"})
		must(t, err)
		migrate(other.Asset.ID)
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Stopped != 1 || r.Deleted != 0 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if a, _ := e.cat.Get(e.ctx, e.id); a.Status == catalog.StatusDeleted {
			t.Fatal("the asset was retired while it is the old side of a migration not cut over")
		}
	})
}
