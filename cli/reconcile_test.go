package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// TestReconcileCommands: list, status and run of a dataset migration whose old side is a real
// PostgreSQL table reached through --migration-sources, and whose new side an external checker
// reports.
func TestReconcileCommands(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := storage.Open(ctx, filepath.Join(dir, "tidemark.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	src := storagetest.DSN(t, "postgres")
	pg, err := sql.Open("postgres", src)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := pg.ExecContext(ctx, `CREATE TABLE orders (order_id bigint, ordered_at timestamptz, amount numeric(10,2))`); err != nil {
		t.Fatal(err)
	}
	since := time.Now().UTC().Add(-48 * time.Hour).Truncate(24 * time.Hour)
	for i := range 5 {
		if _, err := pg.ExecContext(ctx, `INSERT INTO orders VALUES ($1, $2, 10.50)`, i, since.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := catalog.New(db)
	if err != nil {
		t.Fatal(err)
	}
	tbls, err := tables.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	use, err := usage.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "postgres://shop:5432", Name: "shop.public.orders"})
	if err != nil {
		t.Fatal(err)
	}
	nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "s3://lake", Name: "sales.orders"})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := reconcile.New(db, cat, tbls, use, reconcile.WithConnection("shop", pg))
	if err != nil {
		t.Fatal(err)
	}
	m, err := rec.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "team-orders", Spec: reconcile.Spec{
		KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount"}, WindowSeconds: 86400, Since: since,
		DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 2, WeakerReason: "a test of the command"},
		Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.orders"}, New: reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	run := func(args ...string) (string, error) {
		var out, errs strings.Builder
		err := Run(ctx, append(args, "--data-dir", dir), &out, &errs, nil)
		return out.String() + errs.String(), err
	}
	if out, err := run("reconcile", "list"); err != nil || !strings.Contains(out, m.ID.String()) || !strings.Contains(out, "active") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	// The new side is not a registered Iceberg table: the run is recorded as failed, and says why.
	out, err := run("reconcile", "run", m.ID.String(), "--migration-sources", "shop="+src)
	if err == nil || !strings.Contains(out, "not clean") {
		t.Fatalf("run without a readable new side: %v\n%s", err, out)
	}
	if out, err := run("reconcile", "run", m.ID.String()); err == nil || !strings.Contains(out+err.Error(), `no PostgreSQL connection named "shop"`) {
		t.Fatalf("run without the source: %v\n%s", err, out)
	}
	out, err = run("reconcile", "status", m.ID.String())
	if err != nil || !strings.Contains(out, "0 consecutive clean runs") || !strings.Contains(out, "still needs 2 consecutive clean runs") {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if _, err := run("reconcile", "status", "nope"); err == nil || !strings.Contains(err.Error(), "not a migration ID") {
		t.Fatalf("status of a bad ID: %v", err)
	}
	if _, err := run("reconcile", "run", m.ID.String(), "--migration-sources", "shop"); err == nil || !strings.Contains(err.Error(), "name=postgres://") {
		t.Fatalf("a bad --migration-sources: %v", err)
	}
}

// TestChangeLogCommand: reconcile change-log prints a script that installs on a real table and
// logs its writes, and refuses a table named without its schema, writing nothing.
func TestChangeLogCommand(t *testing.T) {
	ctx := context.Background()
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	var out, errs strings.Builder
	if err := Run(ctx, []string{"reconcile", "change-log", "--table", "public.orders", "--time-column", "ordered_at", "--log", "public.orders_changes", "--grain", "24h"},
		&out, &errs, nil); err != nil {
		t.Fatalf("change-log: %v\n%s", err, errs.String())
	}
	for _, q := range []string{`CREATE TABLE public.orders (order_id bigint PRIMARY KEY, ordered_at timestamptz NOT NULL)`, out.String(),
		`INSERT INTO public.orders VALUES (1, '2026-11-02 10:00+00'), (2, '2026-11-02 11:00+00')`} {
		if _, err := pg.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	var bins int
	if err := pg.QueryRowContext(ctx, `SELECT count(*) FROM public.orders_changes WHERE lo = '2026-11-02 00:00+00' AND hi = '2026-11-03 00:00+00'`).Scan(&bins); err != nil || bins != 1 {
		t.Fatalf("the insert logged %d day bins (%v), want 1", bins, err)
	}
	out.Reset()
	if err := Run(ctx, []string{"reconcile", "change-log", "--table", "orders", "--time-column", "ordered_at", "--log", "public.c"}, &out, &errs, nil); err == nil ||
		!strings.Contains(err.Error(), "schema.table") || out.Len() != 0 {
		t.Fatalf("a table without its schema: %v, printed %q; want it refused, nothing printed", err, out.String())
	}
}
