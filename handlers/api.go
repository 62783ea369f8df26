// Package handlers is Tidemark's JSON API, one of the three faces mounted into the HTTP shell
// (package server): routes under /api and the ops routes (/healthz, /metrics,
// /api/openapi.json), request and response types, input validation, each route's scope check,
// and the single mapping from domain and shell errors to problem+json responses. It holds no
// business rules; each handler parses, calls one domain function, and answers.
package handlers

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
	"github.com/tidemark/tidemark/warehouse"
)

// Config wires the API to the domain.
type Config struct {
	Catalog *catalog.Catalog
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
	// Notify keeps subscriptions to assets' changes and the webhooks notifications go to; nil
	// leaves those routes out.
	Notify *notify.Service
	// Cleanup answers the cleanup scans; nil leaves those routes out.
	Cleanup *cleanup.Service
	// Reconcile keeps dataset migrations and their reconciliation runs; nil leaves those routes out.
	Reconcile *reconcile.Service
	// Versions answers dataset versions (timeline, lineage between versions, impact); nil
	// leaves those routes out.
	Versions *versions.Service
	Version  string
}

// DefaultBodyLimit is 1 MiB: an asset definition is a few hundred bytes; far larger is a mistake.
const DefaultBodyLimit = 1 << 20

// API is the JSON API mounted into the shell, and the description of its routes.
type API struct {
	e   *echo.Echo
	srv *server.Server
	cfg Config
	ops []operation
	// Ingest outcomes, for dashboards and alerts on producers that send bad events.
	lineageEvents *prometheus.CounterVec
	usageRecords  *prometheus.CounterVec
}

// Mount adds the API's routes to the shell and makes problem+json the error model of the paths
// it serves, /api, /healthz and /metrics, and of every path no face claims (in the whole
// process the web UI claims those, and answers them with its HTML error page).
func Mount(srv *server.Server, cfg Config) *API {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.LineageBodyLimit <= 0 {
		cfg.LineageBodyLimit = DefaultLineageBodyLimit
	}
	a := &API{e: srv.Echo(), srv: srv, cfg: cfg,
		lineageEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_lineage_events_total",
			Help: "OpenLineage events received, by outcome: created, duplicate, refused."}, []string{"outcome"}),
		usageRecords: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_usage_records_total",
			Help: "Usage records received, by status: accepted, duplicate, refused, unresolved."}, []string{"status"}),
	}
	srv.Registry().MustRegister(a.lineageEvents, a.usageRecords)
	if b := cfg.Lineage; b != nil {
		// The node budget of the lineage answers in flight: what it holds, and how often it
		// refused (a rising count says the budget or the clients need looking at).
		srv.Registry().MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tidemark_lineage_budget_reserved_nodes",
				Help: "Nodes the lineage answers in flight hold of the node budget."}, func() float64 { return float64(b.Budget().Reserved()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tidemark_lineage_budget_refusals_total",
				Help: "Lineage answers refused (503) because the node budget had no room within the wait."}, func() float64 { return float64(b.Budget().Refused()) }))
	}
	// Every path no face claims too ("/*"), until the web UI, mounted after the API, claims it.
	for _, p := range []string{"/*", "/api", "/api/*", "/healthz", "/metrics"} {
		srv.ErrorModel(p, errorHandler(cfg.Logger))
	}
	a.routes()
	// An unknown path under /api keeps its problem+json 404 (the web UI answers other unknown
	// paths with its 404 page).
	srv.Fallback("/api/*", nil)
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
	a.versionRoutes()
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
	}, a.srv.MetricsHandler())
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/openapi.json",
		Summary:   "This API's OpenAPI 3 document",
		Tag:       "ops",
		Open:      true,
		Responses: map[int]any{200: map[string]any{}},
	}, a.openAPI)
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
