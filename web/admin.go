package web

// The admin and personal pages: API tokens (admins), a person's webhook with a test delivery
// and its recent deliveries, and the assets a person is subscribed to.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
)

func init() {
	flashes["token-revoked"] = "Token revoked: it no longer works, nor do the sessions signed in with it"
	flashes["own-token-revoked"] = "Token revoked: it was the one you signed in with, so you are signed out"
	flashes["webhook-saved"] = "Webhook saved"
	flashes["webhook-cleared"] = "Webhook cleared: nothing will be sent until one is set again"
	flashes["subscription-ended"] = "Unsubscribed: you will not hear of that asset's changes"
}

// deliveriesShown bounds the deliveries the webhooks page lists.
const deliveriesShown = 50

func (u *UI) adminRoutes() {
	u.handleFunc("GET /tokens", u.tokens)
	u.handleFunc("POST /tokens", u.createToken)
	u.handleFunc("POST /tokens/revoke", u.revokeToken)
	if u.cfg.Notify == nil {
		return
	}
	u.handleFunc("GET /webhooks", u.webhooks)
	u.handleFunc("POST /webhooks", u.changeWebhook)
	u.handleFunc("POST /webhooks/test", u.testWebhook)
	u.handleFunc("GET /subscriptions", u.mySubscriptions)
	u.handleFunc("POST /subscriptions", u.endSubscription)
}

// signedIn returns the session, or sends a person who is not signed in to the sign-in page
// (coming back here after) and returns nil.
func (u *UI) signedIn(w http.ResponseWriter, r *http.Request) *session {
	s := u.sessions.get(r)
	if s == nil {
		http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	}
	return s
}

// admin returns an admin's session; others are sent to sign in, or shown a 403 page.
func (u *UI) admin(w http.ResponseWriter, r *http.Request) *session {
	s := u.signedIn(w, r)
	if s != nil && !s.Admin {
		u.errorPage(w, r, http.StatusForbidden, "Only admins manage tokens: sign in with a token that has the admin scope.")
		return nil
	}
	return s
}

// adminForm checks a POST from an admin's page: its size, the session, the CSRF token, the scope.
func (u *UI) adminForm(w http.ResponseWriter, r *http.Request) *session {
	s := u.formSession(w, r, 16<<10)
	if s == nil {
		return nil
	}
	if !s.Admin {
		u.errorPage(w, r, http.StatusForbidden, "Only admins manage tokens: sign in with a token that has the admin scope.")
		return nil
	}
	return s
}

// tokenRow is one token on the tokens page; never its secret.
type tokenRow struct {
	Name       string
	Scopes     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	Yours      bool // the token this session signed in with
}

// tokensData is the tokens page: the list, the create form (as typed, with every problem),
// and the secret of the token just created, shown this once.
type tokensData struct {
	Tokens  []tokenRow
	Summary string
	Errors  []string
	Name    string
	Scopes  map[string]bool
	Created *createdToken
}

type createdToken struct {
	Name   string
	Scopes string
	Secret string
}

func (u *UI) tokens(w http.ResponseWriter, r *http.Request) {
	s := u.admin(w, r)
	if s == nil {
		return
	}
	u.renderTokens(w, r, s, http.StatusOK, tokensData{})
}

// renderTokens shows the tokens page with d's form state. It is never stored by a browser or a
// proxy: the response to a create holds a secret.
func (u *UI) renderTokens(w http.ResponseWriter, r *http.Request, s *session, status int, d tokensData) {
	toks, err := u.cfg.Tokens.List(r.Context())
	if err != nil {
		u.fail(w, r, err)
		return
	}
	live := 0
	for _, t := range toks {
		row := tokenRow{Name: t.Name, CreatedAt: t.CreatedAt.UTC(), LastUsedAt: utc(t.LastUsedAt), RevokedAt: utc(t.RevokedAt), Yours: t.Name == s.Name}
		strs := make([]string, len(t.Scopes))
		for i, sc := range t.Scopes {
			strs[i] = string(sc)
		}
		row.Scopes = strings.Join(strs, ", ")
		if t.RevokedAt == nil {
			live++
		}
		d.Tokens = append(d.Tokens, row)
	}
	d.Summary = fmt.Sprintf("%s, %d live", words.Count(int64(len(toks)), "token"), live)
	if d.Scopes == nil {
		d.Scopes = map[string]bool{}
	}
	w.Header().Set("Cache-Control", "no-store")
	u.render(w, r, status, "tokens", "Tokens", d)
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	x := t.UTC()
	return &x
}

// createToken makes a token and shows its secret in this response only: never in a URL, a
// cookie or a log, so it cannot be shown again.
func (u *UI) createToken(w http.ResponseWriter, r *http.Request) {
	s := u.adminForm(w, r)
	if s == nil {
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	d := tokensData{Name: name, Scopes: map[string]bool{}}
	var scopes []auth.Scope
	for _, sc := range r.PostForm["scope"] {
		if !slices.Contains(scopes, auth.Scope(sc)) {
			scopes = append(scopes, auth.Scope(sc))
			d.Scopes[sc] = true
		}
	}
	if d.Errors = auth.Problems(name, scopes); len(d.Errors) > 0 {
		u.renderTokens(w, r, s, http.StatusBadRequest, d)
		return
	}
	ctx := catalog.WithActor(r.Context(), s.actor())
	secret, tok, err := u.cfg.Tokens.WithAudit(u.cfg.Catalog).Create(ctx, name, scopes)
	if errors.Is(err, auth.ErrNameTaken) {
		d.Errors = []string{"A token named " + name + " exists already (live or revoked); pick another name."}
		u.renderTokens(w, r, s, http.StatusConflict, d)
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	strs := make([]string, len(tok.Scopes))
	for i, sc := range tok.Scopes {
		strs[i] = string(sc)
	}
	u.renderTokens(w, r, s, http.StatusOK, tokensData{Created: &createdToken{Name: tok.Name, Scopes: strings.Join(strs, ", "), Secret: secret}})
}

// revokeToken revokes the form's token. Revoking the token this session signed in with ends
// the session too (sessions end with their token), so that case goes to the home page.
func (u *UI) revokeToken(w http.ResponseWriter, r *http.Request) {
	s := u.adminForm(w, r)
	if s == nil {
		return
	}
	name := r.PostFormValue("name")
	err := u.cfg.Tokens.WithAudit(u.cfg.Catalog).Revoke(catalog.WithActor(r.Context(), s.actor()), name)
	if errors.Is(err, auth.ErrNoToken) {
		err = &catalog.Error{Kind: catalog.ErrNotFound, Message: "There is no token named " + name + "; reload the tokens page."}
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if name == s.Name {
		u.setCookie(w, r, "", -1)
		http.Redirect(w, r, "/?flash=own-token-revoked", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/tokens?flash=token-revoked", http.StatusSeeOther)
}

// webhooksData is the webhooks page of one principal.
type webhooksData struct {
	Principal  string
	Others     bool // an admin looking at another principal's webhook
	Set        bool
	URL        string
	UpdatedAt  time.Time
	CanChange  bool   // write scope
	Typed      string // the URL as typed, after a refused change
	Error      string
	Test       string // how the test delivery went, in words
	TestOK     bool
	Deliveries []deliveryRow
	Summary    string
}

type deliveryRow struct {
	Event       string
	CreatedAt   time.Time
	State       string
	Attempts    string
	LastError   string
	DeliveredAt *time.Time
}

// webhookPrincipal is whose webhook a request is about: the person's own, or (admins only)
// the principal asked for.
func (u *UI) webhookPrincipal(w http.ResponseWriter, r *http.Request, s *session, asked string) (string, bool) {
	if asked == "" || asked == s.Name {
		return s.Name, true
	}
	if !s.Admin {
		u.errorPage(w, r, http.StatusForbidden, "Only admins see other principals' webhooks; yours is at /webhooks.")
		return "", false
	}
	return asked, true
}

func (u *UI) webhooks(w http.ResponseWriter, r *http.Request) {
	s := u.signedIn(w, r)
	if s == nil {
		return
	}
	p, ok := u.webhookPrincipal(w, r, s, r.URL.Query().Get("principal"))
	if !ok {
		return
	}
	u.renderWebhooks(w, r, s, http.StatusOK, webhooksData{Principal: p})
}

// renderWebhooks reads d.Principal's webhook and deliveries and shows the page.
func (u *UI) renderWebhooks(w http.ResponseWriter, r *http.Request, s *session, status int, d webhooksData) {
	hook, ok, err := u.cfg.Notify.Webhook(r.Context(), d.Principal)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ds, err := u.cfg.Notify.Deliveries(r.Context(), d.Principal, deliveriesShown)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.Others, d.CanChange, d.Set = d.Principal != s.Name, s.Write, ok
	d.URL, d.UpdatedAt = hook.URL, hook.UpdatedAt
	failed := 0
	for _, x := range ds {
		if x.State == "failed" {
			failed++
		}
		d.Deliveries = append(d.Deliveries, deliveryRow{Event: x.Event, CreatedAt: x.CreatedAt, State: x.State,
			Attempts: words.Count(int64(x.Attempts), "attempt"), LastError: x.LastError, DeliveredAt: x.DeliveredAt})
	}
	d.Summary = fmt.Sprintf("%s, %d of them failed.", words.Count(int64(len(ds)), "notification"), failed)
	switch len(ds) {
	case 0:
		d.Summary = ""
	case deliveriesShown:
		d.Summary = "The newest " + d.Summary
	}
	u.render(w, r, status, "webhooks", "Webhooks", d)
}

// webhookForm checks a POST from the webhooks page (write scope, CSRF) and says whose webhook
// it is about.
func (u *UI) webhookForm(w http.ResponseWriter, r *http.Request) (*session, string) {
	s := u.editor(w, r)
	if s == nil {
		return nil, ""
	}
	p, ok := u.webhookPrincipal(w, r, s, r.PostFormValue("principal"))
	if !ok {
		return nil, ""
	}
	return s, p
}

// changeWebhook sets or clears the webhook, audited; a URL the domain refuses is shown again
// with the reason.
func (u *UI) changeWebhook(w http.ResponseWriter, r *http.Request) {
	s, p := u.webhookForm(w, r)
	if s == nil {
		return
	}
	raw, flash := strings.TrimSpace(r.PostFormValue("url")), "webhook-saved"
	if r.PostFormValue("action") == "clear" {
		raw, flash = "", "webhook-cleared"
	} else if raw == "" {
		u.renderWebhooks(w, r, s, http.StatusBadRequest, webhooksData{Principal: p, Error: "Type the webhook's URL (https://…), or use Clear to remove the webhook."})
		return
	}
	err := u.cfg.Notify.ChangeWebhook(catalog.WithActor(r.Context(), s.actor()), p, raw)
	var de *catalog.Error
	if errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid) {
		u.renderWebhooks(w, r, s, http.StatusBadRequest, webhooksData{Principal: p, Typed: raw, Error: de.Message})
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	to := "/webhooks?flash=" + flash
	if p != s.Name {
		to += "&principal=" + url.QueryEscape(p)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// testWebhook sends a test notification now and shows how it went.
func (u *UI) testWebhook(w http.ResponseWriter, r *http.Request) {
	s, p := u.webhookForm(w, r)
	if s == nil {
		return
	}
	res, err := u.cfg.Notify.TestDelivery(r.Context(), p)
	var de *catalog.Error
	if errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid) {
		u.renderWebhooks(w, r, s, http.StatusBadRequest, webhooksData{Principal: p, Error: de.Message})
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := webhooksData{Principal: p, TestOK: res.OK()}
	switch {
	case res.OK():
		d.Test = "The test notification arrived: the webhook answered " + statusWords(res.Status) + "."
	case res.Status != 0:
		d.Test = "The test notification was refused: the webhook answered " + statusWords(res.Status) + ". Real notifications would be retried."
	default:
		d.Test = "The test notification could not be delivered: " + res.Error + "."
	}
	u.renderWebhooks(w, r, s, http.StatusOK, d)
}

// statusWords is an HTTP status as a person reads it: "404 Not Found".
func statusWords(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}
