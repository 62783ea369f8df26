package auth_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func lastUsed(t *testing.T, s *auth.Store, name string) *time.Time {
	t.Helper()
	toks, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range toks {
		if tok.Name == name {
			return tok.LastUsedAt
		}
	}
	t.Fatalf("no token %s", name)
	return nil
}

// TestLastUsed: a token's last use is written when it verifies or its session is used, but at
// most once a minute: a use 30 s after the last one leaves the stored time alone.
func TestLastUsed(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		t0 := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
		c := &clock{t: t0}
		s := auth.NewStore(db.Client, c.now)
		secret, tok, err := s.Create(ctx, "ci", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		if got := lastUsed(t, s, "ci"); got != nil {
			t.Fatalf("new token last used %v, want never", got)
		}
		cookie, _, err := s.CreateSession(ctx, tok, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			name    string
			after   time.Duration
			use     func() error
			wantAgo time.Duration // how long before the step's now the stored time is
		}{
			{"FirstVerifyWrites", 0, func() error { _, err := s.Verify(ctx, secret); return err }, 0},
			{"VerifyWithinAMinuteKeeps", 30 * time.Second, func() error { _, err := s.Verify(ctx, secret); return err }, 30 * time.Second},
			{"SessionWithinAMinuteKeeps", 20 * time.Second, func() error { _, _, err := s.Session(ctx, cookie); return err }, 50 * time.Second},
			{"SessionAfterAMinuteWrites", 20 * time.Second, func() error { _, _, err := s.Session(ctx, cookie); return err }, 0},
			{"VerifyAfterAMinuteWrites", 61 * time.Second, func() error { _, err := s.Verify(ctx, secret); return err }, 0},
		}
		for _, st := range steps {
			c.add(st.after)
			if err := st.use(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			got, want := lastUsed(t, s, "ci"), c.now().Add(-st.wantAgo)
			if got == nil || !got.Equal(want) {
				t.Fatalf("%s: last used %v, want %v", st.name, got, want)
			}
		}
	})
}

type recorder struct{ actions []string }

func (r *recorder) RecordAudit(_ context.Context, tx *ent.Tx, action string, asset uuid.UUID, _, after any) error {
	if tx == nil || asset != uuid.Nil {
		return errors.New("want a transaction and no asset")
	}
	r.actions = append(r.actions, action)
	return nil
}

// TestAuditedTokens: an audited store records creating and revoking once each (revoking again
// records nothing), and Problems names every mistake of a new token at once.
func TestAuditedTokens(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		rec := &recorder{}
		s := auth.NewStore(db.Client, nil).WithAudit(rec)
		if _, _, err := s.Create(ctx, "ci", []auth.Scope{auth.ScopeRead}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Create(ctx, "ci", []auth.Scope{auth.ScopeRead}); !errors.Is(err, auth.ErrNameTaken) {
			t.Fatalf("second ci: %v", err)
		}
		for range 2 {
			if err := s.Revoke(ctx, "ci"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Revoke(ctx, "nobody"); !errors.Is(err, auth.ErrNoToken) {
			t.Fatalf("revoke nobody: %v", err)
		}
		if want := []string{auth.ActionTokenCreate, auth.ActionTokenRevoke}; !slices.Equal(rec.actions, want) {
			t.Fatalf("audited %v, want %v", rec.actions, want)
		}
	})
	if got := auth.Problems("", nil); len(got) != 2 {
		t.Fatalf("no name, no scope: %v", got)
	}
	if got := auth.Problems("a b", []auth.Scope{"root"}); len(got) != 2 {
		t.Fatalf("spaced name, unknown scope: %v", got)
	}
	if got := auth.Problems("ci", []auth.Scope{auth.ScopeRead}); len(got) != 0 {
		t.Fatalf("good token: %v", got)
	}
}
