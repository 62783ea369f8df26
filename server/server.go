// Package server is where HTTP starts: the one echo server Tidemark's three faces (the JSON API
// in handlers, the web UI in web, the Iceberg REST catalog in restcatalog) mount into as peers.
// It owns what every request goes through: request IDs, the request log, the Host check, HSTS,
// bearer authentication (the token verified once, put in the context through auth), the rate
// limits (the token's budget, or the client address's for no token or one that fails), the HTTP
// metrics and panic recovery. Errors it writes itself, and every error a route returns, are
// answered in the error model of the face that owns the path (ErrorModel).
package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/internal/clip"
)

// Config is the shell's configuration: what every face shares.
type Config struct {
	// Tokens verifies bearer tokens; nil verifies none (every request is anonymous).
	Tokens *auth.Store
	Logger *slog.Logger
	// HSTS sends Strict-Transport-Security on every answer (the server is reached over HTTPS).
	HSTS bool
	// AllowedHosts, when set, are the only Host names answered (the CLI sets the loopback names
	// with authentication off, against DNS rebinding).
	AllowedHosts []string
	// RateLimit is requests per second a token may send (bursts of twice that); 0 is unlimited.
	RateLimit float64
	// AnonymousRateLimit is requests per second a client address may send without a token
	// (and with tokens that fail); 0 is unlimited.
	AnonymousRateLimit float64
	// Registry receives the HTTP metrics; nil makes a private one.
	Registry *prometheus.Registry
	// Now is the rate limits' clock (tests); nil is time.Now.
	Now func() time.Time
}

// Error is an answer the shell gives before a face's route runs (a refused Host, a spent rate
// limit); each face's error model words it in its own format.
type Error struct {
	Status  int
	Message string
	// Field names the parameter at fault, when one is.
	Field string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// Render writes err as an HTTP answer in one face's error model.
type Render func(c echo.Context, err error)

// Server is the echo server with the shared middleware; faces add their routes to Echo.
type Server struct {
	e            *echo.Echo
	cfg          Config
	tokens, anon *limiters
	models       []model
	fallbacks    map[string]bool // route patterns registered with Fallback
}

type model struct {
	prefix string
	exact  bool
	render Render
}

// New builds the shell. Faces mount into it; until one claims a path with ErrorModel, errors
// there are echo's plain JSON.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// Client addresses are the connection's: a header naming one is the client's to forge.
	e.IPExtractor = echo.ExtractIPDirect()
	rateLimited := rateLimitedCounter(cfg.Registry)
	s := &Server{e: e, cfg: cfg, fallbacks: map[string]bool{},
		tokens: newLimiters(cfg.RateLimit, cfg.Now, rateLimited.WithLabelValues("token")),
		anon:   newLimiters(cfg.AnonymousRateLimit, cfg.Now, rateLimited.WithLabelValues("anonymous")),
	}
	e.HTTPErrorHandler = s.renderError

	e.Use(dropBadRequestID) // before RequestID, which keeps a client's ID as it is
	e.Use(middleware.RequestID())
	e.Use(requestLog(cfg.Logger))
	// Before the limiter, so a rebinding page's refused requests do not spend the address's budget.
	if len(cfg.AllowedHosts) > 0 {
		e.Use(checkHost(cfg.AllowedHosts))
	}
	if cfg.HSTS {
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				c.Response().Header().Set("Strict-Transport-Security", "max-age=31536000")
				return next(c)
			}
		})
	}
	e.Use(s.authenticate)
	// After the limiter, so the requests it refuses make no series: they are counted in
	// tidemark_http_rate_limited_total instead.
	e.Use(metrics(cfg.Registry))
	// Inside requestLog and metrics, so a handler's panic is logged and counted as a 500; the
	// middlewares above it are this package's and small, and net/http recovers their panics.
	e.Use(recoverer(cfg.Logger))
	e.Use(validParams)
	return s
}

// Echo is the server the faces add their routes to.
func (s *Server) Echo() *echo.Echo { return s.e }

// Registry is where the faces register their own metrics (served at /metrics by the API).
func (s *Server) Registry() *prometheus.Registry { return s.cfg.Registry }

// ServeHTTP answers a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.e.ServeHTTP(w, r) }

// ErrorModel makes render answer every error on the paths pattern names: an exact path, or a
// prefix ending in * ("/iceberg/*"; "/*" is every path no other pattern claims). An exact path
// wins over a prefix, a longer prefix over a shorter; a pattern claimed again is the later
// claim's (the API answers "/*" until the UI, mounted after it, takes it). It answers the errors
// a face's routes return and those the shell raises before they run.
func (s *Server) ErrorModel(pattern string, render Render) {
	m := model{prefix: strings.TrimSuffix(pattern, "*"), exact: !strings.HasSuffix(pattern, "*"), render: render}
	for i, o := range s.models {
		if o.prefix == m.prefix && o.exact == m.exact {
			s.models[i] = m
			return
		}
	}
	s.models = append(s.models, m)
	sort.SliceStable(s.models, func(i, j int) bool {
		a, b := s.models[i], s.models[j]
		if a.exact != b.exact {
			return a.exact
		}
		return len(a.prefix) > len(b.prefix)
	})
}

func (s *Server) renderError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	path := c.Request().URL.Path
	for _, m := range s.models {
		if m.exact && path == m.prefix || !m.exact && strings.HasPrefix(path, m.prefix) {
			m.render(c, err)
			return
		}
	}
	s.e.DefaultHTTPErrorHandler(err, c)
}

// LogAttrs are the log fields naming a request: method, route, path (bounded) and request ID.
func LogAttrs(c echo.Context) []any {
	return append(methodAttrs(c.Request().Method), "route", c.Path(), "path", clip.String(c.Request().URL.Path, maxLoggedPath),
		"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
}

// recoverer turns a panic into a logged 500 instead of a dropped connection.
func recoverer(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", append(LogAttrs(c), "err", err, "stack", string(stack))...)
			return err
		},
	})
}

func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err)
			}
			// The route template, not the path: it is bounded, and the path may hold names and IDs.
			log.Info("request", append(methodAttrs(c.Request().Method), "route", c.Path(), "status", c.Response().Status,
				"duration_ms", time.Since(start).Milliseconds(), "request_id", c.Response().Header().Get(echo.HeaderXRequestID))...)
			return nil
		}
	}
}

// dropBadRequestID removes a client's X-Request-ID unless it is a short token (at most 64 of
// A-Z a-z 0-9 . _ -), so one is generated instead: the ID goes into logs and the append-only
// audit log, where a client must not put half a megabyte or control characters.
func dropBadRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header
		if id := h.Get(echo.HeaderXRequestID); id != "" && !validRequestID(id) {
			h.Del(echo.HeaderXRequestID)
		}
		return next(c)
	}
}

func validRequestID(id string) bool {
	if len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
