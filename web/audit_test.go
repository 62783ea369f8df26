package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestAuditPage: each change reads as a diff, and the log filters by actor, action and asset;
// assets are named, never shown by the time-based start of their IDs.
func TestAuditPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		ctx := context.Background()
		alice := catalog.WithActor(ctx, "web:alice")
		a, err := cat.Create(alice, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Create(catalog.WithActor(ctx, "token:ci"), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "events"}); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Rename(alice, a.Asset.ID, catalog.AnyVersion, "db", "sales_orders"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, query  string
			has, hasNot  []string
			status, rows int
		}{
			{"All", "", []string{"<del>orders</del> → <ins>sales_orders</ins>", "db / sales_orders", "db / events"}, nil, 200, 3},
			{"Actor", "?actor=token:ci", []string{"db / events"}, []string{"sales_orders"}, 200, 1},
			{"Action", "?action=asset.rename", []string{"sales_orders"}, []string{"db / events"}, 200, 1},
			{"Asset", "?asset=" + a.Asset.ID.String(), []string{`id="audit-asset"`, "<strong>db / sales_orders</strong>"}, []string{"db / events"}, 200, 2},
			{"Nothing", "?actor=nobody", []string{"Nothing matches these filters"}, nil, 200, 0},
			{"BadAsset", "?asset=orders", []string{"asset ID"}, nil, 400, 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := mustGet(t, srv.Client(), srv.URL+"/audit"+tc.query)
				body := readBody(r)
				if r.StatusCode != tc.status {
					t.Fatalf("status %d", r.StatusCode)
				}
				for _, want := range tc.has {
					if !strings.Contains(body, want) {
						t.Errorf("lacks %q", want)
					}
				}
				for _, not := range tc.hasNot {
					if strings.Contains(body, not) {
						t.Errorf("has %q", not)
					}
				}
				if tc.status == 200 && strings.Count(body, `class="diff"`) != tc.rows {
					t.Errorf("%d changes listed, want %d", strings.Count(body, `class="diff"`), tc.rows)
				}
			})
		}
		// Short IDs are the random tail of a UUIDv7, not its time-based start.
		id := orphanProposal(t, db, cat, "db.t", 1, proposal.StateOpen)
		s := id.String()
		if title := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals/"+s)); !strings.Contains(title, "<title>Proposal "+s[len(s)-8:]) {
			t.Fatalf("proposal page title does not carry the ID's tail %s", s[len(s)-8:])
		}
	})
}

// TestAuditBrowser: in a real browser, the diff reads before -> after, and the actor filter
// narrows the log.
func TestAuditBrowser(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	srv, cat := newUI(t, db)
	ctx := context.Background()
	a, err := cat.Create(catalog.WithActor(ctx, "web:alice"), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Rename(catalog.WithActor(ctx, "web:alice"), a.Asset.ID, catalog.AnyVersion, "db", "sales_orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Create(catalog.WithActor(ctx, "token:ci"), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "events"}); err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/audit"), chromedp.WaitVisible(chromedp.ID("audit"))); err != nil {
		t.Fatal(err)
	}
	shot(t, bctx, "audit")
	diff, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#audit tbody tr:nth-child(2) table.diff")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, "name") || !strings.Contains(diff, "orders → sales_orders") {
		t.Fatalf("rename diff: %q", diff)
	}
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("f-actor"), "token:ci")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS("#audit-filter button")))); err != nil {
		t.Fatal(err)
	}
	loc, _ := chromedp.Run(bctx, chromedp.Location())
	rows, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#audit > tbody > tr > td:nth-child(2)")].map(td => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := url.Parse(loc); u.Query().Get("actor") != "token:ci" || len(rows) != 1 || rows[0] != "token:ci" {
		t.Fatalf("filtered by actor (%s): %v", loc, rows)
	}
	shot(t, bctx, "audit-filtered")
	// Signing in from here comes back here.
	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "bob", []auth.Scope{auth.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("signin-link")))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.ID("signin-submit")))); err != nil {
		t.Fatal(err)
	}
	back, _ := chromedp.Run(bctx, chromedp.Location())
	who, _ := chromedp.Run(bctx, chromedp.Text(chromedp.ID("who")))
	if u, _ := url.Parse(back); u.Path != "/audit" || u.Query().Get("actor") != "token:ci" || !strings.Contains(who, "bob") {
		t.Fatalf("after signing in from the filtered audit log: %s as %q", back, who)
	}
}
