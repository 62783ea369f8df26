package web

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/auth"
)

const cookieName = "tidemark_session"

// session is a signed-in browser (see auth.Session) and the cookie secret that names it.
type session struct {
	auth.Session
	id string // the cookie value; the database keeps only its hash
}

// sessions reads and writes browser sessions through the auth store.
type sessions struct {
	tokens *auth.Store
	ttl    time.Duration
	log    *slog.Logger
}

func (s *sessions) create(ctx context.Context, tok auth.Token) (*session, error) {
	id, x, err := s.tokens.CreateSession(ctx, tok, s.ttl)
	return &session{Session: x, id: id}, err
}

func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	x, ok, err := s.tokens.Session(r.Context(), c.Value)
	if err != nil {
		s.log.Warn("read a web session", "err", err)
	}
	if !ok {
		return nil
	}
	return &session{Session: x, id: c.Value}
}

func (s *sessions) drop(r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		if err := s.tokens.EndSession(r.Context(), c.Value); err != nil {
			s.log.Warn("delete a web session", "err", err)
		}
	}
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: u.secure(r), SameSite: http.SameSiteStrictMode})
}

// signinCSRF protects the sign-in form itself with a double-submit cookie.
const signinCookie = "tidemark_signin"

type signinData struct {
	Error string
	CSRF  string
	Next  string // where to go once signed in
}

// localPath keeps a sign-in's return address on this site: a clean local path, never another
// origin. Browsers drop tabs and newlines from a URL and read a backslash as a slash, so
// "/\t/evil.example" and "/\\evil.example" lead off-site as "//evil.example" does. Those,
// absolute URLs, and anything with control characters or white space (also percent-encoded in
// the path, where no page of ours has them) fall back to the home page.
func localPath(p string) string {
	if !cleanStart(p) || strings.HasPrefix(p, "/signin") || strings.ContainsFunc(p, unclean) {
		return "/"
	}
	path, _, _ := strings.Cut(p, "?")
	path, _, _ = strings.Cut(path, "#")
	if dec, err := url.PathUnescape(path); err != nil || !cleanStart(dec) || strings.ContainsFunc(dec, unclean) {
		return "/"
	}
	if u, err := url.Parse(p); err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil {
		return "/"
	}
	return p
}

// cleanStart: one slash, and neither a slash nor a backslash right after it.
func cleanStart(p string) bool {
	return strings.HasPrefix(p, "/") && (len(p) == 1 || p[1] != '/' && p[1] != '\\')
}

func unclean(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError }

func (u *UI) signinForm(w http.ResponseWriter, r *http.Request) {
	tok := auth.Random()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: tok, Path: "/signin", MaxAge: 600, HttpOnly: true, Secure: u.secure(r), SameSite: http.SameSiteStrictMode})
	u.render(w, r, http.StatusOK, "signin", "Sign in", signinData{CSRF: tok, Next: localPath(r.URL.Query().Get("next"))})
}

func (u *UI) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	c, err := r.Cookie(signinCookie)
	if err != nil || !same(c.Value, r.PostFormValue("csrf")) {
		http.Error(w, "the sign-in form expired or did not come from this site: open it again", http.StatusForbidden)
		return
	}
	tok, err := u.cfg.Tokens.Verify(r.Context(), strings.TrimSpace(r.PostFormValue("token")))
	if err != nil {
		msg := "That token is unknown or revoked."
		if !errors.Is(err, auth.ErrUnknownToken) {
			u.cfg.Logger.Error("sign-in failed", "err", err)
			msg = "Signing in failed; try again."
		}
		next := auth.Random()
		http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: next, Path: "/signin", MaxAge: 600, HttpOnly: true, Secure: u.secure(r), SameSite: http.SameSiteStrictMode})
		u.render(w, r, http.StatusUnauthorized, "signin", "Sign in", signinData{Error: msg, CSRF: next, Next: localPath(r.PostFormValue("next"))})
		return
	}
	s, err := u.sessions.create(r.Context(), tok)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.setCookie(w, r, s.id, int(u.cfg.SessionTTL/time.Second))
	http.Redirect(w, r, localPath(r.PostFormValue("next")), http.StatusSeeOther)
}

func (u *UI) signout(w http.ResponseWriter, r *http.Request) {
	if s := u.sessions.get(r); s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	u.sessions.drop(r)
	u.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// checkCSRF parses the form and compares its csrf field with the session's.
func (u *UI) checkCSRF(r *http.Request, s *session) bool {
	return r.ParseForm() == nil && same(s.CSRF, r.PostFormValue("csrf"))
}

func same(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// actor is how audit events name a person acting through the UI.
func (s *session) actor() string { return "web:" + s.Name }

func (u *UI) secure(r *http.Request) bool { return r.TLS != nil || u.cfg.SecureCookies }
