package handlers

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tidemark/tidemark/auth"
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
				return newProblem(http.StatusMisdirectedRequest, fmt.Sprintf(
					"Host %q is not this server's name: without authentication only %s are answered", c.Request().Host, strings.Join(hosts, ", ")))
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

func newLimiters(rps float64, refused prometheus.Counter) *limiters {
	if rps <= 0 {
		return nil
	}
	return &limiters{rps: rate.Limit(rps), burst: max(1, int(2*rps)), refused: refused, m: map[string]*limiterEntry{}}
}

// allow takes one request from key's bucket; when it is empty it returns how long to wait.
func (l *limiters) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := time.Now()
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

// AllowToken charges one request to a token's rate limit (--rate-limit), for the faces that
// authenticate tokens themselves (the Iceberg REST catalog): false with the wait when over it.
func (a *API) AllowToken(name string) (bool, time.Duration) { return a.tokens.allow(name) }

// AllowAddress charges a request to its client address's budget (--rate-limit-anonymous), for
// the faces that authenticate themselves: a failed authentication (an unknown token, a wrong
// OAuth secret) costs the address. A request is charged to its address at most once, however
// many layers refuse it.
func (a *API) AllowAddress(c echo.Context) (bool, time.Duration) {
	if c.Get(addressChargedKey) != nil {
		return true, 0
	}
	c.Set(addressChargedKey, true)
	return a.anon.allow(c.RealIP())
}

const (
	addressChargedKey = "tidemark.address-charged"
	verifiedKey       = "tidemark.verified-token"
)

// tooMany is the 429 answer, with Retry-After in whole seconds (at least 1).
func tooMany(c echo.Context, who string, wait time.Duration) error {
	c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	return newProblem(http.StatusTooManyRequests, fmt.Sprintf("%s sent more requests than its rate limit allows; retry after %s", who, wait.Round(time.Millisecond)))
}

// limitAnonymous charges to the client address (the connection's, never a header's:
// X-Forwarded-For is the client's to write) every request that does not carry a token that
// verifies: no Authorization header, another scheme, a malformed, unknown or revoked token. Only
// a verified token exempts a request; it is then charged to the token by the face that
// authenticates it. A header alone buys nothing: "Authorization: x" on any path is anonymous.
// It runs before metrics (the request log still writes each refusal, one bounded line): a
// refusal here is counted only in tidemark_http_rate_limited_total, so an anonymous flood
// cannot grow the per-route series.
func (a *API) limitAnonymous(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a.anon == nil {
			return next(c)
		}
		if _, ok := a.verifiedToken(c); ok {
			return next(c)
		}
		if err := a.chargeAddress(c); err != nil {
			return err
		}
		return next(c)
	}
}

// verifiedToken returns the request's bearer token when it verifies, remembering the answer
// for the request (requireScope asks again). A failed look-up is "not verified": the address
// pays, and the face that authenticates reports the error.
func (a *API) verifiedToken(c echo.Context) (auth.Token, bool) {
	if tok, ok := c.Get(verifiedKey).(auth.Token); ok {
		return tok, true
	}
	secret, ok := auth.BearerSecret(c.Request().Header.Get(echo.HeaderAuthorization))
	if !ok || a.cfg.Tokens == nil {
		return auth.Token{}, false
	}
	tok, err := a.cfg.Tokens.Verify(c.Request().Context(), secret)
	if err != nil {
		return auth.Token{}, false
	}
	c.Set(verifiedKey, tok)
	return tok, true
}

// chargeAddress takes one request from the client address's budget: 429 when it is spent.
func (a *API) chargeAddress(c echo.Context) error {
	if ok, wait := a.AllowAddress(c); !ok {
		return tooMany(c, "address "+c.RealIP(), wait)
	}
	return nil
}
