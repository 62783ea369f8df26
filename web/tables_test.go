package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/web"
)

// tablesWorld is a UI over two tables synced from an Iceberg SQL catalog ("lake": db.events and
// db.clicks) and one registered by metadata location (db.registered), db.events scanned and
// reference-checked once, with an open high-severity dangling-reference proposal.
type tablesWorld struct {
	url                      string
	svc                      *cleanup.Service
	events, clicks, register uuid.UUID
}

func newTablesWorld(t *testing.T, db *storage.DB) tablesWorld {
	t.Helper()
	ctx := context.Background()
	lake, other := tablestest.NewLake(t), tablestest.NewLake(t)
	lake.Append(lake.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
	lake.Append(lake.Create("db.clicks", nil), tablestest.Rows(0, 2, time.Now()))
	reg := other.Append(other.Create("db.registered", nil), tablestest.Rows(0, 1, time.Now()))
	var w tablesWorld
	var tbls *tables.Service
	srv, _ := newUIWith(t, db, func(c *web.Config) {
		var err error
		tbls, err = tables.New(db, c.Catalog, tables.WithWarehouseRoots(lake.Dir, other.Dir),
			tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, lake.Cat)))
		if err != nil {
			t.Fatal(err)
		}
		c.Tables = tbls
		w.svc = mustCleanup(t, db, c.Catalog, tbls)
		c.Cleanup = w.svc
	})
	w.url = srv.URL
	rep, err := tbls.Sync(ctx, nil)
	if err != nil || rep.Added != 2 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	for _, a := range rep.Connections[0].Added {
		if strings.HasSuffix(a.Identifier, "events") {
			w.events = a.AssetID
		} else {
			w.clicks = a.AssetID
		}
	}
	r, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: reg.MetadataLocation()})
	if err != nil {
		t.Fatal(err)
	}
	w.register = r.AssetID
	if _, err := w.svc.Scan(ctx, w.events, cleanup.ScanOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.CheckRefs(ctx, w.events, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := db.Client.Proposal.Create().SetKind(proposal.KindDanglingReference).SetAssetID(w.events).SetState(proposal.StateOpen).
		SetSeverity(proposal.SeverityHigh).SetEvidence(`{"summary":"1 file the current snapshot references is missing"}`).
		SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestTablesPage: the tables page lists every table with where it comes from, its health (the
// high-severity finding first), its last scan and reference check, and the catalog's last sync;
// the name filter and the page count agree, on both databases.
func TestTablesPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newTablesWorld(t, db)
		for _, tc := range []struct {
			name, query string
			want, not   []string
		}{
			{"All", "", []string{"1–3 of 3 tables", "events", "clicks", "registered", "synced from catalog lake as db.events",
				"registered by metadata location", "dangling_reference", "1 file the current snapshot references is missing",
				"1 data file,", "never scanned", "never checked", `href="/scans/`, "0 dangling", "Catalog syncs", "ok"}, []string{`class="inline-form scan-now"`}},
			{"ByName", "CLICK", []string{"1–1 of 1 table", "clicks"}, []string{"db.events", "registered by"}},
			{"ByIdentifier", "db.events", []string{"1–1 of 1 table", "synced from catalog lake as db.events"}, []string{"clicks"}},
			{"Nothing", "nope", []string{"No table matches."}, []string{"data file"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := mustGet(t, http.DefaultClient, w.url+"/tables?q="+url.QueryEscape(tc.query))
				body := readBody(r)
				if r.StatusCode != 200 {
					t.Fatalf("status %d", r.StatusCode)
				}
				for _, s := range tc.want {
					if !strings.Contains(body, s) {
						t.Errorf("the page lacks %q", s)
					}
				}
				for _, s := range tc.not {
					if strings.Contains(body, s) {
						t.Errorf("the page has %q", s)
					}
				}
			})
		}
		// Asking for a scan needs a session and the form's CSRF token: nothing is recorded without.
		r, err := http.PostForm(w.url+"/tables/"+w.clicks.String()+"/scans", url.Values{"back": {"/tables"}})
		if err != nil {
			t.Fatal(err)
		}
		if p, _ := w.svc.PendingScanRequests(context.Background(), nil); r.StatusCode != http.StatusForbidden || len(p) != 0 {
			t.Fatalf("an anonymous request: %d, recorded %v", r.StatusCode, p)
		}
	})
}

// TestScanNowBrowser: in a real browser, a person signed in with a write token presses "Scan now"
// on the tables page; the request is recorded (not run), shows as pending on the tables and
// scans pages, and once the scheduler's round has run it, the row shows that scan instead.
func TestScanNowBrowser(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	w := newTablesWorld(t, db)
	ctx := context.Background()
	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, _ := browserOps(t, bctx)
	row := "#table-" + w.clicks.String()
	must(chromedp.Do(bctx, chromedp.Navigate(w.url+"/signin?next=/tables"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("signin-submit"))))
	must(err)
	must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("tables"))))
	shot(t, bctx, "tables")
	if events := text("#table-" + w.events.String()); !strings.Contains(events, "dangling_reference") || !strings.Contains(events, "1 data file, 1.2 KiB") ||
		!strings.Contains(events, "walk") || !strings.Contains(events, "finished") {
		t.Fatalf("the scanned table's row: %q", events)
	}
	if before := text(row); strings.Contains(before, "pending") || !strings.Contains(before, "never scanned") {
		t.Fatalf("db.clicks before the request: %q", before)
	}

	_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(row+" .scan-now button"))))
	must(err)
	if flash := text(".flash"); !strings.Contains(flash, "Scan requested") {
		t.Fatalf("flash after Scan now: %q", flash)
	}
	if after := text(row); !strings.Contains(after, "pending") || !strings.Contains(after, "full walk requested") || !strings.Contains(after, "web:alice") ||
		!strings.Contains(after, "never scanned") {
		t.Fatalf("db.clicks after the request: %q", after)
	}
	shot(t, bctx, "tables-scan-requested")
	pending, err := w.svc.PendingScanRequests(ctx, nil)
	must(err)
	if len(pending) != 1 || len(pending[w.clicks]) != 1 || pending[w.clicks][0].Actor != "web:alice" {
		t.Fatalf("recorded requests: %+v", pending)
	}
	if scans, _ := w.svc.Scans(ctx, cleanup.ScanFilter{AssetID: w.clicks, Limit: 1}); len(scans) != 0 {
		t.Fatal("the page ran the scan itself")
	}
	must(chromedp.Do(bctx, chromedp.Navigate(w.url+"/scans"), chromedp.WaitVisible(chromedp.ID("requested-list"))))
	if list := text("#requested-list"); !strings.Contains(list, "clicks") || !strings.Contains(list, "pending") {
		t.Fatalf("the scans page's requested scans: %q", list)
	}
	shot(t, bctx, "scans-requested")

	// The scheduler's round answers it.
	if n, err := w.svc.ScanRequested(ctx, cleanup.ScanOptions{}); err != nil || n != 1 {
		t.Fatalf("the scheduler's round: %d scans, %v", n, err)
	}
	must(chromedp.Do(bctx, chromedp.Navigate(w.url+"/tables"), chromedp.WaitVisible(chromedp.ID("tables"))))
	if done := text(row); strings.Contains(done, "pending") || !strings.Contains(done, "walk") || strings.Contains(done, "never scanned") {
		t.Fatalf("db.clicks after the scheduler's round: %q", done)
	}
	shot(t, bctx, "tables-scan-answered")
}
