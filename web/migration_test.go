package web_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	_ "github.com/lib/pq"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/web"
)

// TestMigrationFromTheUI: in a real browser, an admin creates a migration with the form (a
// refused form says what to fix and keeps what was typed), runs it twice with Run now, and cuts
// it over once the rule holds; before that the page offers no cutover and says why. Both sides
// are PostgreSQL tables holding the same orders, so every run is clean.
func TestMigrationFromTheUI(t *testing.T) {
	bin := chromium(t)
	ctx := context.Background()
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	since := time.Now().UTC().Add(-48 * time.Hour).Truncate(24 * time.Hour)
	for _, tb := range []string{"orders", "orders_new", "orders_archive"} {
		if _, err := pg.ExecContext(ctx, `CREATE TABLE public.`+tb+` (order_id bigint NOT NULL, ordered_at timestamptz NOT NULL, amount numeric(10,2))`); err != nil {
			t.Fatal(err)
		}
		for i, at := range []time.Time{since.Add(time.Hour), since.Add(25 * time.Hour), since.Add(26 * time.Hour)} {
			if _, err := pg.ExecContext(ctx, `INSERT INTO public.`+tb+` VALUES ($1, $2, $3)`, i+1, at, "12.50"); err != nil {
				t.Fatal(err)
			}
		}
	}
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUIWith(t, db, func(c *web.Config) {
		c.Reconcile = reconcile.New(db.Client, c.Catalog, c.Tables, c.Usage, reconcile.WithConnection("shop", pg))
	})
	for _, a := range []catalog.CreateInput{{Kind: catalog.KindTable, Namespace: "postgres://shop:5432", Name: "shop.public.orders"},
		{Kind: catalog.KindTable, Namespace: "postgres://shop:5432", Name: "shop.public.orders_new"}} {
		if _, err := cat.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	value := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Value(chromedp.CSS(sel)))
		must(err)
		return v
	}
	exists := func(sel string) bool {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("`+sel+`").length`))
		must(err)
		return n > 0
	}
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/migrations"), chromedp.WaitVisible(chromedp.ID("create-migration"))))
	for sel, v := range map[string]string{"#m-old": "shop.public.orders", "#m-new": "shop.public.orders_new", "#m-owner": "team-orders",
		"#m-keys": "order_id", "#m-time": "ordered_at", "#m-columns": "amount", "#m-window": "24h", "#m-since": since.Format(time.DateOnly),
		"#m-lag": "6h", "#m-old-connection": "shop", "#m-old-table": "public.orders", "#m-new-connection": "shop", "#m-new-table": "public.orders_new",
		"#m-weaker": "two clean runs are enough for this test table"} {
		must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS(sel), v)))
	}
	must(chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS("#m-runs"), "2"), chromedp.SetValue(chromedp.CSS("#m-days"), "0"),
		chromedp.SetValue(chromedp.CSS("#m-dedup-old"), "first_wins"), chromedp.SetValue(chromedp.CSS("#m-old-kind"), "postgres"),
		chromedp.SetValue(chromedp.CSS("#m-new-kind"), "postgres")))
	// This test table has no weekend or busiest day behind it: the rule asks for neither.
	must(chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#m-weekend")), chromedp.Click(chromedp.CSS("#m-busiest"))))
	// The new side's dedup rule is left unchosen: refused, saying so, with everything kept.
	click("#create-submit")
	if msg := text("#create-error"); !strings.Contains(msg, "Not created") || !strings.Contains(msg, "dedup rule") {
		t.Fatalf("refused form says %q", msg)
	}
	if got := value("#m-time"); got != "ordered_at" {
		t.Fatalf("the refused form lost the time column: %q", got)
	}
	if got := value("#m-new-table"); got != "public.orders_new" || value("#m-runs") != "2" || value("#m-dedup-old") != "first_wins" {
		t.Fatalf("the refused form lost the input: new table %q, runs %q, dedup %q", got, value("#m-runs"), value("#m-dedup-old"))
	}
	if !exists(`#m-dedup-new[aria-invalid=true]`) || exists(`#m-weekend:checked`) {
		t.Fatal("the refused field is not marked, or an unticked box came back ticked")
	}
	if n, _ := db.Client.DatasetMigration.Query().Count(ctx); n != 0 {
		t.Fatalf("a refused form wrote %d migrations", n)
	}
	shot(t, bctx, "migration-create-refused")
	must(chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS("#m-dedup-new"), "first_wins")))
	click("#create-submit")
	if flash := text(".flash"); !strings.Contains(flash, "Migration created") {
		t.Fatalf("after creating: %q", flash)
	}
	if why := text("#cutover-why"); !strings.Contains(why, "once the cutover rule holds") || exists("#cut-over") {
		t.Fatalf("a migration without runs offers a cutover, or does not say why not: %q", why)
	}
	if need := text("#readiness"); !strings.Contains(need, "2 consecutive clean runs (has 0)") {
		t.Fatalf("readiness before any run: %q", need)
	}

	click("#run-now")
	if v := text("#verdict"); !strings.Contains(v, "All 2 windows of the newest run agree: 6 records compared") {
		t.Fatalf("verdict after the first run: %q", v)
	}
	if exists("#cut-over") || !strings.Contains(text("#readiness"), "(has 1)") {
		t.Fatalf("after one clean run of two: readiness %q, cutover offered %v", text("#readiness"), exists("#cut-over"))
	}
	shot(t, bctx, "migration-one-run")
	click("#run-now")
	if r := text("#readiness"); !strings.Contains(r, "Ready to cut over") {
		t.Fatalf("after two clean runs: %q", r)
	}
	from, err := chromedp.Run(bctx, chromedp.Evaluate[int64](`JSON.parse(document.getElementById("streak-data").textContent).from`))
	must(err)
	to, err := chromedp.Run(bctx, chromedp.Evaluate[int64](`JSON.parse(document.getElementById("streak-data").textContent).to`))
	must(err)
	if span := time.Duration(to-from) * time.Second; span <= 0 || span > 2*time.Hour {
		t.Fatalf("the streak chart spans %s for two runs moments apart; want about an hour", span)
	}
	if got := value("#a-connection"); got != "shop" {
		t.Fatalf("the archive form does not start from the old side's connection: %q", got)
	}
	// A misspelt archive is refused by the same check the API makes, the form kept.
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#a-table"), "public.orders_archve")))
	click("#cut-over")
	if msg := text("#cutover-error"); !strings.Contains(msg, "cannot be read") || value("#a-table") != "public.orders_archve" {
		t.Fatalf("a misspelt archive: %q (table %q)", msg, value("#a-table"))
	}
	shot(t, bctx, "migration-ready")
	must(chromedp.Do(bctx, chromedp.SetValue(chromedp.CSS("#a-table"), "public.orders_archive")))
	click("#cut-over")
	if r := text("#readiness"); !strings.Contains(r, "Cut over") || !strings.Contains(r, "table public.orders_archive") {
		t.Fatalf("after the cutover: %q", r)
	}
	m, err := db.Client.DatasetMigration.Query().Only(ctx)
	must(err)
	if m.State != datasetmigration.StateCutOver {
		t.Fatalf("migration state %s after the cutover", m.State)
	}
	shot(t, bctx, "migration-cut-over")
	// A forged cutover (no CSRF token, no session) is refused.
	r, err := http.PostForm(srv.URL+"/migrations/"+m.ID.String()+"/cutover", url.Values{"archive_kind": {"external"}})
	must(err)
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("forged cutover: %d", r.StatusCode)
	}
}
