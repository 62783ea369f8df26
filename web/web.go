// Package web is Tidemark's browser UI: server-rendered pages (html/template, parsed and
// checked once at start, rendered into a buffer before anything is written), embedded static
// files and the vendored graph and chart libraries, and browser sessions. Page handlers call the
// domain packages directly; the JSON API is not involved. Anyone may browse; editing (curation,
// the glossary) needs a session signed in with a write token, deciding on a cleanup proposal an
// admin token, and either a CSRF token on the form.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/warehouse"
)

//go:embed templates static
var files embed.FS

// Config wires the UI to the domain.
type Config struct {
	Catalog *catalog.Catalog
	Lineage *lineage.Service
	Usage   *usage.Service
	Tables  *tables.Service
	// Warehouse serves Tidemark's own warehouses: a served table's commit health, and the edits
	// only the Iceberg REST catalog may make; nil shows and refuses neither.
	Warehouse *warehouse.Service
	Cleanup   *cleanup.Service
	// Notify keeps subscriptions to assets' changes; nil leaves the asset page's subscribe part out.
	Notify *notify.Service
	// Reconcile keeps dataset migrations; nil leaves their pages out.
	Reconcile *reconcile.Service
	// Versions keeps dataset versions and runs pinned to them; nil leaves the asset page's
	// versions section and the version pages out.
	Versions *versions.Service
	// Tokens verifies sign-ins and keeps the browser sessions.
	Tokens *auth.Store
	Logger *slog.Logger
	Now    func() time.Time
	// SessionTTL is how long a sign-in lasts (default 12 h).
	SessionTTL time.Duration
	// RequireSession makes every page but sign-in and static files need a signed-in session
	// (any token), as --auth-reads does for the JSON API.
	RequireSession bool
	// SecureCookies marks cookies Secure: set when the server is reached over TLS through a
	// proxy (--public-url https://...), where the request itself arrives in plain HTTP.
	SecureCookies bool
}

// UI serves the pages.
type UI struct {
	cfg      Config
	pages    map[string]*template.Template
	mux      *http.ServeMux
	sessions *sessions
	static   http.Handler
	mounts   []string // where the registered pages are mounted (Routes)
}

// Mount builds the UI and mounts its pages into the shell, with the error page as the answer
// to the shell's own refusals on them (a spent rate limit, a refused Host, a bad query). A path
// no face serves is a person's mistyped page: the UI answers it with its 404 page, and the
// shell's refusals on it with the error page too.
func Mount(srv *server.Server, cfg Config) (*UI, error) {
	u, err := New(cfg)
	if err != nil {
		return nil, err
	}
	e := srv.Echo()
	for _, p := range u.Routes() {
		e.Any(p, echo.WrapHandler(u))
		srv.ErrorModel(p, u.renderError)
	}
	srv.Fallback("/*", echo.WrapHandler(u))
	srv.ErrorModel("/*", u.renderError)
	return u, nil
}

// renderError answers an error the shell raised on a page's path with the error page.
func (u *UI) renderError(c echo.Context, err error) {
	w, r := c.Response(), c.Request()
	var se *server.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &se):
		u.errorPage(w, r, se.Status, se.Message)
	case errors.As(err, &he) && he.Code < 500:
		u.errorPage(w, r, he.Code, fmt.Sprint(he.Message))
	default:
		u.fail(w, r, err)
	}
}

// Routes lists the paths the UI serves (a trailing * matches the rest), for mounting it beside
// the API without shadowing the API's own 404s. They are recorded as the pages register, so a
// new page needs one edit.
func (u *UI) Routes() []string { return slices.Clone(u.mounts) }

// handle registers a page and records the path to mount it at: the pattern's path up to its
// first wildcard, with * for the rest ("GET /assets/{id}" is /assets/*; "GET /{$}" is /).
func (u *UI) handle(pattern string, h http.Handler) {
	u.mux.Handle(pattern, h)
	_, p, _ := strings.Cut(pattern, " ")
	switch i := strings.Index(p, "{"); {
	case strings.HasSuffix(p, "{$}"):
		p = strings.TrimSuffix(p, "{$}")
	case i >= 0:
		p = p[:i] + "*"
	case strings.HasSuffix(p, "/"):
		p += "*"
	}
	if !slices.Contains(u.mounts, p) {
		u.mounts = append(u.mounts, p)
	}
}

func (u *UI) handleFunc(pattern string, h http.HandlerFunc) { u.handle(pattern, h) }

// New parses every template and renders each view once with empty data, so a broken template
// fails at start rather than in front of a user.
func New(cfg Config) (*UI, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.Tokens == nil {
		return nil, errors.New("web: the UI needs the token store for sign-ins and sessions")
	}
	u := &UI{cfg: cfg, pages: map[string]*template.Template{}, mux: http.NewServeMux(),
		sessions: &sessions{tokens: cfg.Tokens, ttl: cfg.SessionTTL, log: cfg.Logger}}
	views, err := fs.Glob(files, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		name := path.Base(v)
		if name == "layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", v)
		if err != nil {
			return nil, fmt.Errorf("web: template %s: %w", name, err)
		}
		if err := t.Execute(&bytes.Buffer{}, page{Title: "check"}); err != nil {
			return nil, fmt.Errorf("web: template %s does not render: %w", name, err)
		}
		u.pages[strings.TrimSuffix(name, ".html")] = t
	}
	static, err := fs.Sub(files, "static")
	if err != nil {
		return nil, err
	}
	u.static = http.StripPrefix("/static/", noListing(cacheStatic(http.FileServerFS(static))))
	u.routes()
	return u, nil
}

func (u *UI) routes() {
	u.handle("GET /static/", u.static)
	// Browsers ask for /favicon.ico on every page whatever the page links.
	u.handleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/static/favicon.svg"
		u.static.ServeHTTP(w, r)
	})
	u.handleFunc("GET /{$}", u.home)
	u.handleFunc("GET /assets/{id}", u.asset)
	u.handleFunc("GET /assets/{id}/impact", u.impact)
	u.handleFunc("GET /assets/{id}/versions/{v}", u.versionPage)
	u.runRoutes()
	u.handleFunc("GET /proposals", u.proposals)
	u.handleFunc("GET /proposals/{id}", u.proposal)
	u.handleFunc("GET /proposals/{id}/approve", u.approveForm)
	u.handleFunc("GET /proposals/{id}/files", u.filesDownload)
	u.handleFunc("POST /proposals/{id}/{decision}", u.decide)
	u.queueRoutes()
	u.handleFunc("GET /scans", u.scans)
	u.handleFunc("GET /scans/{id}", u.scan)
	u.tablesRoutes()
	if u.cfg.Reconcile != nil {
		u.handleFunc("GET /migrations", u.migrations)
		u.handleFunc("POST /migrations", u.createMigration)
		u.handleFunc("GET /migrations/{id}", u.migration)
		u.handleFunc("POST /migrations/{id}/runs", u.runMigration)
		u.handleFunc("POST /migrations/{id}/cutover", u.cutOver)
	}
	u.curationRoutes()
	u.lifecycleRoutes()
	u.classificationRoutes()
	if u.cfg.Notify != nil {
		u.handleFunc("POST /assets/{id}/subscription", u.subscription)
	}
	u.handleFunc("GET /audit", u.audit)
	u.adminRoutes()
	u.handleFunc("GET /signin", u.signinForm)
	u.handleFunc("POST /signin", u.signin)
	u.handleFunc("POST /signout", u.signout)
	// Everything else is a page that does not exist: an HTML 404, not the mux's plain text.
	// (Not recorded in Routes: the server sends here only what nothing else serves.)
	u.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrNotFound, Message: "There is no page at " + r.URL.Path + ": try the search, or the links above."})
	})
}

// ServeHTTP serves the UI with the security headers every page carries.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if u.cfg.RequireSession && !public(r.URL.Path) && u.sessions.get(r) == nil {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	u.mux.ServeHTTP(w, r)
}

// public reports whether a path is served without a session when one is required.
func public(p string) bool {
	return p == "/signin" || strings.HasPrefix(p, "/static/")
}

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// page is what every view gets; Data is the view's own.
type page struct {
	Title   string
	Back    string // this page's path and query, for the sign-in link to come back to (not on sign-in)
	Session *session
	CSRF    string
	Flash   string
	Data    any
	// Notify: webhooks and subscriptions are kept, so their pages are linked.
	Notify bool
}

// render executes a view into a buffer, then writes it: a failing template never sends half a
// page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, view, title string, data any) {
	t := u.pages[view]
	if t == nil {
		u.fail(w, r, fmt.Errorf("web: no view %q", view))
		return
	}
	s := u.sessions.get(r)
	p := page{Title: title, Session: s, Data: data, Flash: flashes[r.URL.Query().Get("flash")], Notify: u.cfg.Notify != nil}
	if !strings.HasPrefix(r.URL.Path, "/signin") {
		p.Back = r.URL.RequestURI()
	}
	if s != nil {
		p.CSRF = s.CSRF
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		u.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

type errorData struct {
	Status  int
	Message string
}

// fail answers a domain error with an error page a person can act on.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "Something went wrong on our side; the log has the details."
	var de *catalog.Error
	switch {
	case errors.As(err, &de) && errors.Is(err, catalog.ErrNotFound):
		status, msg = http.StatusNotFound, de.Message
	case errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid):
		status, msg = http.StatusBadRequest, de.Message
	case errors.As(err, &de) && (errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrStaleVersion)):
		status, msg = http.StatusConflict, de.Message
	case errors.Is(err, context.Canceled):
		return
	case catalog.Unavailable(err):
		status, msg = http.StatusServiceUnavailable, "The database is unreachable or busy right now; try again in a few seconds."
		w.Header().Set("Retry-After", "5")
		u.cfg.Logger.Warn("web page: database unavailable", "path", r.URL.Path, "err", err)
	default:
		u.cfg.Logger.Error("web page failed", "path", r.URL.Path, "err", err)
	}
	u.errorPage(w, r, status, msg)
}

// errorPage answers with the error page: a status and a message a person can act on.
func (u *UI) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	t := u.pages["error"]
	var buf bytes.Buffer
	if t == nil || t.Execute(&buf, page{Title: http.StatusText(status), Session: u.sessions.get(r), Data: errorData{status, msg}, Notify: u.cfg.Notify != nil}) != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// flashes are the only banner messages: a link names one by key, so nobody can put their own
// text on the site's pages.
var flashes = map[string]string{
	"decided":              "Decision recorded",
	"cancelled":            "Approval cancelled: nothing of this proposal will be executed",
	"description-saved":    "Description saved",
	"column-saved":         "Column description saved",
	"owner-added":          "Owner saved",
	"owner-removed":        "Owner removed",
	"tag-added":            "Tag added",
	"tag-removed":          "Tag removed",
	"term-linked":          "Glossary term linked",
	"term-unlinked":        "Glossary term unlinked",
	"suggestion-accepted":  "Suggestion accepted: the tag is on the column",
	"suggestion-rejected":  "Suggestion rejected: it will not be suggested again",
	"renamed":              "Renamed: the former name still resolves to this asset",
	"deprecated":           "Marked deprecated",
	"undeprecated":         "No longer deprecated",
	"deleted":              "Deleted from the catalog (the data itself was not touched)",
	"restored":             "Restored",
	"classification-saved": "Classification saved",
	"term-created":         "Glossary term created",
	"term-saved":           "Glossary term saved",
}

// noListing answers 404 for directories under /static/: files are served, listings are not.
func noListing(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") || !strings.Contains(path.Base(r.URL.Path), ".") {
			http.NotFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}
