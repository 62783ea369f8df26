package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidemark/tidemark/auth"
)

const cookieName = "tidemark_session"

// session is a signed-in browser: who, and the CSRF token its forms must carry.
type session struct {
	id      string
	Name    string // the API token's name, recorded as the actor of decisions
	Admin   bool
	csrf    string
	expires time.Time
}

// sessions are kept in memory: a replica restart signs everyone out, and a load balancer must
// keep a browser on one replica (a shared session store is listed as a gap).
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	now func() time.Time
	ttl time.Duration
}

func newSessions(now func() time.Time, ttl time.Duration) *sessions {
	return &sessions{m: map[string]*session{}, now: now, ttl: ttl}
}

func random() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *sessions) create(tok auth.Token) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, x := range s.m {
		if now.After(x.expires) {
			delete(s.m, id)
		}
	}
	x := &session{id: random(), Name: tok.Name, Admin: tok.Allows(auth.ScopeAdmin), csrf: random(), expires: now.Add(s.ttl)}
	s.m[x.id] = x
	return x
}

func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.m[c.Value]
	if x == nil || s.now().After(x.expires) {
		return nil
	}
	return x
}

func (s *sessions) drop(r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.m, c.Value)
		s.mu.Unlock()
	}
}

func setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
}

// signinCSRF protects the sign-in form itself with a double-submit cookie.
const signinCookie = "tidemark_signin"

type signinData struct {
	Error string
	CSRF  string
}

func (u *UI) signinForm(w http.ResponseWriter, r *http.Request) {
	tok := random()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: tok, Path: "/signin", MaxAge: 600, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	u.render(w, r, http.StatusOK, "signin", "Sign in", signinData{CSRF: tok})
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
		next := random()
		http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: next, Path: "/signin", MaxAge: 600, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
		u.render(w, r, http.StatusUnauthorized, "signin", "Sign in", signinData{Error: msg, CSRF: next})
		return
	}
	s := u.sessions.create(tok)
	setCookie(w, r, s.id, int(u.cfg.SessionTTL/time.Second))
	http.Redirect(w, r, "/proposals", http.StatusSeeOther)
}

func (u *UI) signout(w http.ResponseWriter, r *http.Request) {
	if s := u.sessions.get(r); s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	u.sessions.drop(r)
	setCookie(w, r, "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// checkCSRF parses the form and compares its csrf field with the session's.
func (u *UI) checkCSRF(r *http.Request, s *session) bool {
	return r.ParseForm() == nil && same(s.csrf, r.PostFormValue("csrf"))
}

func same(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// actor is how audit events name a person acting through the UI.
func (s *session) actor() string { return "web:" + s.Name }
