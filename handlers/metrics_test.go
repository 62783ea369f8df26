package handlers_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// eachBackendTweaked runs fn on a server over a fresh database of every backend, configured by
// tweak (called per backend, so it may set a fresh logger or registry).
func eachBackendTweaked(t *testing.T, tweak func(*handlers.Config, *server.Config), fn func(t *testing.T, s *testServer)) {
	t.Helper()
	for _, b := range storagetest.Backends {
		t.Run(b, func(t *testing.T) { fn(t, startServer(t, storagetest.Open(t, b), tweak)) })
	}
}

// madeUpMethod is a distinct valid method token of n bytes, as an attacker would invent.
func madeUpMethod(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "X" + strings.ToUpper(hex.EncodeToString(b))[:n-1]
}

// fixedMethods are the only method label values tidemark_http_requests_total may carry.
var fixedMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "other": true}

var seriesLine = regexp.MustCompile(`(?m)^(\w+)\{([^}]*)\} (\S+)$`)

// series returns the value of every series of the metric named name in a text exposition,
// keyed by its labels as printed (`kind="token"`).
func series(exposition, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range seriesLine.FindAllStringSubmatch(exposition, -1) {
		if m[1] != name {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		out[m[2]] = v
	}
	return out
}

var methodLabel = regexp.MustCompile(`method="([^"]*)"`)

// gather renders reg as /metrics would, without a request (which the anonymous limiter counts).
func gather(t testing.TB, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// TestMadeUpMethodsDoNotGrowMetrics: a client may invent any method token of up to 1 MB; each
// used to become a label value in two series families, so /metrics and the process grew with
// every request (400 of 500 KB took /metrics to 3 GB). Invented methods are counted as "other".
func TestMadeUpMethodsDoNotGrowMetrics(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		paths := []string{"/healthz", "/api/v1/assets", "/api/v1/assets/0190b6e2-7a4c-7d3e-9f1a-000000000001", "/no/such/route"}
		send := func(n int) {
			for range n {
				for _, p := range paths {
					got := s.do(t, req{method: madeUpMethod(t, 2048), path: p})
					if got.status != 404 && got.status != 405 {
						t.Fatalf("made-up method on %s = %d, want 404 or 405: %s", p, got.status, got.body)
					}
				}
			}
		}
		scrape := func() string { return string(s.must(t, 200, req{method: "GET", path: "/metrics"}).body) }
		// Warm up: one of each, and two scrapes, so every series the batch touches exists.
		send(1)
		scrape()
		before := scrape()
		send(50)
		after := scrape()

		if grew := len(after) - len(before); grew > 2048 {
			t.Errorf("/metrics grew by %d bytes over 200 requests with made-up methods, want under 2 KB (series per method?)", grew)
		}
		for _, name := range []string{"tidemark_http_requests_total", "tidemark_http_request_duration_seconds_count"} {
			seen := map[string]bool{}
			for labels := range series(after, name) {
				m := methodLabel.FindStringSubmatch(labels)
				if m == nil {
					t.Fatalf("%s{%s} has no method label", name, labels)
				}
				seen[m[1]] = true
			}
			var odd []string
			for m := range seen {
				if !fixedMethods[m] {
					odd = append(odd, m)
				}
			}
			if len(odd) > 0 {
				t.Errorf("%s has %d method labels outside the fixed set and \"other\", such as %.40q...", name, len(odd), odd[0])
			}
			if !seen["other"] {
				t.Errorf("%s has no method=\"other\" series for the made-up methods: %v", name, seen)
			}
		}
	})
}

// TestRateLimitRefusalsAreCountedApart: a request the anonymous limiter refuses never reaches the
// per-route series (an anonymous flood must not make them), and every refusal, anonymous or of a
// token, is counted in tidemark_http_rate_limited_total by the budget that was spent.
func TestRateLimitRefusalsAreCountedApart(t *testing.T) {
	var reg *prometheus.Registry
	eachBackendTweaked(t, func(c *handlers.Config, sc *server.Config) {
		// One request a 100 s (burst 1): the second within the test is always over budget.
		sc.RateLimit, sc.AnonymousRateLimit = 0.01, 0.01
		reg = prometheus.NewRegistry()
		sc.Registry = reg
	}, func(t *testing.T, s *testServer) {
		// Spend both budgets.
		s.must(t, 200, req{method: "GET", path: "/healthz"})
		s.must(t, 201, req{method: "POST", path: "/api/v1/assets", token: s.Write,
			body: map[string]any{"kind": "table", "namespace": "w", "name": "spent"}})
		before := gather(t, reg)

		cases := []struct {
			name string
			r    req
			kind string
		}{
			{"MadeUpMethod", req{method: madeUpMethod(t, 512), path: "/healthz"}, "anonymous"},
			{"MadeUpMethodUnmatched", req{method: madeUpMethod(t, 512), path: "/no/such/route"}, "anonymous"},
			{"KnownRouteWithoutToken", req{method: "GET", path: "/api/v1/assets"}, "anonymous"},
			{"Metrics", req{method: "GET", path: "/metrics"}, "anonymous"},
			{"UnknownToken", req{method: "POST", path: "/api/v1/assets", token: "guess",
				body: map[string]any{"kind": "table", "namespace": "w", "name": "guessed"}}, "anonymous"},
			{"Token", req{method: "POST", path: "/api/v1/assets", token: s.Write,
				body: map[string]any{"kind": "table", "namespace": "w", "name": "over"}}, "token"},
		}
		want := map[string]float64{`kind="anonymous"`: 0, `kind="token"`: 0}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if got := s.do(t, tc.r); got.status != 429 {
					t.Fatalf("%s %.20s = %d, want 429: %s", tc.r.method, tc.r.path, got.status, got.body)
				}
				want[`kind="`+tc.kind+`"`]++
				if got := series(gather(t, reg), "tidemark_http_rate_limited_total"); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("tidemark_http_rate_limited_total = %v, want %v", got, want)
				}
			})
		}

		after := gather(t, reg)
		// Refusals by the anonymous limiter (before any route's handler) leave the per-route
		// series as they were; the token's and the guessed token's 429 come from the route.
		b, a := series(before, "tidemark_http_requests_total"), series(after, "tidemark_http_requests_total")
		for labels, n := range a {
			if strings.Contains(labels, `route="/api/v1/assets"`) && strings.Contains(labels, `method="POST"`) && strings.Contains(labels, `status="429"`) {
				continue
			}
			if n != b[labels] {
				t.Errorf("tidemark_http_requests_total{%.200s} went from %v to %v on refused requests", labels, b[labels], n)
			}
		}
		for labels := range a {
			if m := methodLabel.FindStringSubmatch(labels); m == nil || !fixedMethods[m[1]] {
				t.Errorf("tidemark_http_requests_total{%.200s}: method not in the fixed set", labels)
			}
		}
	})
}

// logBuffer is a Config.Logger that keeps every record at Info and above, for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(lockedWriter{&l.mu, &l.buf}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// records returns the logged records with message msg.
func (l *logBuffer) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestUnavailableIsLoggedWithCause: a 503 tells the client to retry; the operator needs its cause
// (an OpenLineage event answered 503 after 11 s on SQLite with nothing in the log).
func TestUnavailableIsLoggedWithCause(t *testing.T) {
	cases := []struct {
		name  string
		path  string
		fault func(s *testServer)
		cause string
	}{
		{"DomainBackPressure", "/test/unavailable/:id", func(s *testServer) {
			// An injected fault: a domain refusal for now, as the lineage graph gives while loading.
			s.Shell.Echo().GET("/test/unavailable/:id", func(c echo.Context) error {
				return fmt.Errorf("lineage: ingest: %w", &catalog.Error{Kind: catalog.ErrUnavailable, Message: "the lineage graph is loading"})
			})
		}, "lineage: ingest: the lineage graph is loading"},
		{"DatabaseClosed", "/api/v1/assets", func(s *testServer) { s.DB.Close() }, "database is closed"},
	}
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var logs logBuffer
					s := startServer(t, storagetest.Open(t, backend), func(c *handlers.Config, sc *server.Config) { c.Logger, sc.Logger = logs.logger(), logs.logger() })
					tc.fault(s)
					path := strings.Replace(tc.path, ":id", strings.Repeat("p", 4000), 1)
					got := s.do(t, req{method: "GET", path: path})
					if got.status != 503 || got.header.Get("Retry-After") == "" {
						t.Fatalf("GET %.40s = %d (Retry-After %q), want 503 with Retry-After: %s", path, got.status, got.header.Get("Retry-After"), got.body)
					}
					var p struct {
						RequestID string `json:"request_id"`
					}
					got.decode(t, &p)
					recs := logs.records(t, "request unavailable")
					if len(recs) != 1 {
						t.Fatalf("%d \"request unavailable\" records, want 1; log:\n%s", len(recs), logs.String())
					}
					r := recs[0]
					if r["level"] != "WARN" || r["method"] != "GET" || r["route"] != tc.path || r["request_id"] != p.RequestID || p.RequestID == "" ||
						!strings.Contains(fmt.Sprint(r["err"]), tc.cause) {
						t.Errorf("logged %v, want WARN with method GET, route %s, request_id %q and err naming %q", r, tc.path, p.RequestID, tc.cause)
					}
					if lp, _ := r["path"].(string); len(lp) > 300 || !strings.HasPrefix(path, strings.TrimSuffix(lp, "…")) {
						t.Errorf("logged path of %d bytes, want the request path cut to at most 256: %.80q", len(lp), lp)
					}
				})
			}
		})
	}
}

// TestLogsClipClientInput: a made-up method and a long path reach the request and panic logs
// cut short, and a panic is still logged and counted as a 500.
func TestLogsClipClientInput(t *testing.T) {
	var logs *logBuffer
	var reg *prometheus.Registry
	eachBackendTweaked(t, func(c *handlers.Config, sc *server.Config) {
		logs, reg = &logBuffer{}, prometheus.NewRegistry()
		c.Logger, sc.Logger, sc.Registry = logs.logger(), logs.logger(), reg
	}, func(t *testing.T, s *testServer) {
		long := "/test/panic/" + strings.Repeat("q", 8000)
		method := madeUpMethod(t, 4096)
		// A route for the made-up method itself, so the request reaches a handler that panics.
		s.Shell.Echo().Add(method, "/test/panic/*", func(echo.Context) error { panic("handler bug") })
		if got := s.do(t, req{method: method, path: long}); got.status != 500 {
			t.Fatalf("panicking handler = %d, want 500: %s", got.status, got.body)
		}
		if got := series(gather(t, reg), "tidemark_http_requests_total")[`method="other",route="/test/panic/*",status="500"`]; got != 1 {
			t.Errorf("panic counted %v times as method=other route=/test/panic/* status=500, want 1", got)
		}
		for _, msg := range []string{"panic", "request"} {
			recs := logs.records(t, msg)
			if len(recs) != 1 {
				t.Fatalf("%d %q records, want 1; log:\n%.2000s", len(recs), msg, logs.String())
			}
			for k, v := range recs[0] {
				if s := fmt.Sprint(v); len(s) > 300 && k != "stack" {
					t.Errorf("%q record's %s is %d bytes, want client input cut short: %.80q", msg, k, len(s), s)
				}
			}
		}
		if r := logs.records(t, "request")[0]; r["method"] != "other" || r["status"] != float64(500) ||
			!strings.HasPrefix(method, strings.TrimSuffix(fmt.Sprint(r["method_prefix"]), "…")) || len(fmt.Sprint(r["method_prefix"])) > 20 {
			t.Errorf("request logged as %v, want method other, status 500 and a prefix of the method", r)
		}
	})
}
