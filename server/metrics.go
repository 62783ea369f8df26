package server

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark/tidemark/internal/clip"
)

// metrics counts requests and times them by method (known or "other"), route template (not raw
// path, which would make a series per asset ID) and status. It runs after the anonymous limiter,
// so a flood of refused requests leaves these series alone (see rateLimitedCounter).
func metrics(reg *prometheus.Registry) echo.MiddlewareFunc {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_http_requests_total", Help: "HTTP requests by method, route and status.",
	}, []string{"method", "route", "status"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "tidemark_http_request_duration_seconds", Help: "HTTP request latency by method and route.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route"})
	reg.MustRegister(requests, latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err) // write the response now so the status is known
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			method := methodLabel(c.Request().Method)
			requests.WithLabelValues(method, route, strconv.Itoa(c.Response().Status)).Inc()
			latency.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

// rateLimitedCounter counts 429s by the budget that was spent, "anonymous" (a client address)
// or "token": the anonymous limiter refuses before metrics counts, so without this a flood it
// turns away would not show at all. Two fixed label values, whatever the requests carry.
func rateLimitedCounter(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tidemark_http_rate_limited_total",
		Help: "Requests refused with 429 by a rate limit, by budget: anonymous (client address) or token."}, []string{"kind"})
	reg.MustRegister(c)
	return c
}

// knownMethods are the methods named as they are in metric labels and logs. A method is any
// token the client invents, up to the 1 MB header limit; a label value or a log field per
// invention grows /metrics, the process and the log without bound.
var knownMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true,
	"OPTIONS": true, "CONNECT": true, "TRACE": true,
}

// methodLabel is the method, or "other" when it is not a known one.
func methodLabel(m string) string {
	if knownMethods[m] {
		return m
	}
	return "other"
}

// methodAttrs are the log fields naming a request's method: a known one whole, any other as
// "other" with its first 16 bytes, enough to tell a typo from a flood.
func methodAttrs(m string) []any {
	if knownMethods[m] {
		return []any{"method", m}
	}
	return []any{"method", "other", "method_prefix", clip.String(m, 16)}
}

// maxLoggedPath bounds a request path in a log line: Go only bounds it by the 1 MB header
// limit, and a route is told apart well within 256 bytes.
const maxLoggedPath = 256

// MetricsHandler serves the registry's metrics (the API mounts it at /metrics).
func (s *Server) MetricsHandler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{}))
}
