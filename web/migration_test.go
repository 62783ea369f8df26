package web_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	_ "github.com/lib/pq"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// TestMigrationFromTheUI: in a real browser, an admin creates a migration with the form (a
// refused form says what to fix and keeps what was typed), runs it twice with Run now, and cuts
// it over once the rule holds; before that the page offers no cutover and says why. Both sides
// are PostgreSQL tables holding the same orders, so every run is clean.
func TestMigrationFromTheUI(t *testing.T) {
	bin := chromium(t)
	ctx := context.Background()
	pg, since := sameOrdersTables(t, ctx)
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUIWith(t, db, func(c *web.Config) {
		c.Reconcile = mustReconcile(t, db, c.Catalog, c.Tables, c.Usage, reconcile.WithConnection("shop", pg))
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
	p := newMigrationPage(t, chromiumContext(t, bin))
	p.must(chromedp.Do(p.bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	p.click("#signin-submit")
	p.fillCreateForm(srv.URL, since)
	p.createRefused(ctx, db)
	p.create()
	p.runTwice()
	m := p.cutOver(ctx, db)
	// A forged cutover (no CSRF token, no session) is refused.
	r, err := http.PostForm(srv.URL+"/migrations/"+m.ID.String()+"/cutover", url.Values{"archive_kind": {"external"}})
	p.must(err)
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Fatalf("forged cutover: %d", r.StatusCode)
	}
}

// sameOrdersTables creates public.orders, orders_new and orders_archive in PostgreSQL, each
// holding the same three orders over the two days from since, which it returns with the
// connection.
func sameOrdersTables(t *testing.T, ctx context.Context) (*sql.DB, time.Time) {
	t.Helper()
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
	return pg, since
}

// migrationPage is TestMigrationFromTheUI's browser tab and the steps it repeats.
type migrationPage struct {
	t     *testing.T
	bctx  context.Context
	must  func(error)
	text  func(string) string
	click func(string)
}

// newMigrationPage wraps the tab bctx with browserOps.
func newMigrationPage(t *testing.T, bctx context.Context) *migrationPage {
	must, text, click := browserOps(t, bctx)
	return &migrationPage{t: t, bctx: bctx, must: must, text: text, click: click}
}

// value is the value of the form field sel selects.
func (p *migrationPage) value(sel string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.bctx, chromedp.Value(chromedp.CSS(sel)))
	p.must(err)
	return v
}

// exists reports whether sel selects any element.
func (p *migrationPage) exists(sel string) bool {
	p.t.Helper()
	n, err := chromedp.Run(p.bctx, chromedp.Evaluate[int](`document.querySelectorAll("`+sel+`").length`))
	p.must(err)
	return n > 0
}

// fillCreateForm opens the migrations page and fills the create form for orders to orders_new,
// all but the new side's dedup rule.
func (p *migrationPage) fillCreateForm(base string, since time.Time) {
	p.t.Helper()
	p.must(chromedp.Do(p.bctx, chromedp.Navigate(base+"/migrations"), chromedp.WaitVisible(chromedp.ID("create-migration"))))
	for sel, v := range map[string]string{"#m-old": "shop.public.orders", "#m-new": "shop.public.orders_new", "#m-owner": "team-orders",
		"#m-keys": "order_id", "#m-time": "ordered_at", "#m-columns": "amount", "#m-window": "24h", "#m-since": since.Format(time.DateOnly),
		"#m-lag": "6h", "#m-old-connection": "shop", "#m-old-table": "public.orders", "#m-new-connection": "shop", "#m-new-table": "public.orders_new",
		"#m-weaker": "two clean runs are enough for this test table"} {
		p.must(chromedp.Do(p.bctx, chromedp.SendKeys(chromedp.CSS(sel), v)))
	}
	p.must(chromedp.Do(p.bctx, chromedp.SetValue(chromedp.CSS("#m-runs"), "2"), chromedp.SetValue(chromedp.CSS("#m-days"), "0"),
		chromedp.SetValue(chromedp.CSS("#m-dedup-old"), "first_wins"), chromedp.SetValue(chromedp.CSS("#m-old-kind"), "postgres"),
		chromedp.SetValue(chromedp.CSS("#m-new-kind"), "postgres")))
	// This test table has no weekend or busiest day behind it: the rule asks for neither.
	p.must(chromedp.Do(p.bctx, chromedp.Click(chromedp.CSS("#m-weekend")), chromedp.Click(chromedp.CSS("#m-busiest"))))
}

// createRefused sends the form with the new side's dedup rule left unchosen: it is refused,
// saying so, with everything kept, and nothing is written to db.
func (p *migrationPage) createRefused(ctx context.Context, db *storage.DB) {
	p.t.Helper()
	p.click("#create-submit")
	if msg := p.text("#create-error"); !strings.Contains(msg, "Not created") || !strings.Contains(msg, "dedup rule") {
		p.t.Fatalf("refused form says %q", msg)
	}
	if got := p.value("#m-time"); got != "ordered_at" {
		p.t.Fatalf("the refused form lost the time column: %q", got)
	}
	if got := p.value("#m-new-table"); got != "public.orders_new" || p.value("#m-runs") != "2" || p.value("#m-dedup-old") != "first_wins" {
		p.t.Fatalf("the refused form lost the input: new table %q, runs %q, dedup %q", got, p.value("#m-runs"), p.value("#m-dedup-old"))
	}
	if !p.exists(`#m-dedup-new[aria-invalid=true]`) || p.exists(`#m-weekend:checked`) {
		p.t.Fatal("the refused field is not marked, or an unticked box came back ticked")
	}
	if n, _ := db.Client.DatasetMigration.Query().Count(ctx); n != 0 {
		p.t.Fatalf("a refused form wrote %d migrations", n)
	}
	shot(p.t, p.bctx, "migration-create-refused")
}

// create chooses the missing dedup rule and sends the form: the migration is created, and
// without runs the page offers no cutover and says why.
func (p *migrationPage) create() {
	p.t.Helper()
	p.must(chromedp.Do(p.bctx, chromedp.SetValue(chromedp.CSS("#m-dedup-new"), "first_wins")))
	p.click("#create-submit")
	if flash := p.text(".flash"); !strings.Contains(flash, "Migration created") {
		p.t.Fatalf("after creating: %q", flash)
	}
	if why := p.text("#cutover-why"); !strings.Contains(why, "once the cutover rule holds") || p.exists("#cut-over") {
		p.t.Fatalf("a migration without runs offers a cutover, or does not say why not: %q", why)
	}
	if need := p.text("#readiness"); !strings.Contains(need, "2 consecutive clean runs (has 0)") {
		p.t.Fatalf("readiness before any run: %q", need)
	}
}

// runTwice clicks Run now twice: after one clean run of two the cutover is not offered yet,
// after two it is, and the streak chart spans the two runs.
func (p *migrationPage) runTwice() {
	p.t.Helper()
	p.click("#run-now")
	if v := p.text("#verdict"); !strings.Contains(v, "All 2 windows of the newest run agree: 6 records compared") {
		p.t.Fatalf("verdict after the first run: %q", v)
	}
	if p.exists("#cut-over") || !strings.Contains(p.text("#readiness"), "(has 1)") {
		p.t.Fatalf("after one clean run of two: readiness %q, cutover offered %v", p.text("#readiness"), p.exists("#cut-over"))
	}
	shot(p.t, p.bctx, "migration-one-run")
	p.click("#run-now")
	if r := p.text("#readiness"); !strings.Contains(r, "Ready to cut over") {
		p.t.Fatalf("after two clean runs: %q", r)
	}
	from, err := chromedp.Run(p.bctx, chromedp.Evaluate[int64](`JSON.parse(document.getElementById("streak-data").textContent).from`))
	p.must(err)
	to, err := chromedp.Run(p.bctx, chromedp.Evaluate[int64](`JSON.parse(document.getElementById("streak-data").textContent).to`))
	p.must(err)
	if span := time.Duration(to-from) * time.Second; span <= 0 || span > 2*time.Hour {
		p.t.Fatalf("the streak chart spans %s for two runs moments apart; want about an hour", span)
	}
}

// cutOver fills the archive form, first with a misspelt archive that is refused with the form
// kept, then with orders_archive, and cuts over; it returns the migration as db holds it.
func (p *migrationPage) cutOver(ctx context.Context, db *storage.DB) *ent.DatasetMigration {
	p.t.Helper()
	if got := p.value("#a-connection"); got != "shop" {
		p.t.Fatalf("the archive form does not start from the old side's connection: %q", got)
	}
	// A misspelt archive is refused by the same check the API makes, the form kept.
	p.must(chromedp.Do(p.bctx, chromedp.SendKeys(chromedp.CSS("#a-table"), "public.orders_archve")))
	p.click("#cut-over")
	if msg := p.text("#cutover-error"); !strings.Contains(msg, "cannot be read") || p.value("#a-table") != "public.orders_archve" {
		p.t.Fatalf("a misspelt archive: %q (table %q)", msg, p.value("#a-table"))
	}
	shot(p.t, p.bctx, "migration-ready")
	p.must(chromedp.Do(p.bctx, chromedp.SetValue(chromedp.CSS("#a-table"), "public.orders_archive")))
	p.click("#cut-over")
	if r := p.text("#readiness"); !strings.Contains(r, "Cut over") || !strings.Contains(r, "table public.orders_archive") {
		p.t.Fatalf("after the cutover: %q", r)
	}
	m, err := db.Client.DatasetMigration.Query().Only(ctx)
	p.must(err)
	if m.State != datasetmigration.StateCutOver {
		p.t.Fatalf("migration state %s after the cutover", m.State)
	}
	shot(p.t, p.bctx, "migration-cut-over")
	return m
}

// TestMigrationFormSaysEveryProblem: a create form wrong in several places is refused with every
// problem at once, in the form's words (not the API's field names), each input marked, and
// nothing written.
func TestMigrationFormSaysEveryProblem(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, cat := newUIWith(t, db, func(c *web.Config) {
			c.Reconcile = mustReconcile(t, db, c.Catalog, c.Tables, c.Usage)
		})
		if _, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "s3://lake", Name: "sales.orders"}); err != nil {
			t.Fatal(err)
		}
		b := signIn(t, srv, db, "alice", auth.ScopeAdmin)
		status, _, body := b.post("/migrations", url.Values{"old": {"no.such.table"}, "new": {"sales.orders"}, "window": {"a day"},
			"sample_size": {"many"}, "key_columns": {"order_id"}, "columns": {"amount"}, "since": {"2026-11-02"},
			"min_clean_runs": {"3"}, "min_days": {"7"}, "old_kind": {"external"}, "new_kind": {"external"}, "new_change_log": {"audit.orders_changes"}})
		if status != http.StatusBadRequest {
			t.Fatalf("a wrong form: %d, want 400\n%s", status, body)
		}
		for _, want := range []string{"fix these", "The window must be a duration such as 24h", "The sample size must be a whole number",
			"name the time column", "name the migration&#39;s owner", "Dedup rule, old side", "Dedup rule, new side", "no.such.table",
			"a change log is for a postgres side", `name="new_change_log" value="audit.orders_changes"`} {
			if !strings.Contains(body, want) {
				t.Errorf("the refused form does not say %q", want)
			}
		}
		for _, field := range []string{"old", "window", "sample_size", "time_column", "owner"} {
			if !strings.Contains(body, `name="`+field+`"`) || !regexp.MustCompile(`name="`+field+`"[^>]*aria-invalid="true"`).MatchString(body) {
				t.Errorf("the input %s is not marked", field)
			}
		}
		if strings.Contains(body, "window_seconds") || strings.Contains(body, "sample_size must") {
			t.Error("the refused form speaks the API's field names")
		}
		if n, _ := db.Client.DatasetMigration.Query().Count(ctx); n != 0 {
			t.Fatalf("a refused form wrote %d migrations", n)
		}
	})
}
