// Package auth owns API tokens: creating them (the secret is shown once), storing only their
// SHA-256, verifying a presented bearer token (noting its last use), revoking them, the scopes
// (read < write < admin) a token grants, and the browser sessions signed in with one. It sits
// beside catalog because tokens are about callers, not assets.
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
	// LastUsedAt is when the token last verified or its browser session was used, to the
	// minute (see touch); nil: never.
	LastUsedAt *time.Time
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
	db    *ent.Client
	now   func() time.Time
	audit Recorder // nil: creating and revoking are not audited (the CLI's own store)
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

// Problems says, in plain words, everything wrong with a new token's name and scopes at once
// (none: it may be created), so a form can show every mistake together.
func Problems(name string, scopes []Scope) []string {
	var out []string
	switch {
	case name == "":
		out = append(out, "Give the token a name.")
	case len(name) > 100 || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		out = append(out, "The name must be at most 100 characters, without spaces or control characters.")
	}
	if len(scopes) == 0 {
		out = append(out, "Pick at least one scope.")
	}
	for _, sc := range scopes {
		if _, ok := rank[sc]; !ok {
			out = append(out, fmt.Sprintf("%q is not a scope; the scopes are read, write and admin.", sc))
		}
	}
	return out
}

// ErrNameTaken means a token of that name exists already (live or revoked: names stay taken,
// so the audit log's names keep meaning one token).
var ErrNameTaken = errors.New("auth: a token of that name exists already")

// ErrNoToken means no token has the name given.
var ErrNoToken = errors.New("auth: no token of that name")

// Recorder writes an audit event inside tx (catalog.Catalog is one); the actor comes from ctx.
type Recorder interface {
	RecordAudit(ctx context.Context, tx *ent.Tx, action string, assetID uuid.UUID, before, after any) error
}

// Audit actions of tokens; the audit never holds a secret or its hash.
const (
	ActionTokenCreate = "token.create"
	ActionTokenRevoke = "token.revoke"
)

// WithAudit returns a store that records creating and revoking tokens through rec, in the same
// transaction as the change.
func (s *Store) WithAudit(rec Recorder) *Store {
	c := *s
	c.audit = rec
	return &c
}

// Create makes a token and returns its secret, which is not stored and cannot be shown again.
func (s *Store) Create(ctx context.Context, name string, scopes []Scope) (string, Token, error) {
	if p := Problems(name, scopes); len(p) > 0 {
		return "", Token{}, fmt.Errorf("auth: %s", strings.Join(p, " "))
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
	var row *ent.APIToken
	err := s.tx(ctx, func(tx *ent.Tx) error {
		var err error
		row, err = tx.APIToken.Create().SetName(name).SetHash(hash(secret)).SetScopes(strs).
			SetCreatedAt(s.now().UTC()).Save(ctx)
		if err != nil {
			return err
		}
		return s.record(ctx, tx, ActionTokenCreate, nil, map[string]any{"token": name, "scopes": strs})
	})
	if ent.IsConstraintError(err) {
		return "", Token{}, fmt.Errorf("%w: %q; pick another name", ErrNameTaken, name)
	}
	if err != nil {
		return "", Token{}, fmt.Errorf("auth: store token: %w", err)
	}
	return secret, toToken(row), nil
}

func (s *Store) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (s *Store) record(ctx context.Context, tx *ent.Tx, action string, before, after any) error {
	if s.audit == nil {
		return nil
	}
	return s.audit.RecordAudit(ctx, tx, action, uuid.Nil, before, after)
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
	s.touch(ctx, row)
	return toToken(row), nil
}

// lastUsedEvery is how stale a token's last use may be: under load a token verifies many times
// a second, and a write for each would turn every read into a write.
const lastUsedEvery = time.Minute

// touch records that row was used now, at most once every lastUsedEvery: the stored time is
// compared in memory first (no write at all), then again in the UPDATE's WHERE, so concurrent
// requests and replicas write it once. It is best effort: failing to note a use must not refuse
// a valid token.
func (s *Store) touch(ctx context.Context, row *ent.APIToken) {
	now := s.now().UTC()
	if row.LastUsedAt != nil && now.Sub(*row.LastUsedAt) < lastUsedEvery {
		return
	}
	n, err := s.db.APIToken.Update().Where(apitoken.ID(row.ID),
		apitoken.Or(apitoken.LastUsedAtIsNil(), apitoken.LastUsedAtLT(now.Add(-lastUsedEvery)))).
		SetLastUsedAt(now).Save(ctx)
	if err == nil && n > 0 {
		row.LastUsedAt = &now
	}
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

// Revoke stops a token from working. Revoking a revoked token is not an error (nor audited
// again).
func (s *Store) Revoke(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *ent.Tx) error {
		row, err := tx.APIToken.Query().Where(apitoken.Name(name)).Only(ctx)
		if ent.IsNotFound(err) {
			return fmt.Errorf("%w: %q", ErrNoToken, name)
		}
		if err != nil {
			return fmt.Errorf("auth: look up token: %w", err)
		}
		n, err := tx.APIToken.Update().Where(apitoken.ID(row.ID), apitoken.RevokedAtIsNil()).SetRevokedAt(s.now().UTC()).Save(ctx)
		if err != nil || n == 0 {
			return err
		}
		return s.record(ctx, tx, ActionTokenRevoke, nil, map[string]any{"token": name})
	})
}

// hash is SHA-256: tokens carry 256 random bits, so a slow password hash adds nothing.
func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func toToken(r *ent.APIToken) Token {
	t := Token{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt}
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
