package server

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
)

// authenticate is the one place a bearer token is verified, for every face. It puts what the
// request presented in the context (auth.CredentialFrom; each face checks only the scope its
// route needs and words a refusal in its own error model) and charges the request to a budget:
// the token's when it verified, the client address's otherwise (no Authorization header,
// another scheme, a malformed, unknown or revoked token, a failed look-up). A header alone buys
// nothing: guessing tokens spends the guesser's address, on every path. The address is the
// connection's, never a header's (X-Forwarded-For is the client's to write).
//
// It runs before metrics (the request log still writes each refusal, one bounded line): a
// refusal here is counted only in tidemark_http_rate_limited_total, so a flood cannot grow the
// per-route series.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		cred := s.cfg.Tokens.Check(r.Context(), r.Header.Get(echo.HeaderAuthorization))
		if cred.Verified() {
			if ok, wait := s.tokens.allow(cred.Token.Name); !ok {
				return tooMany(c, fmt.Sprintf("token %q", cred.Token.Name), wait)
			}
		} else if ok, wait := s.anon.allow(c.RealIP()); !ok {
			return tooMany(c, "address "+c.RealIP(), wait)
		}
		c.SetRequest(r.WithContext(auth.WithCredential(r.Context(), cred)))
		return next(c)
	}
}

// tooMany is the 429 answer, with Retry-After in whole seconds (at least 1).
func tooMany(c echo.Context, who string, wait time.Duration) error {
	c.Response().Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	return &Error{Status: http.StatusTooManyRequests,
		Message: fmt.Sprintf("%s sent more requests than its rate limit allows; retry after %s", who, wait.Round(time.Millisecond))}
}
