package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// TestRunDueRetiresGoneMigrations: once a cut-over migration's old asset is gone, scheduled runs
// stop and the migration is retired; an active one is kept.
func TestRunDueRetiresGoneMigrations(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		tbls, err := tables.New(db, cat)
		must(t, err)
		use, err := usage.New(db, cat)
		must(t, err)
		svc := mustReconcile(t, db, cat, tbls, use)
		since := time.Now().UTC().Truncate(24 * time.Hour)
		mk := func(name string) (reconcile.Migration, catalog.Asset) {
			old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: name})
			must(t, err)
			nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "lake", Name: name})
			must(t, err)
			if ps, err := svc.PairsOf(ctx, old.Asset.ID); err != nil || len(ps) != 0 {
				t.Fatalf("pairs before the migration: %v %v", ps, err)
			}
			m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: reconcile.Spec{
				KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
				DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a test of retirement, not of the streak"},
				Old: reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}})
			must(t, err)
			// Remembered pairs are dropped when this process creates a migration.
			if ps, err := svc.PairsOf(ctx, nw.Asset.ID); err != nil || len(ps) != 1 || ps[0].ID != m.ID || ps[0].OldAssetID != old.Asset.ID {
				t.Fatalf("pairs after the migration: %v %v", ps, err)
			}
			return m, old.Asset
		}
		moved, old := mk("moved")
		kept, keptOld := mk("kept")
		_, err = svc.PostRun(ctx, moved.ID, []reconcile.WindowFigures{{Start: since, Old: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}, New: reconcile.SideFigures{Rows: 1, Keys: 1, Checksum: "a"}}})
		must(t, err)
		_, err = svc.CutOver(ctx, moved.ID, reconcile.SourceSpec{Kind: reconcile.SourceExternal})
		must(t, err)
		for _, a := range []catalog.Asset{old, keptOld} {
			_, err := cat.Delete(ctx, a.ID, catalog.AnyVersion)
			must(t, err)
		}
		if n, err := svc.RunDue(ctx, time.Hour); err != nil || n != 0 {
			t.Fatalf("run due: %d %v", n, err)
		}
		for _, c := range []struct {
			m    reconcile.Migration
			want string
		}{{moved, "retired"}, {kept, "active"}} {
			m, err := svc.Get(ctx, c.m.ID)
			must(t, err)
			if m.State != c.want {
				t.Fatalf("migration %s is %s; want %s", c.m.ID, m.State, c.want)
			}
		}
	})
}
