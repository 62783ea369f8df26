package auth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

func TestTokenLifecycle(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := auth.NewStore(db.Client, nil)
		secret, tok, err := s.Create(ctx, "ci", []auth.Scope{auth.ScopeWrite})
		if err != nil {
			t.Fatal(err)
		}
		var stored string
		if err := db.SQL.QueryRow("SELECT hash FROM api_tokens").Scan(&stored); err != nil || stored == secret {
			t.Fatalf("the secret is stored as is (%v)", err)
		}
		got, err := s.Verify(ctx, secret)
		if err != nil || got.ID != tok.ID {
			t.Fatalf("verify = %+v, %v", got, err)
		}
		if !got.Allows(auth.ScopeRead) || !got.Allows(auth.ScopeWrite) || got.Allows(auth.ScopeAdmin) {
			t.Fatalf("write token scopes wrong: %+v", got.Scopes)
		}
		if _, err := s.Verify(ctx, secret+"x"); !errors.Is(err, auth.ErrUnknownToken) {
			t.Fatalf("wrong secret: %v", err)
		}
		if _, _, err := s.Create(ctx, "ci", []auth.Scope{auth.ScopeRead}); err == nil {
			t.Fatal("duplicate name accepted")
		}
		if err := s.Revoke(ctx, "ci"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Verify(ctx, secret); !errors.Is(err, auth.ErrUnknownToken) {
			t.Fatalf("revoked token verified: %v", err)
		}
	})
}

func TestParseScopes(t *testing.T) {
	cases := []struct {
		in   string
		want int
		ok   bool
	}{{"write", 1, true}, {"read, write,read", 2, true}, {"", 0, false}, {"root", 0, false}}
	for _, tc := range cases {
		got, err := auth.ParseScopes(tc.in)
		if (err == nil) != tc.ok || len(got) != tc.want {
			t.Errorf("ParseScopes(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestBearerSecret(t *testing.T) {
	for _, c := range []struct {
		header, secret string
		ok             bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer  abc ", "abc", true},
		{"Bearer ", "", false},
		{"Basic YTpi", "YTpi", false},
		{"x", "", false},
		{"", "", false},
	} {
		if s, ok := auth.BearerSecret(c.header); ok != c.ok || (ok && s != c.secret) {
			t.Errorf("BearerSecret(%q) = %q, %v; want %q, %v", c.header, s, ok, c.secret, c.ok)
		}
	}
}
