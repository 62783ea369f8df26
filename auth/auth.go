// Package auth owns API tokens: creating them (the secret is shown once), storing only their
// SHA-256, verifying a presented bearer token, and the scopes (read < write < admin) a token
// grants. It sits beside catalog because tokens are about callers, not assets.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/apitoken"
)

// Scope is a permission a token carries. Each scope includes the ones below it.
type Scope string

// Scopes, weakest first.
const (
	ScopeRead  Scope = "read"
	ScopeWrite Scope = "write"
	ScopeAdmin Scope = "admin"
)

var rank = map[Scope]int{ScopeRead: 1, ScopeWrite: 2, ScopeAdmin: 3}

// ParseScopes parses a comma-separated scope list such as "read,write".
func ParseScopes(s string) ([]Scope, error) {
	var out []Scope
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			continue
		}
		if _, ok := rank[sc]; !ok {
			return nil, fmt.Errorf("auth: unknown scope %q; scopes are read, write, admin", sc)
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("auth: at least one scope is required (read, write or admin)")
	}
	return out, nil
}

// Token describes a stored token; it never holds the secret.
type Token struct {
	ID        uuid.UUID
	Name      string
	Scopes    []Scope
	CreatedAt time.Time
	RevokedAt *time.Time
}

// Allows reports whether the token grants need (admin includes write, write includes read).
func (t Token) Allows(need Scope) bool {
	for _, s := range t.Scopes {
		if rank[s] >= rank[need] {
			return true
		}
	}
	return false
}

// ErrUnknownToken means the presented secret matches no live token.
var ErrUnknownToken = errors.New("auth: token not recognised or revoked")

// Store keeps tokens in the database.
type Store struct {
	db  *ent.Client
	now func() time.Time
}

// NewStore returns a token store over db.
func NewStore(db *ent.Client, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}
}

// secretPrefix marks Tidemark tokens so secret scanners and people can recognise them.
const secretPrefix = "tdm_"

// Create makes a token and returns its secret, which is not stored and cannot be shown again.
func (s *Store) Create(ctx context.Context, name string, scopes []Scope) (string, Token, error) {
	if name == "" || len(name) > 100 || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", Token{}, errors.New("auth: token name must be 1-100 characters without spaces or control characters")
	}
	if len(scopes) == 0 {
		return "", Token{}, errors.New("auth: at least one scope is required")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Token{}, fmt.Errorf("auth: random: %w", err)
	}
	secret := secretPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	strs := make([]string, len(scopes))
	for i, sc := range scopes {
		strs[i] = string(sc)
	}
	row, err := s.db.APIToken.Create().SetName(name).SetHash(hash(secret)).SetScopes(strs).
		SetCreatedAt(s.now().UTC()).Save(ctx)
	if ent.IsConstraintError(err) {
		return "", Token{}, fmt.Errorf("auth: a token named %q exists already; pick another name or revoke it first", name)
	}
	if err != nil {
		return "", Token{}, fmt.Errorf("auth: store token: %w", err)
	}
	return secret, toToken(row), nil
}

// Verify returns the live token whose secret was presented.
func (s *Store) Verify(ctx context.Context, secret string) (Token, error) {
	if !strings.HasPrefix(secret, secretPrefix) || len(secret) > 200 {
		return Token{}, ErrUnknownToken
	}
	row, err := s.db.APIToken.Query().Where(apitoken.Hash(hash(secret)), apitoken.RevokedAtIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return Token{}, ErrUnknownToken
	}
	if err != nil {
		return Token{}, fmt.Errorf("auth: look up token: %w", err)
	}
	return toToken(row), nil
}

// List returns every token, newest first.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	rows, err := s.db.APIToken.Query().Order(ent.Desc(apitoken.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	out := make([]Token, len(rows))
	for i, r := range rows {
		out[i] = toToken(r)
	}
	return out, nil
}

// Revoke stops a token from working. Revoking a revoked token is not an error.
func (s *Store) Revoke(ctx context.Context, name string) error {
	row, err := s.db.APIToken.Query().Where(apitoken.Name(name)).Only(ctx)
	if ent.IsNotFound(err) {
		return fmt.Errorf("auth: no token named %q", name)
	}
	if err != nil {
		return fmt.Errorf("auth: look up token: %w", err)
	}
	if row.RevokedAt != nil {
		return nil
	}
	return s.db.APIToken.UpdateOne(row).SetRevokedAt(s.now().UTC()).Exec(ctx)
}

// hash is SHA-256: tokens carry 256 random bits, so a slow password hash adds nothing.
func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func toToken(r *ent.APIToken) Token {
	t := Token{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt}
	for _, s := range r.Scopes {
		t.Scopes = append(t.Scopes, Scope(s))
	}
	return t
}

// Active reports whether the token with this ID exists and is not revoked (a browser session
// signed in with it ends when it is revoked).
func (s *Store) Active(ctx context.Context, id uuid.UUID) (bool, error) {
	return s.db.APIToken.Query().Where(apitoken.ID(id), apitoken.RevokedAtIsNil()).Exist(ctx)
}

// BearerSecret is the secret of an `Authorization: Bearer <token>` header value; ok is false for
// any other value (none, another scheme, an empty token). Every face parses the header here, so
// none reads a token another face would refuse.
func BearerSecret(header string) (secret string, ok bool) {
	scheme, secret, found := strings.Cut(header, " ")
	secret = strings.TrimSpace(secret)
	return secret, found && strings.EqualFold(scheme, "Bearer") && secret != ""
}
