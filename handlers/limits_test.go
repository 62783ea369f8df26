package handlers_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestNoAuthAnswersOnlyItsOwnName: without authentication a DNS rebinding page reaches the
// server under its own name; such requests are refused before they read or write anything.
func TestNoAuthAnswersOnlyItsOwnName(t *testing.T) {
	s := startServer(t, storagetest.Open(t, storagetest.Backends[0]), func(c *handlers.Config, sc *server.Config) {
		c.NoAuth = true
		sc.AllowedHosts = []string{"localhost", "127.0.0.1", "::1"}
	})
	port := s.URL[strings.LastIndex(s.URL, ":"):]
	before := s.counts(t)
	asset := map[string]string{"kind": "table", "namespace": "w", "name": "rebound"}
	for _, host := range []string{"evil.example" + port, "evil.example", "127.0.0.1.evil.example" + port} {
		got := s.do(t, req{method: "POST", path: "/api/v1/assets", body: asset, headers: map[string]string{"Host": host}})
		if got.status != 421 || !strings.Contains(string(got.body), "not this server's name") {
			t.Errorf("POST with Host %s = %d %s, want 421", host, got.status, got.body)
		}
		if got := s.do(t, req{method: "GET", path: "/api/v1/assets", headers: map[string]string{"Host": host}}); got.status != 421 {
			t.Errorf("GET with Host %s = %d, want 421", host, got.status)
		}
	}
	if after := s.counts(t); after["assets"] != before["assets"] || after["audit_events"] != before["audit_events"] {
		t.Fatalf("refused requests wrote: %v -> %v", before, after)
	}
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port} {
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets", headers: map[string]string{"Host": host}})
	}
	s.must(t, 201, req{method: "POST", path: "/api/v1/assets", body: asset})
}

// TestRateLimits: a token, an address without a token, and an address guessing tokens each have
// a budget; past it the answer is 429 with Retry-After, and a forged X-Forwarded-For buys nothing.
func TestRateLimits(t *testing.T) {
	eachBackend0 := func(fn func(s *testServer)) {
		for _, b := range storagetest.Backends {
			t.Run(b, func(t *testing.T) {
				fn(startServer(t, storagetest.Open(t, b), func(c *handlers.Config, sc *server.Config) {
					// One request a 100 s: the second within the test is always over budget.
					sc.RateLimit, sc.AnonymousRateLimit = 0.01, 0.01
					c.AuthReads = true
				}))
			})
		}
	}
	eachBackend0(func(s *testServer) {
		t := s.t.(*testing.T)
		over := func(r req, who string) {
			t.Helper()
			got := s.do(t, r)
			ra, _ := strconv.Atoi(got.header.Get("Retry-After"))
			if got.status != 429 || ra < 1 || got.header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(got.body), who) {
				t.Fatalf("%s %s = %d (Retry-After %q) %s, want 429 naming %s", r.method, r.path, got.status, got.header.Get("Retry-After"), got.body, who)
			}
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets", token: s.Write})
		over(req{method: "GET", path: "/api/v1/assets", token: s.Write}, `token \"writer\"`)
		// Another token has its own budget.
		s.must(t, 200, req{method: "GET", path: "/api/v1/assets", token: s.Read})

		s.must(t, 200, req{method: "GET", path: "/healthz"})
		over(req{method: "GET", path: "/healthz"}, "address 127.0.0.1")
		over(req{method: "GET", path: "/healthz", headers: map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Real-IP": "203.0.113.9"}}, "address 127.0.0.1")
		// Unknown tokens are charged to the address.
		over(req{method: "POST", path: "/api/v1/assets", token: "guess", body: map[string]string{"kind": "table", "namespace": "w", "name": "x"}}, "address 127.0.0.1")
	})
}

// TestOnlyVerifiedTokensSkipTheAddressBudget: an Authorization header alone buys nothing. A
// header that is not a token that verifies (any text, another scheme, a made-up bearer token)
// is charged to the address like no header at all, on every route, open or not; a token that
// verifies is charged to the token.
func TestOnlyVerifiedTokensSkipTheAddressBudget(t *testing.T) {
	for _, b := range storagetest.Backends {
		t.Run(b, func(t *testing.T) {
			s := startServer(t, storagetest.Open(t, b), func(c *handlers.Config, sc *server.Config) {
				// One request a 100 s for an address: the second within the test is over budget.
				sc.AnonymousRateLimit, sc.RateLimit = 0.01, 100
			})
			s.must(t, 200, req{method: "GET", path: "/healthz"}) // the address's one request
			for _, tc := range []struct {
				name, method, path, authorization string
			}{
				{"AnyTextOnAnOpenRoute", "GET", "/healthz", "x"},
				{"AnyTextOnARead", "GET", "/api/v1/assets", "x"},
				{"MadeUpBearerOnARead", "GET", "/api/v1/assets", "Bearer tdm_madeup"},
				{"MadeUpBearerOnAnOpenRoute", "GET", "/api/openapi.json", "Bearer tdm_madeup"},
				{"BasicOnARead", "GET", "/api/v1/assets", "Basic dXNlcjpwYXNz"},
				{"EmptyBearer", "GET", "/api/v1/assets", "Bearer "},
				{"MadeUpBearerOnAWrite", "POST", "/api/v1/assets", "Bearer tdm_madeup"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					for range 3 {
						got := s.do(t, req{method: tc.method, path: tc.path, headers: map[string]string{"Authorization": tc.authorization},
							body: map[string]string{"kind": "table", "namespace": "w", "name": "x"}})
						if got.status != 429 || !strings.Contains(string(got.body), "address 127.0.0.1") {
							t.Fatalf("%s %s with Authorization %q = %d %s, want 429 charged to the address", tc.method, tc.path, tc.authorization, got.status, got.body)
						}
					}
				})
			}
			// Verified tokens are not the address's: they keep answering.
			s.must(t, 200, req{method: "GET", path: "/api/v1/assets", token: s.Read})
			s.must(t, 200, req{method: "GET", path: "/healthz", token: s.Read})
			s.must(t, 201, req{method: "POST", path: "/api/v1/assets", token: s.Write, body: map[string]string{"kind": "table", "namespace": "w", "name": "x"}})
		})
	}
}
