package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/websession"
)

const cookieName = "tidemark_session"

// session is a signed-in browser: who, and the CSRF token its forms must carry.
type session struct {
	id    string // the cookie value (random); the database keeps only its hash
	Name  string // the API token's name, recorded as the actor of decisions
	Admin bool
	csrf  string
}

// sessions live in the database (only the SHA-256 of each cookie), so every replica knows
// them and a restart signs nobody out; a session ends when it expires or its token is revoked.
type sessions struct {
	db     *ent.Client
	tokens *auth.Store
	now    func() time.Time
	ttl    time.Duration
	log    *slog.Logger
}

func random() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashID(v string) string {
	h := sha256.Sum256([]byte(v))
	return hex.EncodeToString(h[:])
}

func (s *sessions) create(ctx context.Context, tok auth.Token) (*session, error) {
	now := s.now()
	if _, err := s.db.WebSession.Delete().Where(websession.ExpiresAtLT(now)).Exec(ctx); err != nil {
		return nil, err
	}
	x := &session{id: random(), Name: tok.Name, Admin: tok.Allows(auth.ScopeAdmin), csrf: random()}
	err := s.db.WebSession.Create().SetID(hashID(x.id)).SetTokenID(tok.ID).SetName(x.Name).SetAdmin(x.Admin).
		SetCsrf(x.csrf).SetExpiresAt(now.Add(s.ttl)).Exec(ctx)
	return x, err
}

func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || len(c.Value) > 100 {
		return nil
	}
	ctx := r.Context()
	row, err := s.db.WebSession.Query().Where(websession.ID(hashID(c.Value)), websession.ExpiresAtGT(s.now())).Only(ctx)
	if err != nil {
		if !ent.IsNotFound(err) {
			s.log.Warn("read a web session", "err", err)
		}
		return nil
	}
	if ok, err := s.tokens.Active(ctx, row.TokenID); err != nil || !ok {
		return nil // revoked: the session ends with its token
	}
	return &session{id: c.Value, Name: row.Name, Admin: row.Admin, csrf: row.Csrf}
}

func (s *sessions) drop(r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		if _, err := s.db.WebSession.Delete().Where(websession.ID(hashID(c.Value))).Exec(r.Context()); err != nil {
			s.log.Warn("delete a web session", "err", err)
		}
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
	s, err := u.sessions.create(r.Context(), tok)
	if err != nil {
		u.fail(w, r, err)
		return
	}
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
