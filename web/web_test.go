package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/web"
)

func newUI(t *testing.T, db *storage.DB) (*httptest.Server, *catalog.Catalog) {
	t.Helper()
	return newUIWith(t, db, nil)
}

// newUIWith is newUI with the configuration tweaked.
func newUIWith(t *testing.T, db *storage.DB, tweak func(*web.Config)) (*httptest.Server, *catalog.Catalog) {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.New(db)
	if err != nil {
		t.Fatal(err)
	}
	use, err := usage.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	lin, err := lineage.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	if err := lin.Open(ctx); err != nil {
		t.Fatal(err)
	}
	tbls, err := tables.New(db, cat, tables.WithWarehouseRoots(os.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := notify.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	vers, err := versions.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	cfg := web.Config{Catalog: cat, Lineage: lin, Usage: use, Tables: tbls, Tokens: auth.NewStore(db.Client, nil),
		Cleanup: mustCleanup(t, db, cat, tbls), Notify: notes, Versions: vers}
	if tweak != nil {
		tweak(&cfg)
	}
	ui, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	t.Cleanup(srv.Close)
	return srv, cat
}

// TestPages renders every page of a small catalog and checks refusals: unknown IDs are 404
// pages, bad IDs 400, and a decision without a session or CSRF token is 403.
func TestPages(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		ctx := context.Background()
		res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders",
			Owners: []catalog.OwnerInput{{Principal: "team-sales"}}})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Asset.ID.String()
		if _, err := cat.Rename(ctx, res.Asset.ID, catalog.AnyVersion, "warehouse", "revenue"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			path string
			want int
			has  string
		}{
			{"/", 200, "revenue"},
			{"/?q=orders", 200, "matched former name orders"},
			{"/?q=team-sales", 200, "owned by team-sales"},
			{"/?q=warehouse+rev", 200, `href="/?kind=table&amp;q=warehouse&#43;rev"`},
			{"/?owner=team-sales", 200, "Owner: team-sales"},
			{"/?q=" + strings.Repeat("x", 201), 400, "the limit is 200"},
			{"/?q=x&offset=nope", 400, "offset"},
			{"/?ns=warehouse&kind=table", 200, "revenue"},
			{"/assets/" + id, 200, "Names over time"},
			{"/assets/" + id + "?depth=3", 200, "lineage-data"},
			{"/assets/not-an-id", 400, "not an asset ID"},
			{"/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70", 404, "does not exist"},
			{"/proposals", 200, "No proposals"},
			{"/proposals?state=bogus", 400, "state"},
			{"/scans", 200, "No scans yet"},
			{"/audit", 200, "asset.rename"},
			{"/signin", 200, "API token"},
			{"/static/lineage.js", 200, "tidemarkGraph"},
			{"/static/vendor/cytoscape.min.js", 200, "cytoscape"},
			{"/favicon.ico", 200, "<svg"},
			{"/signin?flash=decided", 200, "Decision recorded"},
			{"/static/", 404, ""},
			{"/no-such-page", 404, "There is no page at /no-such-page"},
			{"/assets/" + id + "/nothing/here", 404, "There is no page"},
			{"/static/vendor/", 404, ""},
			{"/static/vendor", 404, ""},
		} {
			r, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(r)
			if r.StatusCode != tc.want || !strings.Contains(body, tc.has) {
				t.Errorf("GET %s = %d, want %d containing %q", tc.path, r.StatusCode, tc.want, tc.has)
			}
			if strings.HasSuffix(tc.path, ".js") {
				continue
			}
			if r.Header.Get("Content-Security-Policy") == "" || r.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("GET %s: security headers missing", tc.path)
			}
		}
		// A link cannot put its own text in the banner.
		fr, err := http.Get(srv.URL + "/signin?flash=" + url.QueryEscape("Your account is suspended: call +1 555 0100"))
		if err != nil {
			t.Fatal(err)
		}
		if body := readBody(fr); strings.Contains(body, "suspended") || strings.Contains(body, `class="flash"`) {
			t.Errorf("a link's flash text was shown")
		}
		r, err := http.PostForm(srv.URL+"/proposals/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/approve", url.Values{})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous approve: %d", r.StatusCode)
		}
		r, err = http.PostForm(srv.URL+"/signin", url.Values{"token": {"tdm_nope"}})
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != http.StatusForbidden {
			t.Errorf("sign-in without the form's CSRF cookie: %d", r.StatusCode)
		}
	})
}

func readBody(r *http.Response) string {
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// TestSessions: a sign-in is kept in the database, so another replica (or a restart) knows it;
// revoking the token ends it; signing out needs the form's CSRF token.
func TestSessions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		tokens := auth.NewStore(db.Client, nil)
		secret, _, err := tokens.Create(ctx, "alice", []auth.Scope{auth.ScopeAdmin})
		if err != nil {
			t.Fatal(err)
		}
		one, _ := newUI(t, db)
		two, _ := newUI(t, db) // another replica on the same database
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		body := readBody(mustGet(t, c, one.URL+"/signin"))
		csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
		if csrf == nil {
			t.Fatal("no CSRF field")
		}
		r, err := c.PostForm(one.URL+"/signin", url.Values{"csrf": {csrf[1]}, "token": {secret}})
		if err != nil || r.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign in: %v %v", r.StatusCode, err)
		}
		var session *http.Cookie
		for _, ck := range r.Cookies() {
			if ck.Name == "tidemark_session" {
				session = ck
			}
		}
		if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode {
			t.Fatalf("session cookie: %+v", session)
		}
		if n, _ := db.Client.WebSession.Query().Count(ctx); n != 1 {
			t.Fatalf("%d sessions stored", n)
		}
		if row, _ := db.Client.WebSession.Query().Only(ctx); row != nil && (row.ID == session.Value || strings.Contains(row.ID, session.Value)) {
			t.Fatal("the cookie value is stored as is")
		}
		signedIn := func(base string) bool {
			req, _ := http.NewRequest("GET", base+"/proposals", nil)
			req.AddCookie(session)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return strings.Contains(readBody(res), `id="who">alice`)
		}
		if !signedIn(one.URL) || !signedIn(two.URL) {
			t.Fatal("the session is not known to both replicas")
		}
		if err := tokens.Revoke(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if signedIn(one.URL) {
			t.Fatal("a revoked token's session still works")
		}
	})
}

func mustGet(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	r, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDatabaseDown: with the database gone the pages answer 503 with Retry-After, not 500.
func TestDatabaseDown(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, _ := newUI(t, db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/", "/proposals", "/audit"} {
			r, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body := readBody(r)
			if r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(body, "try again") {
				t.Errorf("GET %s with the database down: %d %q", path, r.StatusCode, r.Header.Get("Retry-After"))
			}
		}
	})
}

// TestPagesNeedSession: with reads protected (--auth-reads) every page but sign-in and static
// files sends an anonymous visitor to sign in; a read token's session sees them.
func TestPagesNeedSession(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, _ := newUIWith(t, db, func(c *web.Config) { c.RequireSession = true })
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, p := range []string{"/", "/?q=orders", "/proposals", "/scans", "/audit", "/assets/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70"} {
			r := mustGet(t, noFollow, srv.URL+p)
			readBody(r)
			if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/signin?next="+url.QueryEscape(p) {
				t.Errorf("anonymous GET %s: %d %q", p, r.StatusCode, r.Header.Get("Location"))
			}
		}
		for _, p := range []string{"/signin", "/static/app.js"} {
			if r := mustGet(t, noFollow, srv.URL+p); r.StatusCode != http.StatusOK {
				t.Errorf("anonymous GET %s: %d", p, r.StatusCode)
			}
		}
		r, err := noFollow.PostForm(srv.URL+"/proposals/0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70/approve", url.Values{})
		if err != nil || r.StatusCode != http.StatusUnauthorized {
			t.Fatalf("anonymous POST: %v %v", r.StatusCode, err)
		}
		secret, _, err := auth.NewStore(db.Client, nil).Create(ctx, "reader", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		body := readBody(mustGet(t, c, srv.URL+"/signin"))
		csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
		if csrf == nil {
			t.Fatal("no CSRF field")
		}
		r, err = c.PostForm(srv.URL+"/signin", url.Values{"csrf": {csrf[1]}, "token": {secret}, "next": {"/audit?actor=x"}})
		if err != nil || r.StatusCode != http.StatusOK || r.Request.URL.RequestURI() != "/audit?actor=x" {
			t.Fatalf("sign in: %v %v", r.StatusCode, err)
		}
		// The sign-in returns to the page it came from, and only to a page of this site.
		for next, want := range map[string]string{"/scans": "/scans", "//evil.example/x": "/", "https://evil.example/": "/", "/\\evil.example": "/", "": "/",
			"/\t/evil.example": "/", "/%09/evil.example": "/", "/\r\n/evil.example": "/", "javascript:alert(1)": "/"} {
			r, err := c.PostForm(srv.URL+"/signin", url.Values{"csrf": {csrf[1]}, "token": {secret}, "next": {next}})
			if err != nil || r.Request.URL.Host != strings.TrimPrefix(srv.URL, "http://") || r.Request.URL.Path != want {
				t.Errorf("sign in with next %q landed on %v (%v)", next, r.Request.URL, err)
			}
		}
		if r := mustGet(t, c, srv.URL+"/audit"); r.StatusCode != http.StatusOK || !strings.Contains(readBody(r), `id="who">reader`) {
			t.Fatalf("signed-in GET /audit: %d", r.StatusCode)
		}
	})
}

// TestAssetPageSaysWhatIsMissing: when a part of the asset page cannot be read (here the
// cleanup proposals and the Iceberg table, whose services read a database that is gone), the
// page still renders what it can, names what is missing and logs why.
func TestAssetPageSaysWhatIsMissing(t *testing.T) {
	db := storagetest.Open(t, storagetest.Backends[0])
	gone := storagetest.Open(t, storagetest.Backends[0])
	var logs strings.Builder
	var mu sync.Mutex
	srv, cat := newUIWith(t, db, func(c *web.Config) {
		goneCat, err := catalog.New(gone)
		if err != nil {
			t.Fatal(err)
		}
		tbls, err := tables.New(gone, goneCat)
		if err != nil {
			t.Fatal(err)
		}
		c.Tables = tbls
		c.Cleanup = mustCleanup(t, gone, goneCat, tbls)
		c.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	gone.Close()
	res, err := cat.Create(context.Background(), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := http.Get(srv.URL + "/assets/" + res.Asset.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	page := string(b)
	if r.StatusCode != 200 || !strings.Contains(page, "orders") || !strings.Contains(page, `id="missing"`) ||
		!strings.Contains(page, "the cleanup proposals") || !strings.Contains(page, "the Iceberg table") {
		t.Fatalf("page (%d) does not say what is missing:\n%s", r.StatusCode, page)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "part=\"the cleanup proposals\"") {
		t.Fatalf("nothing logged:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestMigrationPages: a migration's page shows the readiness, the streak, the windows that
// differ and the findings; both assets' pages link to it and draw the migrated_to edge.
func TestMigrationPages(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var rec *reconcile.Service
		srv, cat := newUIWith(t, db, func(c *web.Config) {
			rec = mustReconcile(t, db, c.Catalog, c.Tables, c.Usage)
			c.Reconcile = rec
		})
		old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "postgres://shop:5432", Name: "shop.public.orders"})
		if err != nil {
			t.Fatal(err)
		}
		nw, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "s3://lake", Name: "sales.orders"})
		if err != nil {
			t.Fatal(err)
		}
		since := time.Now().UTC().Add(-72 * time.Hour).Truncate(24 * time.Hour)
		m, err := rec.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: nw.Asset.ID, Owner: "team-orders", Spec: reconcile.Spec{
			KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount"}, WindowSeconds: 86400, Since: since,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 3, WeakerReason: "a test of the page"},
			Old: reconcile.SourceSpec{Kind: reconcile.SourceExternal}, New: reconcile.SourceSpec{Kind: reconcile.SourceExternal}}})
		if err != nil {
			t.Fatal(err)
		}
		post := func(dups int64) {
			t.Helper()
			_, err := rec.PostRun(ctx, m.ID, []reconcile.WindowFigures{{Start: since,
				Old: reconcile.SideFigures{Rows: 10, Keys: 10, Checksum: "a"}, New: reconcile.SideFigures{Rows: 10 + dups, Keys: 10, DuplicateKeys: dups, Checksum: "a"}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		// Before the first run the chart is not a blank box: the page says why there is none.
		page := readBody(mustGet(t, srv.Client(), srv.URL+"/migrations/"+m.ID.String()))
		if !strings.Contains(page, `id="streak-empty"`) || strings.Contains(page, `id="streak-chart"`) {
			t.Fatalf("a migration without runs draws an empty chart:\n%s", page)
		}
		post(2)
		page = readBody(mustGet(t, srv.Client(), srv.URL+"/migrations/"+m.ID.String()))
		for _, want := range []string{"Not ready to cut over", "3 consecutive clean runs (has 0)", "duplication", "2 keys appear more than once on the new side", "team-orders", "streak-data"} {
			if !strings.Contains(page, want) {
				t.Fatalf("migration page lacks %q:\n%s", want, page)
			}
		}
		for range 3 {
			post(0)
		}
		if _, err := rec.RecordEvent(ctx, m.ID, reconcile.EventInput{Kind: reconcile.Deploy, Note: "orders-writer 2.4.0", RecordedBy: "ci"}); err != nil {
			t.Fatal(err)
		}
		page = readBody(mustGet(t, srv.Client(), srv.URL+"/migrations/"+m.ID.String()))
		for _, want := range []string{"orders-writer 2.4.0", "1 deploy recorded", "Weaker than the floor because: a test of the page", "keys unique"} {
			if !strings.Contains(page, want) {
				t.Fatalf("migration page lacks %q:\n%s", want, page)
			}
		}
		if !strings.Contains(page, "Ready to cut over") || !strings.Contains(page, "The newest run&#39;s one window agrees: 20 records compared") || !strings.Contains(page, `"streak":[0,1,2,3]`) {
			t.Fatalf("migration page after three clean runs:\n%s", page)
		}
		if _, err := rec.CutOver(ctx, m.ID, reconcile.SourceSpec{Kind: reconcile.SourceExternal}); err != nil {
			t.Fatal(err)
		}
		if page = readBody(mustGet(t, srv.Client(), srv.URL+"/migrations/"+m.ID.String())); !strings.Contains(page, "Cut over") || strings.Contains(page, "Not ready") ||
			!strings.Contains(page, "The final reconciliation reads the archive: external") {
			t.Fatalf("migration page after the cutover:\n%s", page)
		}
		list := readBody(mustGet(t, srv.Client(), srv.URL+"/migrations"))
		if !strings.Contains(list, "shop.public.orders") || !strings.Contains(list, "sales.orders") {
			t.Fatalf("migrations list:\n%s", list)
		}
		for id, want := range map[uuid.UUID]string{old.Asset.ID: "Moving to sales.orders", nw.Asset.ID: "Moved here from shop.public.orders"} {
			asset := readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+id.String()))
			// The other side is drawn, so the node list has it too (it counted only lineage nodes).
			if !strings.Contains(asset, want) || !strings.Contains(asset, "migrated_to") || !strings.Contains(asset, "other side of a migration") ||
				!strings.Contains(asset, "Nodes as a list (2)") {
				t.Fatalf("asset page of %s lacks %q, the migrated_to edge or the other side in the node list:\n%s", id, want, asset)
			}
		}
	})
}
