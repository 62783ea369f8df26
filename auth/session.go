package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/apitoken"
	"github.com/tidemark/tidemark/ent/websession"
)

// Session is a browser signed in with an API token: who, whether they may edit (write) and
// decide (admin), and the CSRF token its forms must carry.
type Session struct {
	Name  string // the API token's name
	Admin bool
	Write bool // the token has the write scope (admin includes it)
	CSRF  string
}

// Sessions live in the database, keyed by the SHA-256 of the cookie's secret (never the secret),
// so every replica knows them and a restart signs nobody out; a session ends when it expires or
// its token is revoked.

// CreateSession starts a session for tok lasting ttl and returns the secret its cookie carries.
// Expired sessions are removed on the way.
func (s *Store) CreateSession(ctx context.Context, tok Token, ttl time.Duration) (string, Session, error) {
	now := s.now()
	if _, err := s.db.WebSession.Delete().Where(websession.ExpiresAtLT(now)).Exec(ctx); err != nil {
		return "", Session{}, err
	}
	secret, csrf := Random(), Random()
	x := Session{Name: tok.Name, Admin: tok.Allows(ScopeAdmin), Write: tok.Allows(ScopeWrite), CSRF: csrf}
	err := s.db.WebSession.Create().SetID(hash(secret)).SetTokenID(tok.ID).SetName(x.Name).SetAdmin(x.Admin).
		SetCsrf(x.CSRF).SetExpiresAt(now.Add(ttl)).Exec(ctx)
	return secret, x, err
}

// Session returns the live session a cookie secret names; ok is false when there is none, it
// expired, or its token was revoked.
func (s *Store) Session(ctx context.Context, secret string) (Session, bool, error) {
	if secret == "" || len(secret) > 100 {
		return Session{}, false, nil
	}
	row, err := s.db.WebSession.Query().Where(websession.ID(hash(secret)), websession.ExpiresAtGT(s.now())).Only(ctx)
	if ent.IsNotFound(err) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	tok, err := s.db.APIToken.Query().Where(apitoken.ID(row.TokenID), apitoken.RevokedAtIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return Session{}, false, nil // revoked: the session ends with its token
	}
	if err != nil {
		return Session{}, false, err
	}
	s.touch(ctx, tok)
	// The write scope is read from the token itself: sessions stored before it was kept still
	// know it.
	return Session{Name: row.Name, Admin: row.Admin, Write: toToken(tok).Allows(ScopeWrite), CSRF: row.Csrf}, true, nil
}

// EndSession removes the session a cookie secret names.
func (s *Store) EndSession(ctx context.Context, secret string) error {
	_, err := s.db.WebSession.Delete().Where(websession.ID(hash(secret))).Exec(ctx)
	return err
}

// Random returns 32 random bytes, base64url: a cookie secret or a CSRF token.
func Random() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
