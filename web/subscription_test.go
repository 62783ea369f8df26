package web_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// TestSubscribeFromAssetPage: a signed-in person subscribes from the asset page, is told their
// principal has no webhook and how to set one, the button flips to Unsubscribe, and back; a
// form without the page's CSRF token is refused.
func TestSubscribeFromAssetPage(t *testing.T) {
	bin := chromium(t)
	ctx := context.Background()
	db := storagetest.Open(t, storagetest.Backends[0])
	var svc *notify.Service
	srv, cat := newUIWith(t, db, func(c *web.Config) { svc = c.Notify })
	res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Asset.ID.String()
	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeWrite})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	subscribers := func() []string {
		t.Helper()
		subs, err := svc.Subscriptions(ctx, res.Asset.ID)
		must(err)
		var out []string
		for _, s := range subs {
			out = append(out, s.Principal)
		}
		return out
	}
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/assets/"+id), chromedp.WaitVisible(chromedp.ID("subscribe-button"))))
	if b, s := text("#subscribe-button"), text("#subscription-state"); b != "Subscribe" || !strings.Contains(s, "are not subscribed") {
		t.Fatalf("before: button %q, state %q", b, s)
	}
	click("#subscribe-button")
	if b, s := text("#subscribe-button"), text("#subscription-state"); b != "Unsubscribe" || !strings.Contains(s, "You (alice) are subscribed") {
		t.Fatalf("after subscribing: button %q, state %q", b, s)
	}
	if hook := text("#webhook-state"); !strings.Contains(hook, "No webhook is set for alice") || !strings.Contains(hook, "PUT /api/v1/webhooks/alice") {
		t.Fatalf("webhook hint: %q", hook)
	}
	if got := subscribers(); len(got) != 1 || got[0] != "alice" {
		t.Fatalf("subscribers after subscribing: %v", got)
	}
	shot(t, bctx, "asset-subscribed")

	must(svc.SetWebhook(ctx, "alice", "https://hooks.example.com/alice"))
	must(chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("webhook-state"))))
	if hook := text("#webhook-state"); !strings.Contains(hook, "go to the webhook set for alice") || strings.Contains(hook, "hooks.example.com") {
		t.Fatalf("webhook state once set (never its URL): %q", hook)
	}
	click("#subscribe-button")
	if b := text("#subscribe-button"); b != "Subscribe" {
		t.Fatalf("after unsubscribing: button %q", b)
	}
	if got := subscribers(); len(got) != 0 {
		t.Fatalf("subscribers after unsubscribing: %v", got)
	}

	// A forged subscription (no session, no CSRF token) is refused and writes nothing.
	jar, _ := cookiejar.New(nil)
	r, err := (&http.Client{Jar: jar}).PostForm(srv.URL+"/assets/"+id+"/subscription", url.Values{"action": {"subscribe"}})
	must(err)
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden || len(subscribers()) != 0 {
		t.Fatalf("forged subscription: %d, subscribers %v", r.StatusCode, subscribers())
	}
}
