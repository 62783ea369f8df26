package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
)

// requireScope authenticates the bearer token and checks it grants need. Writes always need a
// token; reads only with AuthReads. The actor recorded in the audit log is the token's name.
func (a *API) requireScope(need auth.Scope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ctx := catalog.WithRequestID(r.Context(), c.Response().Header().Get(echo.HeaderXRequestID))
			if a.cfg.NoAuth || (need == auth.ScopeRead && !a.cfg.AuthReads) {
				// A token that verified (limitAnonymous looked) pays from its own budget; any other
				// header, from the address's (charged once: limitAnonymous may have already).
				if tok, ok := c.Get(verifiedKey).(auth.Token); ok {
					if ok, wait := a.tokens.allow(tok.Name); !ok {
						return tooMany(c, fmt.Sprintf("token %q", tok.Name), wait)
					}
				} else if r.Header.Get(echo.HeaderAuthorization) != "" {
					if err := a.chargeAddress(c); err != nil {
						return err
					}
				}
				c.SetRequest(r.WithContext(catalog.WithActor(ctx, "anonymous")))
				return next(c)
			}
			h := r.Header.Get(echo.HeaderAuthorization)
			if h == "" {
				return newProblem(http.StatusUnauthorized, fmt.Sprintf(
					"this request needs a token with the %s scope: send Authorization: Bearer <token> (create one with `tidemark token create --name NAME --scopes %s`)", need, need))
			}
			secret, ok := auth.BearerSecret(h)
			if !ok {
				return newProblem(http.StatusUnauthorized, "the Authorization header must be `Bearer <token>`")
			}
			tok, err := a.verifiedOrVerify(c, secret)
			if errors.Is(err, auth.ErrUnknownToken) {
				// Guessing tokens costs the guesser's address (once: limitAnonymous may have charged it).
				if err := a.chargeAddress(c); err != nil {
					return err
				}
				return newProblem(http.StatusUnauthorized, "the bearer token is not recognised or has been revoked; check it or create a new one")
			}
			if err != nil {
				return err
			}
			if ok, wait := a.tokens.allow(tok.Name); !ok {
				return tooMany(c, fmt.Sprintf("token %q", tok.Name), wait)
			}
			if !tok.Allows(need) {
				return newProblem(http.StatusForbidden, fmt.Sprintf(
					"token %q has scopes %v; this request needs %s", tok.Name, tok.Scopes, need))
			}
			c.SetRequest(r.WithContext(catalog.WithActor(ctx, "token:"+tok.Name)))
			c.Set(tokenKey, tok)
			return next(c)
		}
	}
}

const tokenKey = "tidemark.token"

// verifiedOrVerify is the token limitAnonymous verified for this request, or secret verified now
// (with the anonymous limit off, limitAnonymous does not look).
func (a *API) verifiedOrVerify(c echo.Context, secret string) (auth.Token, error) {
	if tok, ok := c.Get(verifiedKey).(auth.Token); ok {
		return tok, nil
	}
	return a.cfg.Tokens.Verify(c.Request().Context(), secret)
}

// allows reports whether the request's token grants a scope (everything is allowed when
// authentication is off).
func (a *API) allows(c echo.Context, need auth.Scope) bool {
	if a.cfg.NoAuth {
		return true
	}
	tok, ok := c.Get(tokenKey).(auth.Token)
	return ok && tok.Allows(need)
}
