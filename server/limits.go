package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// checkHost refuses requests whose Host is not one of hosts. Without authentication, a DNS
// rebinding page (evil.example resolving to 127.0.0.1) could otherwise read and write through
// the visitor's browser: its requests carry Host: evil.example.
func checkHost(hosts []string) echo.MiddlewareFunc {
	allowed := map[string]bool{}
	for _, h := range hosts {
		allowed[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			host := c.Request().Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !allowed[strings.ToLower(strings.Trim(host, "[]"))] {
				return &Error{Status: http.StatusMisdirectedRequest, Message: fmt.Sprintf(
					"Host %q is not this server's name: without authentication only %s are answered", c.Request().Host, strings.Join(hosts, ", "))}
			}
			return next(c)
		}
	}
}

// limiters hands out one token bucket a key (a token's name, a client address), forgetting
// keys idle for ten minutes so a scan of addresses cannot grow it without bound.
type limiters struct {
	rps   rate.Limit
	burst int
	now   func() time.Time
	// refused counts the requests turned away: here, so every caller of allow is counted.
	refused prometheus.Counter

	mu    sync.Mutex
	m     map[string]*limiterEntry
	swept time.Time
}

type limiterEntry struct {
	lim  *rate.Limiter
	seen time.Time
}

func newLimiters(rps float64, now func() time.Time, refused prometheus.Counter) *limiters {
	if rps <= 0 {
		return nil
	}
	return &limiters{rps: rate.Limit(rps), burst: max(1, int(2*rps)), now: now, refused: refused, m: map[string]*limiterEntry{}}
}

// allow takes one request from key's bucket; when it is empty it returns how long to wait.
func (l *limiters) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	if now.Sub(l.swept) > time.Minute {
		for k, e := range l.m {
			if now.Sub(e.seen) > 10*time.Minute {
				delete(l.m, k)
			}
		}
		l.swept = now
	}
	e := l.m[key]
	if e == nil {
		e = &limiterEntry{lim: rate.NewLimiter(l.rps, l.burst)}
		l.m[key] = e
	}
	e.seen = now
	l.mu.Unlock()
	r := e.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		l.refused.Inc()
		return false, d
	}
	return true, 0
}
