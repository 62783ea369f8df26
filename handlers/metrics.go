package handlers

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics counts requests and times them by route template (not raw path, which would make a
// series per asset ID) and status.
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
			requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(c.Response().Status)).Inc()
			latency.WithLabelValues(c.Request().Method, route).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

func (a *API) metricsHandler() echo.HandlerFunc {
	return echo.WrapHandler(promhttp.HandlerFor(a.cfg.Registry, promhttp.HandlerOpts{}))
}
