// Package handlers is Tidemark's JSON API on echo: routes, request and response types, input
// validation, auth, and the single mapping from domain errors to problem+json responses. It
// holds no business rules; each handler parses, calls one domain function, and answers.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/internal/clip"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/warehouse"
)

// Config wires the API to the domain.
type Config struct {
	Catalog *catalog.Catalog
	Tokens  *auth.Store
	// Ping checks the database for /healthz.
	Ping func(context.Context) error
	// SearchIndex says, for /healthz, whether assets from before search still wait for their
	// search docs ("indexing") or not ("ready"); nil or "" leaves it out.
	SearchIndex func() string
	Logger      *slog.Logger
	// AuthReads makes reads need a token with the read scope; writes always need write.
	AuthReads bool
	// NoAuth turns authentication off entirely (refused by the CLI unless on loopback).
	NoAuth bool
	// BodyLimit caps request bodies in bytes (default 1 MiB).
	BodyLimit int64
	// Lineage ingests OpenLineage and answers graph queries; nil leaves those routes out.
	Lineage *lineage.Service
	// LineageBodyLimit caps OpenLineage request bodies, before and after gzip (default 4 MiB).
	LineageBodyLimit int64
	// Usage records and answers usage; nil leaves those routes out.
	Usage *usage.Service
	// Tables registers, syncs and inspects Iceberg tables; nil leaves those routes out.
	Tables *tables.Service
	// Warehouse serves Tidemark's own warehouses (commits, inventory, commit health); nil leaves
	// the commit routes out and refuses no asset edit as served.
	Warehouse *warehouse.Service
	// Cleanup answers the cleanup scans; nil leaves those routes out.
	Cleanup *cleanup.Service
	// Reconcile keeps dataset migrations and their reconciliation runs; nil leaves those routes out.
	Reconcile *reconcile.Service
	// HSTS sends Strict-Transport-Security on every answer (the server is reached over HTTPS).
	HSTS bool
	// AllowedHosts, when set, are the only Host names answered (the CLI sets the loopback names
	// with NoAuth, against DNS rebinding).
	AllowedHosts []string
	// RateLimit is requests per second a token may send (bursts of twice that); 0 is unlimited.
	RateLimit float64
	// AnonymousRateLimit is requests per second a client address may send without a token
	// (and with tokens that fail); 0 is unlimited.
	AnonymousRateLimit float64
	// Registry receives the HTTP metrics; nil makes a private one.
	Registry *prometheus.Registry
	Version  string
}

// DefaultBodyLimit is 1 MiB: an asset definition is a few hundred bytes; far larger is a mistake.
const DefaultBodyLimit = 1 << 20

// API is the configured echo server and the description of its routes.
type API struct {
	*echo.Echo
	cfg Config
	ops []operation
	// Ingest outcomes, for dashboards and alerts on producers that send bad events.
	lineageEvents *prometheus.CounterVec
	usageRecords  *prometheus.CounterVec
	tokens, anon  *limiters
}

// New builds the API.
func New(cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.LineageBodyLimit <= 0 {
		cfg.LineageBodyLimit = DefaultLineageBodyLimit
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(cfg.Logger)
	// Client addresses are the connection's: a header naming one is the client's to forge.
	e.IPExtractor = echo.ExtractIPDirect()
	rateLimited := rateLimitedCounter(cfg.Registry)
	a := &API{Echo: e, cfg: cfg,
		tokens: newLimiters(cfg.RateLimit, rateLimited.WithLabelValues("token")),
		anon:   newLimiters(cfg.AnonymousRateLimit, rateLimited.WithLabelValues("anonymous")),
		lineageEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_lineage_events_total",
			Help: "OpenLineage events received, by outcome: created, duplicate, refused."}, []string{"outcome"}),
		usageRecords: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_usage_records_total",
			Help: "Usage records received, by status: accepted, duplicate, refused, unresolved."}, []string{"status"}),
	}
	cfg.Registry.MustRegister(a.lineageEvents, a.usageRecords)

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
	e.Use(a.limitAnonymous)
	// After the limiter, so the requests it refuses (anonymous, with any method) make no series:
	// they are counted in tidemark_http_rate_limited_total instead.
	e.Use(metrics(cfg.Registry))
	// Inside requestLog and metrics, so a handler's panic is logged and counted as a 500; the
	// middlewares above it are this package's and small, and net/http recovers their panics.
	e.Use(recoverer(cfg.Logger))
	e.Use(validParams)

	a.routes()
	return a
}

func (a *API) routes() {
	a.assetRoutes()
	a.auditRoutes()
	a.lineageRoutes()
	a.usageRoutes()
	a.impactRoutes()
	a.tableRoutes()
	a.scanRoutes()
	a.refCheckRoutes()
	a.proposalRoutes()
	a.subscriptionRoutes()
	a.migrationRoutes()
	a.curationRoutes()
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/healthz",
		Summary:   "Liveness and database check",
		Tag:       "ops",
		Open:      true,
		Responses: map[int]any{200: healthResponse{}, 503: healthResponse{}},
	}, a.health)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/metrics",
		Summary: "Prometheus metrics",
		Tag:     "ops",
		Open:    true,
		Text:    true,
	}, a.metricsHandler())
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/openapi.json",
		Summary:   "This API's OpenAPI 3 document",
		Tag:       "ops",
		Open:      true,
		Responses: map[int]any{200: map[string]any{}},
	}, a.openAPI)
}

// recoverer turns a panic into a logged 500 instead of a dropped connection.
func recoverer(log *slog.Logger) echo.MiddlewareFunc {
	return middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", append(methodAttrs(c.Request().Method), "route", c.Path(), "path", clip.String(c.Request().URL.Path, maxLoggedPath),
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID), "err", err, "stack", string(stack))...)
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

// bodyLimit refuses a declared oversize body at once and caps an undeclared one while reading.
func bodyLimit(limit int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > limit {
				return &http.MaxBytesError{Limit: limit}
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
			return next(c)
		}
	}
}

// pathParam returns a path parameter decoded once: echo leaves it escaped when the request path
// needed escaping (RawPath set) and decoded otherwise.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", badRequest(name, "path parameter %s is not validly escaped", name)
	}
	return u, nil
}

type healthResponse struct {
	Status   string `json:"status"`
	Database string `json:"database"`
	// Graph is "ready", or "loading" while the lineage graph is read at start (lineage answers
	// 503 until then); absent without lineage.
	Graph string `json:"graph,omitempty"`
	// SearchIndex is "indexing" while assets from before search are given their search docs in
	// the background (search misses them until then), "ready" after.
	SearchIndex string `json:"search_index,omitempty"`
	Version     string `json:"version,omitempty"`
}

func (a *API) health(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := a.cfg.Ping(ctx); err != nil {
		a.cfg.Logger.Warn("health check: database unreachable", "err", err)
		return c.JSON(http.StatusServiceUnavailable, healthResponse{Status: "unavailable", Database: "unreachable", Version: a.cfg.Version})
	}
	out := healthResponse{Status: "ok", Database: "ok", Version: a.cfg.Version}
	if a.cfg.Lineage != nil {
		out.Graph = "loading"
		if a.cfg.Lineage.Graph().Freshness().Ready {
			out.Graph = "ready"
		}
	}
	if a.cfg.SearchIndex != nil {
		out.SearchIndex = a.cfg.SearchIndex()
	}
	return c.JSON(http.StatusOK, out)
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
