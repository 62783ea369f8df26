package restcatalog

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// Page sizes of the list endpoints.
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
	// IdempotencyKeyLifetime is how long a retried commit with the same key returns the first
	// outcome.
	IdempotencyKeyLifetime string `json:"idempotency-key-lifetime"`
}

// config names the warehouse's prefix; without ?warehouse= the first warehouse is meant.
func (f *Face) config(c echo.Context) error {
	name := c.QueryParam("warehouse")
	ws := f.cfg.Warehouse.Warehouses()
	if len(ws) == 0 {
		return apiError(http.StatusServiceUnavailable, "ServiceUnavailableException", "this Tidemark serves no warehouse: start it with --iceberg-warehouses NAME=LOCATION")
	}
	if name == "" {
		name = ws[0].Name
	}
	w, ok := f.cfg.Warehouse.Warehouse(name)
	if !ok {
		names := make([]string, len(ws))
		for i, w := range ws {
			names[i] = w.Name
		}
		return badRequest("no warehouse is named %q; this catalog serves %s", name, strings.Join(names, ", "))
	}
	return c.JSON(http.StatusOK, configResponse{Defaults: w.ClientConfig(), Overrides: map[string]string{"prefix": name},
		Endpoints: endpointsFor(w), IdempotencyKeyLifetime: IdempotencyLifetime})
}

func pageSize(c echo.Context) (int, error) {
	v := c.QueryParam("pageSize")
	if v == "" {
		return defaultPageSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, badRequest("pageSize must be a positive integer, not %q", v)
	}
	return min(n, maxPageSize), nil
}

func prefix(c echo.Context) (string, error) { return pathParam(c, "prefix") }

type listNamespacesResponse struct {
	NextPageToken *string    `json:"next-page-token,omitempty"`
	Namespaces    [][]string `json:"namespaces"`
}

func (f *Face) listNamespaces(c echo.Context) error {
	wh, err := prefix(c)
	if err != nil {
		return err
	}
	size, err := pageSize(c)
	if err != nil {
		return err
	}
	var parent []string
	if p := c.QueryParam("parent"); p != "" {
		parent = strings.Split(p, "\x1f")
	}
	out, next, err := f.cfg.Warehouse.ListNamespaces(c.Request().Context(), wh, parent, c.QueryParam("pageToken"), size)
	if err != nil {
		return err
	}
	r := listNamespacesResponse{Namespaces: out}
	if next != "" {
		r.NextPageToken = &next
	}
	return c.JSON(http.StatusOK, r)
}

type namespaceBody struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

func (f *Face) createNamespace(c echo.Context) error {
	wh, err := prefix(c)
	if err != nil {
		return err
	}
	var in namespaceBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if len(in.Properties) > 1000 {
		return badRequest("a namespace may have at most 1000 properties, not %d", len(in.Properties))
	}
	ns, err := f.cfg.Warehouse.CreateNamespace(c.Request().Context(), wh, in.Namespace, in.Properties)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, namespaceBody{Namespace: ns.Levels, Properties: ns.Properties})
}

func (f *Face) loadNamespace(c echo.Context) error {
	wh, levels, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	ns, err := f.cfg.Warehouse.LoadNamespace(c.Request().Context(), wh, levels)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, namespaceBody{Namespace: ns.Levels, Properties: ns.Properties})
}

func (f *Face) namespaceExists(c echo.Context) error {
	if err := f.loadNamespaceOnly(c); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (f *Face) loadNamespaceOnly(c echo.Context) error {
	wh, levels, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	_, err = f.cfg.Warehouse.LoadNamespace(c.Request().Context(), wh, levels)
	return err
}

func (f *Face) dropNamespace(c echo.Context) error {
	wh, levels, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	if err := f.cfg.Warehouse.DropNamespace(c.Request().Context(), wh, levels); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type updateNamespaceBody struct {
	Removals []string          `json:"removals"`
	Updates  map[string]string `json:"updates"`
}

type updateNamespaceResponse struct {
	Updated []string `json:"updated"`
	Removed []string `json:"removed"`
	Missing []string `json:"missing,omitempty"`
}

func (f *Face) updateNamespace(c echo.Context) error {
	wh, levels, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	var in updateNamespaceBody
	if err := decode(c, &in); err != nil {
		return err
	}
	u, err := f.cfg.Warehouse.UpdateNamespaceProperties(c.Request().Context(), wh, levels, in.Removals, in.Updates)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, updateNamespaceResponse{Updated: u.Updated, Removed: u.Removed, Missing: u.Missing})
}

type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int    `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// token is the OAuth2 client-credentials endpoint REST clients call: the client ID is a
// Tidemark token's name and the secret the token itself, which is what it hands back. Tokens
// do not expire, so expires_in only says when to ask again.
func (f *Face) token(c echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		return c.JSON(http.StatusBadRequest, oauthError{"invalid_request", "the body must be application/x-www-form-urlencoded"})
	}
	form := c.Request().PostForm
	if g := form.Get("grant_type"); g != "client_credentials" {
		return c.JSON(http.StatusBadRequest, oauthError{"unsupported_grant_type", "only grant_type=client_credentials is supported, not " + strconv.Quote(g)})
	}
	id, secret := form.Get("client_id"), form.Get("client_secret")
	if u, p, ok := c.Request().BasicAuth(); ok && id == "" {
		id, secret = u, p
	}
	if secret == "" {
		return c.JSON(http.StatusUnauthorized, oauthError{"invalid_client", "give client_id (a Tidemark token's name) and client_secret (the token)"})
	}
	tok, err := f.cfg.Tokens.Verify(c.Request().Context(), secret)
	if err != nil || (id != "" && id != tok.Name) {
		// A guess has already cost the guesser's address: the shell charged this request, which
		// carries no verified bearer token, to it.
		return c.JSON(http.StatusUnauthorized, oauthError{"invalid_client", "the client ID and secret are not a Tidemark token's name and token"})
	}
	return c.JSON(http.StatusOK, tokenResponse{AccessToken: secret, TokenType: "bearer", ExpiresIn: 3600,
		IssuedTokenType: "urn:ietf:params:oauth:token-type:access_token"})
}
