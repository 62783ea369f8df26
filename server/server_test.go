package server_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/server"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func newClock() *clock               { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func quiet() *slog.Logger            { return slog.New(slog.DiscardHandler) }
func model(name string) server.Render {
	return func(c echo.Context, err error) { _ = c.String(599, name+": "+err.Error()) }
}
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestErrorModelsByPath: an error is answered by the model registered for its path: an exact
// path before a prefix, a longer prefix before a shorter, "/*" for the rest, and a pattern
// claimed twice by its later claim.
func TestErrorModelsByPath(t *testing.T) {
	srv := server.New(server.Config{Logger: quiet()})
	srv.ErrorModel("/*", model("default"))
	srv.ErrorModel("/iceberg/*", model("iceberg"))
	srv.ErrorModel("/iceberg/v1/special/*", model("special"))
	srv.ErrorModel("/", model("home"))
	srv.ErrorModel("/pages/*", model("first"))
	srv.ErrorModel("/pages/*", model("pages")) // claimed again: the later claim answers
	fail := func(echo.Context) error { return errors.New("boom") }
	for _, p := range []string{"/", "/x", "/iceberg/v1/a", "/iceberg/v1/special/a", "/pages/a"} {
		srv.Echo().GET(p, fail)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	for path, want := range map[string]string{
		"/":                     "home: boom",
		"/x":                    "default: boom",
		"/iceberg/v1/a":         "iceberg: boom",
		"/iceberg/v1/special/a": "special: boom",
		"/iceberg/v1/unknown":   "iceberg: code=404, message=Not Found",
		"/pages/a":              "pages: boom",
	} {
		if code, body := get(t, ts.URL+path); code != 599 || body != want {
			t.Errorf("GET %s = %d %q, want %q", path, code, body, want)
		}
	}
}

// TestOneAuthenticationLayer: the shell puts what a request presented in its context, and
// charges a request without a verified token to the client address: past the burst it answers
// 429 with Retry-After, whatever the Authorization header says, until the budget refills.
func TestOneAuthenticationLayer(t *testing.T) {
	c := newClock()
	srv := server.New(server.Config{Logger: quiet(), AnonymousRateLimit: 1, Now: c.Now}) // no token store: nothing verifies
	srv.ErrorModel("/*", func(c echo.Context, err error) {
		var se *server.Error
		if !errors.As(err, &se) {
			t.Errorf("the shell raised %v, want a *server.Error", err)
			return
		}
		_ = c.String(se.Status, se.Message)
	})
	var seen []auth.Credential
	var mu sync.Mutex
	srv.Echo().GET("/x", func(c echo.Context) error {
		mu.Lock()
		seen = append(seen, auth.CredentialFrom(c.Request().Context()))
		mu.Unlock()
		return c.String(200, "ok")
	})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	send := func(authorization string) (int, string) {
		req, _ := http.NewRequest("GET", ts.URL+"/x", nil)
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("429 with Retry-After %q, want 1", resp.Header.Get("Retry-After"))
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i, want := range []int{200, 200, 429, 429} {
		if code, body := send([]string{"Bearer tdm_madeup", "Basic eDp5", "", "Bearer tdm_other"}[i]); code != want {
			t.Fatalf("request %d = %d %s, want %d", i+1, code, body, want)
		}
	}
	c.Add(time.Second)
	if code, body := send("Bearer tdm_madeup"); code != 200 {
		t.Fatalf("after a second = %d %s, want 200", code, body)
	}
	if len(seen) != 3 || !errors.Is(seen[0].Err, auth.ErrUnknownToken) || !errors.Is(seen[1].Err, auth.ErrMalformed) || seen[1].Verified() {
		t.Fatalf("credentials seen by the route: %+v", seen)
	}
}
