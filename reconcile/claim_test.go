package reconcile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

// TestOneRunAtATime: while a run reads its sides (held here by a lock on the old side's table),
// a second run of the same migration is refused as a conflict and a run of another migration
// past the process's cap as unavailable; neither writes a run. A run that compared no rows is
// not clean.
func TestOneRunAtATime(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
		must(t, err)
		pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
		must(t, err)
		t.Cleanup(func() { pg.Close() })
		for _, tb := range []string{"a", "b"} {
			_, err = pg.ExecContext(ctx, fmt.Sprintf(`CREATE TABLE public.%s (id bigint NOT NULL, at timestamptz NOT NULL, v text)`, tb))
			must(t, err)
		}
		svc := mustReconcile(t, db, cat, tbls, nil, reconcile.WithConnection("src", pg), reconcile.WithMaxRuns(1))
		since := time.Now().UTC().Add(-48 * time.Hour).Truncate(24 * time.Hour)
		mk := func(name string) reconcile.Migration {
			old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: name + ".old"})
			must(t, err)
			nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: name + ".new"})
			must(t, err)
			m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "o", Spec: reconcile.Spec{
				KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
				DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 1, WeakerReason: "a test of run claims"},
				Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "src", Table: "public.a"},
				New: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "src", Table: "public.b"}}})
			must(t, err)
			return m
		}
		one, two := mk("one"), mk("two")

		// Nothing written yet on either side: the run compared nothing and is not clean.
		empty, err := svc.Reconcile(ctx, one.ID)
		must(t, err)
		if empty.Clean || len(empty.Causes) != 1 {
			t.Fatalf("a run over no rows: clean %v, causes %v; want not clean, one cause", empty.Clean, empty.Causes)
		}

		_, err = pg.ExecContext(ctx, `INSERT INTO public.a VALUES (1, $1, 'x')`, since.Add(time.Hour))
		must(t, err)
		lock, err := pg.BeginTx(ctx, nil)
		must(t, err)
		_, err = lock.ExecContext(ctx, `LOCK TABLE public.a IN ACCESS EXCLUSIVE MODE`)
		must(t, err)
		done := make(chan error, 1)
		go func() { _, err := svc.Reconcile(ctx, one.ID); done <- err }()
		for { // until the held run has recorded its start (it holds the claim and the slot by then)
			n, err := db.Client.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(one.ID)).Count(ctx)
			must(t, err)
			if n == 2 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		_, err = svc.Reconcile(ctx, two.ID)
		if !errors.Is(err, catalog.ErrUnavailable) {
			t.Errorf("a run past the process's cap: %v; want unavailable", err)
		}
		again := mustReconcile(t, db, cat, tbls, nil, reconcile.WithConnection("src", pg)) // another replica
		_, err = again.Reconcile(ctx, one.ID)
		if !errors.Is(err, catalog.ErrConflict) {
			t.Errorf("a second run of a running migration: %v; want a conflict", err)
		}
		_, err = again.PostRun(ctx, one.ID, []reconcile.WindowFigures{{Start: since}})
		if !errors.Is(err, catalog.ErrConflict) {
			t.Errorf("posted figures for a migration Tidemark reads: %v; want a conflict", err)
		}
		must(t, lock.Rollback())
		must(t, <-done)
		for _, m := range []reconcile.Migration{one, two} {
			n, err := db.Client.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(m.ID)).Count(ctx)
			must(t, err)
			if want := map[bool]int{true: 2, false: 0}[m.ID == one.ID]; n != want {
				t.Errorf("migration %s has %d runs; want %d (refused runs write none)", m.ID, n, want)
			}
		}
		// The claim is free again: the next run runs.
		r, err := svc.Reconcile(ctx, one.ID)
		must(t, err)
		if r.Clean || r.Summary.Unclean != 1 {
			t.Fatalf("a run with a key on the old side only: %+v", r)
		}
	})
}
