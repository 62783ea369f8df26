package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

var secretOnPage = regexp.MustCompile(`tdm_[A-Za-z0-9_-]{20,}`)

// TestTokensBrowser: an admin creates a read token on the tokens page, sees its secret once
// (and the secret works), does not see it again on the next visit, revokes it, and the list and
// the store agree it is revoked.
func TestTokensBrowser(t *testing.T) {
	bin := chromium(t)
	ctx := context.Background()
	db := storagetest.Open(t, storagetest.Backends[0])
	var svc *notify.Service
	srv, cat := newUIWith(t, db, func(c *web.Config) { svc = c.Notify })
	store := auth.NewStore(db.Client, nil)
	root, _, err := store.Create(ctx, "root", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), root)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/tokens"), chromedp.WaitVisible(chromedp.ID("token-create")),
		chromedp.SendKeys(chromedp.ID("token-name"), "ci-reader"), chromedp.Click(chromedp.ID("scope-read"))))
	click("#token-create-submit")
	secret := text("#token-secret")
	if !strings.HasPrefix(secret, "tdm_") || !strings.Contains(text("#token-created"), "cannot be shown again") {
		t.Fatalf("created: secret %q, note %q", secret, text("#token-created"))
	}
	tok, err := store.Verify(ctx, secret)
	if err != nil || tok.Name != "ci-reader" || tok.Allows(auth.ScopeWrite) || !tok.Allows(auth.ScopeRead) {
		t.Fatalf("the shown secret verifies as %+v, %v", tok, err)
	}
	shot(t, bctx, "tokens")

	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/tokens"), chromedp.WaitVisible(chromedp.ID("tokens"))))
	html, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	must(err)
	if strings.Contains(html, secret) || strings.Contains(html, "token-secret") {
		t.Fatal("the secret is shown again on the next visit")
	}
	if s := text(`tr[data-token="ci-reader"] .token-state`); s != "live" {
		t.Fatalf("ci-reader before revoking: %q", s)
	}
	click(`tr[data-token="ci-reader"] button.revoke`)
	if s := text(`tr[data-token="ci-reader"] .token-state`); !strings.HasPrefix(s, "revoked ") {
		t.Fatalf("ci-reader after revoking: %q", s)
	}
	if _, err := store.Verify(ctx, secret); err == nil {
		t.Fatal("the revoked token still verifies")
	}
	if s := text(`tr[data-token="root"] .token-state`); s != "live" {
		t.Fatalf("root after revoking ci-reader: %q", s)
	}

	// The admin's own webhook, tried with a test notification (the UI's notify service refuses
	// loopback, as production does, so the outcome is a refusal in words).
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/webhooks"), chromedp.WaitVisible(chromedp.ID("webhook-form")),
		chromedp.SendKeys(chromedp.ID("webhook-url-input"), "http://127.0.0.1:9/hook")))
	click("#webhook-save")
	click("#webhook-test")
	if s := text("#webhook-test-result"); !strings.Contains(s, "could not be delivered") || !strings.Contains(s, "loopback, private or link-local") {
		t.Fatalf("test notification to loopback: %q", s)
	}
	shot(t, bctx, "webhooks")

	res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders"})
	must(err)
	_, _, err = svc.Subscribe(ctx, res.Asset.ID, "root")
	must(err)
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/subscriptions"), chromedp.WaitVisible(chromedp.ID("subscriptions"))))
	if s := text("#subscriptions tbody td a"); s != "warehouse.orders" {
		t.Fatalf("subscriptions list: %q", s)
	}
	shot(t, bctx, "subscriptions")
	click("#subscriptions button.unsubscribe")
	if s := text("#subscriptions tbody"); !strings.Contains(s, "None yet") {
		t.Fatalf("after unsubscribing: %q", s)
	}
}

// TestTokensPage: only admins see the tokens page; a form with no name and no scope says both
// at once and creates nothing; a form without the CSRF token is refused and writes nothing; the
// secret is in the create's answer only (not stored by the browser); create and revoke are
// audited without the secret; revoking one's own token signs one out.
func TestTokensPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, cat := newUI(t, db)
		store := auth.NewStore(db.Client, nil)
		count := func() int {
			t.Helper()
			toks, err := store.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return len(toks)
		}
		if st, body := signIn(t, srv, db, "writer", auth.ScopeWrite).get("/tokens"); st != http.StatusForbidden || !strings.Contains(body, "Only admins manage tokens") {
			t.Fatalf("non-admin GET /tokens: %d\n%s", st, body)
		}
		anon := signIn(t, srv, db, "", "")
		if r := mustGet(t, anon.c, srv.URL+"/tokens"); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/signin?next=%2Ftokens" {
			t.Fatalf("anonymous GET /tokens: %d to %q", r.StatusCode, r.Header.Get("Location"))
		}
		admin := signIn(t, srv, db, "root", auth.ScopeAdmin)
		before := count()

		st, _, body := admin.post("/tokens", url.Values{"name": {""}})
		if st != http.StatusBadRequest || !strings.Contains(body, "Give the token a name.") || !strings.Contains(body, "Pick at least one scope.") || count() != before {
			t.Fatalf("empty form: %d, %d tokens (was %d)\n%s", st, count(), before, body)
		}
		if st, _, _ := admin.post("/tokens", url.Values{"name": {"forged"}, "scope": {"admin"}, "csrf": {""}}); st != http.StatusForbidden || count() != before {
			t.Fatalf("no CSRF: %d, %d tokens (was %d)", st, count(), before)
		}

		admin.csrf = csrfField.FindStringSubmatch(mustBody(t, admin, "/tokens"))[1]
		r, err := admin.c.PostForm(srv.URL+"/tokens", url.Values{"csrf": {admin.csrf}, "name": {"airflow"}, "scope": {"read", "write"}})
		if err != nil {
			t.Fatal(err)
		}
		body = readBody(r)
		secret := secretOnPage.FindString(body)
		if r.StatusCode != http.StatusOK || secret == "" || r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Location") != "" {
			t.Fatalf("create: %d, cache %q, secret found %v", r.StatusCode, r.Header.Get("Cache-Control"), secret != "")
		}
		if tok, err := store.Verify(ctx, secret); err != nil || !tok.Allows(auth.ScopeWrite) || tok.Allows(auth.ScopeAdmin) {
			t.Fatalf("created token: %+v %v", tok, err)
		}
		if st, _, body := admin.post("/tokens", url.Values{"name": {"airflow"}, "scope": {"read"}}); st != http.StatusConflict || !strings.Contains(body, "exists already") {
			t.Fatalf("same name again: %d", st)
		}
		if st, _, _ := admin.post("/tokens/revoke", url.Values{"name": {"airflow"}, "csrf": {"forged"}}); st != http.StatusForbidden {
			t.Fatalf("revoke without CSRF: %d", st)
		}
		if _, err := store.Verify(ctx, secret); err != nil {
			t.Fatalf("a refused revoke revoked: %v", err)
		}
		if st, loc, _ := admin.post("/tokens/revoke", url.Values{"name": {"airflow"}}); st != http.StatusSeeOther || loc != "/tokens?flash=token-revoked" {
			t.Fatalf("revoke: %d to %q", st, loc)
		}
		if _, err := store.Verify(ctx, secret); err == nil {
			t.Fatal("revoked token verifies")
		}
		if _, page := admin.get("/tokens"); strings.Contains(page, secret) || !strings.Contains(page, "Last used") {
			t.Fatal("the list shows the secret, or no last use")
		}

		evs, err := cat.AuditEvents(ctx, catalog.AuditFilter{Action: "token", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 2 || evs[0].Action != auth.ActionTokenRevoke || evs[1].Action != auth.ActionTokenCreate || evs[1].Actor != "web:root" ||
			!strings.Contains(string(evs[1].After), "airflow") || strings.Contains(string(evs[1].After)+string(evs[0].After), secret[4:]) {
			t.Fatalf("audit: %+v", evs)
		}

		if st, loc, _ := admin.post("/tokens/revoke", url.Values{"name": {"root"}}); st != http.StatusSeeOther || loc != "/?flash=own-token-revoked" {
			t.Fatalf("revoke own token: %d to %q", st, loc)
		}
		if r := mustGet(t, admin.c, srv.URL+"/tokens"); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("after revoking one's own token, /tokens: %d", r.StatusCode)
		}
	})
}

func mustBody(t *testing.T, b *browser, path string) string {
	t.Helper()
	st, body := b.get(path)
	if st != http.StatusOK {
		t.Fatalf("GET %s: %d", path, st)
	}
	return body
}

// TestWebhooksPage: a person sets their webhook (a bad URL is refused with the reason), sends a
// test notification to a receiver and sees its status, sees a failed notification with its
// error, cannot touch another principal's webhook (an admin can see it), and clears it; the
// change is audited, a form without the CSRF token writes nothing.
func TestWebhooksPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		srv, cat := newUIWith(t, db, func(c *web.Config) {
			n, err := notify.New(db, c.Catalog, notify.WithPrivateWebhooks(true)) // the receiver listens on loopback
			if err != nil {
				t.Fatal(err)
			}
			c.Notify = n
		})
		var event string
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			event = r.Header.Get("X-Tidemark-Event")
			w.WriteHeader(http.StatusAccepted)
		}))
		defer recv.Close()
		if r := mustGet(t, signIn(t, srv, db, "", "").c, srv.URL+"/webhooks"); r.StatusCode != http.StatusSeeOther {
			t.Fatalf("anonymous /webhooks: %d", r.StatusCode)
		}
		alice := signIn(t, srv, db, "alice", auth.ScopeWrite)
		if page := mustBody(t, alice, "/webhooks"); !strings.Contains(page, "No webhook is set") {
			t.Fatal("no 'not set' on a fresh page")
		}
		if st, _, body := alice.post("/webhooks", url.Values{"url": {"ftp://files.example.com"}}); st != http.StatusBadRequest || !strings.Contains(body, "is not an http(s) URL") {
			t.Fatalf("ftp URL: %d", st)
		}
		if st, _, _ := alice.post("/webhooks", url.Values{"url": {recv.URL + "/hook"}, "csrf": {""}}); st != http.StatusForbidden {
			t.Fatalf("no CSRF: %d", st)
		}
		if page := mustBody(t, alice, "/webhooks"); !strings.Contains(page, "No webhook is set") {
			t.Fatal("a refused form set the webhook")
		}
		alice.mustPost("/webhooks", url.Values{"url": {recv.URL + "/hook"}, "action": {"set"}}, "webhook-saved")
		if page := mustBody(t, alice, "/webhooks"); !strings.Contains(page, recv.URL+"/hook") {
			t.Fatal("the set URL is not shown")
		}
		if st, _, body := alice.post("/webhooks/test", url.Values{}); st != http.StatusOK || !strings.Contains(body, "answered 202 Accepted") || event != notify.TestEvent {
			t.Fatalf("test delivery: %d, event %q\n%s", st, event, body)
		}
		if err := db.Client.OutboxMessage.Create().SetEvent("asset.changed").SetRecipient("alice").SetURL(recv.URL).SetPayload("{}").
			SetState("failed").SetAttempts(notify.MaxAttempts).SetLastError("notify: webhook answered 502 Bad Gateway").
			SetNextAttemptAt(cat.Now()).SetCreatedAt(cat.Now()).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if page := mustBody(t, alice, "/webhooks"); !strings.Contains(page, `class="delivery-failed"`) || !strings.Contains(page, "502 Bad Gateway") || !strings.Contains(page, "20 attempts") {
			t.Fatalf("failed notification not listed:\n%s", page)
		}
		if st, _, _ := alice.post("/webhooks", url.Values{"url": {"https://evil.example.com"}, "principal": {"bob"}}); st != http.StatusForbidden {
			t.Fatalf("alice sets bob's webhook: %d", st)
		}
		if page := mustBody(t, signIn(t, srv, db, "root", auth.ScopeAdmin), "/webhooks?principal=alice"); !strings.Contains(page, recv.URL+"/hook") {
			t.Fatal("an admin does not see alice's webhook")
		}
		alice.mustPost("/webhooks", url.Values{"action": {"clear"}}, "webhook-cleared")
		if page := mustBody(t, alice, "/webhooks"); !strings.Contains(page, "No webhook is set") {
			t.Fatal("cleared webhook still shown")
		}
		evs, err := cat.AuditEvents(ctx, catalog.AuditFilter{Action: "webhook", Actor: "web:alice", Limit: 10})
		if err != nil || len(evs) != 2 || evs[1].Action != notify.ActionWebhookSet || evs[0].Action != notify.ActionWebhookClear {
			t.Fatalf("audit: %+v %v", evs, err)
		}
	})
}

// TestMySubscriptionsPage: the subscriptions page lists the person's subscription by asset
// name with a link, unsubscribes with the page's form, and sends anonymous visitors to sign in.
func TestMySubscriptionsPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var svc *notify.Service
		srv, cat := newUIWith(t, db, func(c *web.Config) { svc = c.Notify })
		res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		id := res.Asset.ID.String()
		if r := mustGet(t, signIn(t, srv, db, "", "").c, srv.URL+"/subscriptions"); r.StatusCode != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/signin") {
			t.Fatalf("anonymous /subscriptions: %d", r.StatusCode)
		}
		alice := signIn(t, srv, db, "alice", auth.ScopeWrite)
		if _, _, err := svc.Subscribe(ctx, res.Asset.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		if page := mustBody(t, alice, "/subscriptions"); !strings.Contains(page, `href="/assets/`+id+`">warehouse.orders</a>`) || !strings.Contains(page, "subscribed to 1 asset.") {
			t.Fatalf("subscription not listed:\n%s", page)
		}
		if st, _, _ := alice.post("/subscriptions", url.Values{"asset": {id}, "csrf": {""}}); st != http.StatusForbidden {
			t.Fatalf("unsubscribe without CSRF: %d", st)
		}
		alice.mustPost("/subscriptions", url.Values{"asset": {id}}, "subscription-ended")
		subs, err := svc.Subscriptions(ctx, res.Asset.ID)
		if err != nil || len(subs) != 0 {
			t.Fatalf("after unsubscribing: %+v %v", subs, err)
		}
		if page := mustBody(t, alice, "/subscriptions"); !strings.Contains(page, "None yet") {
			t.Fatal("the list is not empty after unsubscribing")
		}
	})
}
