package handlers_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCreateRefusesUnprintableIdempotencyKeys: a key that is not printable UTF-8 (PostgreSQL
// cannot store it as text) is a 400 that says what to send, on both stores, and writes nothing.
func TestCreateRefusesUnprintableIdempotencyKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		before := s.counts(t)
		for _, tc := range []struct{ name, key string }{
			{"NotUTF8", "\xff\xfe"},
			{"Latin1", "caf\xe9"},
			{"TruncatedUTF8", "key-\xe2\x82"},
			{"Tab", "key\twith-a-tab"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := s.do(t, req{method: "POST", path: "/api/v1/assets", token: s.Write, headers: map[string]string{"Idempotency-Key": tc.key},
					body: map[string]string{"kind": "table", "namespace": "w", "name": "keyed"}})
				if got.status != http.StatusBadRequest || got.header.Get("Content-Type") != "application/problem+json" ||
					!strings.Contains(string(got.body), "Idempotency-Key must be printable UTF-8") {
					t.Fatalf("Idempotency-Key %q = %d %s, want 400 problem+json asking for printable UTF-8", tc.key, got.status, got.body)
				}
			})
		}
		if after := s.counts(t); after["assets"] != before["assets"] || after["idempotency_keys"] != before["idempotency_keys"] {
			t.Fatalf("refused creates wrote: %v -> %v", before, after)
		}
		s.must(t, http.StatusCreated, req{method: "POST", path: "/api/v1/assets", token: s.Write, headers: map[string]string{"Idempotency-Key": "ключ-1"},
			body: map[string]string{"kind": "table", "namespace": "w", "name": "keyed"}})
	})
}

// TestNamesWithInvisibleCharactersAreRefused: a name or namespace holding a character that
// hides itself or turns the text around is a 400 naming the code point.
func TestNamesWithInvisibleCharactersAreRefused(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		for _, tc := range []struct{ namespace, name, want string }{
			{"w", "orders\u202e", "U+202E"},
			{"w", "ord\u200bers", "U+200B"},
			{"w", "orders\u0085x", "U+0085"},
			{"w\u2066", "orders", "U+2066"},
			{"w", "\ufefforders", "U+FEFF"},
		} {
			got := s.do(t, req{method: "POST", path: "/api/v1/assets", token: s.Write,
				body: map[string]string{"kind": "table", "namespace": tc.namespace, "name": tc.name}})
			if got.status != http.StatusBadRequest || !strings.Contains(string(got.body), tc.want) {
				t.Errorf("create %+q/%+q = %d %s, want 400 naming %s", tc.namespace, tc.name, got.status, got.body, tc.want)
			}
		}
		a := s.createAsset(t, "w", "orders")
		got := s.do(t, req{method: "POST", path: "/api/v1/assets/" + a.ID + "/rename", token: s.Write, headers: map[string]string{"If-Match": `"1"`},
			body: map[string]string{"name": "orders\u202ecod.exe"}})
		if got.status != http.StatusBadRequest || !strings.Contains(string(got.body), "U+202E") {
			t.Errorf("rename to an overridden name = %d %s, want 400 naming U+202E", got.status, got.body)
		}
	})
}
