package handlers

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
)

// requireScope checks the token the shell verified (package server) grants need. Writes always
// need a token; reads only with AuthReads. The actor recorded in the audit log is the token's
// name. The shell has already charged the request to the token's or the address's budget.
func (a *API) requireScope(need auth.Scope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ctx := catalog.WithRequestID(r.Context(), c.Response().Header().Get(echo.HeaderXRequestID))
			if a.cfg.NoAuth || (need == auth.ScopeRead && !a.cfg.AuthReads) {
				c.SetRequest(r.WithContext(catalog.WithActor(ctx, "anonymous")))
				return next(c)
			}
			tok, err := auth.Require(ctx, need)
			if err != nil {
				return authProblem(err, need)
			}
			c.SetRequest(r.WithContext(catalog.WithActor(ctx, "token:"+tok.Name)))
			c.Set(tokenKey, tok)
			return next(c)
		}
	}
}

// authProblem words a refused credential for the JSON API; a failed look-up stays an error.
func authProblem(err error, need auth.Scope) error {
	var se *auth.ScopeError
	switch {
	case errors.Is(err, auth.ErrNoCredential):
		return newProblem(http.StatusUnauthorized, fmt.Sprintf(
			"this request needs a token with the %s scope: send Authorization: Bearer <token> (create one with `tidemark token create --name NAME --scopes %s`)", need, need))
	case errors.Is(err, auth.ErrMalformed):
		return newProblem(http.StatusUnauthorized, "the Authorization header must be `Bearer <token>`")
	case errors.Is(err, auth.ErrUnknownToken):
		return newProblem(http.StatusUnauthorized, "the bearer token is not recognised or has been revoked; check it or create a new one")
	case errors.As(err, &se):
		return newProblem(http.StatusForbidden, fmt.Sprintf("token %q has scopes %v; this request needs %s", se.Token.Name, se.Token.Scopes, need))
	}
	return err
}

// tokenKey holds the token of a request requireScope authenticated (not of an anonymous read).
const tokenKey = "tidemark.token"

// allows reports whether the request's token grants a scope (everything is allowed when
// authentication is off).
func (a *API) allows(c echo.Context, need auth.Scope) bool {
	if a.cfg.NoAuth {
		return true
	}
	tok, ok := c.Get(tokenKey).(auth.Token)
	return ok && tok.Allows(need)
}
