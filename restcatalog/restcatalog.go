// Package restcatalog is Tidemark's Iceberg REST catalog face (the Apache Iceberg
// rest-catalog-open-api): engines create, load and commit tables through it under
// /iceberg/v1/{prefix}/..., one prefix per served warehouse. It is one of the three faces mounted
// into the HTTP shell (package server), which verifies tokens and charges rate limits first. It
// owns the spec's request and response types, its error model (for every answer on /iceberg
// paths, the shell's included) and the OAuth2 token endpoint; the commits themselves
// (compare-and-swap of the metadata pointer, the write-path inventory) are the tables package's.
package restcatalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/warehouse"
)

// Config wires the face to the domain.
type Config struct {
	Warehouse *warehouse.Service
	// Tokens verifies the client secret the OAuth2 token endpoint exchanges (bearer tokens are
	// verified by the shell, package server).
	Tokens *auth.Store
	Logger *slog.Logger
	// AuthReads makes loads and lists need a token with the read scope; writes always need one.
	AuthReads bool
	// NoAuth turns authentication off entirely.
	NoAuth bool
	// BodyLimit caps request bodies (default 8 MiB: a commit carries schemas and snapshots).
	BodyLimit int64
	// RecordUse keeps a read (a load or scan report by a token, see loads.go) or a write (a
	// commit) of a served table as usage evidence; nil records nothing.
	RecordUse func(ctx context.Context, asset uuid.UUID, kind, actor, key string, at time.Time) error
	// RecordScan keeps a token's scan report as a read of the version it names (the snapshot ID
	// in decimal, "" when it names none); nil records it through RecordUse, without its version.
	RecordScan func(ctx context.Context, asset uuid.UUID, actor, key, version string, at time.Time) error
	// ScanReported tells the versions resolver that a read of a version was reported (a report
	// may arrive after the run's events it belongs to); nil tells nobody.
	ScanReported func(ctx context.Context, asset uuid.UUID, at time.Time) error
	// Purged is told of a drop with purgeRequested once it is recorded, so the cleanup bot
	// proposes the purge now rather than at its next round (which still does, should this
	// fail); nil waits for the round.
	Purged func(ctx context.Context)
	// Now is the clock (tests).
	Now func() time.Time
}

// IdempotencyLifetime is how long a commit's Idempotency-Key is honoured, as advertised in
// /v1/config (warehouse.KeyLifetime).
const IdempotencyLifetime = "PT30M"

// DefaultBodyLimit caps request bodies.
const DefaultBodyLimit = 8 << 20

// Face is the mounted REST catalog.
type Face struct {
	cfg   Config
	loads loads
}

// Mount registers the routes under /iceberg in the shell and makes the Iceberg error model the
// answer to every error on those paths, the shell's own (401, 404, 405, 413, 429, 5xx) included.
func Mount(srv *server.Server, cfg Config) *Face {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	f := &Face{cfg: cfg, loads: loads{held: map[string]*heldLoad{}}}
	srv.ErrorModel("/iceberg/*", f.render)
	srv.ErrorModel("/iceberg", f.render)
	e := srv.Echo()
	g := e.Group("/iceberg/v1", f.limitBody, checkIdempotencyKey)
	read, write, admin := f.scope(auth.ScopeRead), f.scope(auth.ScopeWrite), f.scope(auth.ScopeAdmin)
	g.GET("/config", f.config, read)
	g.POST("/oauth/tokens", f.token)
	p := g.Group("/:prefix")
	p.GET("/namespaces", f.listNamespaces, read)
	p.POST("/namespaces", f.createNamespace, write)
	p.GET("/namespaces/:ns", f.loadNamespace, read)
	p.HEAD("/namespaces/:ns", f.namespaceExists, read)
	p.DELETE("/namespaces/:ns", f.dropNamespace, write)
	p.POST("/namespaces/:ns/properties", f.updateNamespace, write)
	p.GET("/namespaces/:ns/tables", f.listTables, read)
	p.POST("/namespaces/:ns/tables", f.createTable, write)
	p.POST("/namespaces/:ns/register", f.registerTable, admin)
	p.GET("/namespaces/:ns/tables/:table", f.loadTable, read)
	p.HEAD("/namespaces/:ns/tables/:table", f.tableExists, read)
	p.POST("/namespaces/:ns/tables/:table", f.commitTable, write)
	p.DELETE("/namespaces/:ns/tables/:table", f.dropTable, write)
	p.POST("/namespaces/:ns/tables/:table/metrics", f.reportMetrics, read)
	p.POST("/namespaces/:ns/tables/:table/unregister", f.unregisterTable, admin)
	p.GET("/namespaces/:ns/tables/:table/credentials", f.loadCredentials, read) // the scope a credential gets is checked inside
	p.POST("/namespaces/:ns/tables/:table/sign", f.sign, read)                  // so is the scope a signed method needs
	p.POST("/tables/rename", f.renameTable, write)
	p.POST("/transactions/commit", f.commitTransaction, write)
	p.GET("/namespaces/:ns/views", f.listViews, read)
	p.POST("/namespaces/:ns/views", f.createView, write)
	p.GET("/namespaces/:ns/views/:view", f.loadView, read)
	p.HEAD("/namespaces/:ns/views/:view", f.viewExists, read)
	p.POST("/namespaces/:ns/views/:view", f.replaceView, write)
	p.DELETE("/namespaces/:ns/views/:view", f.dropView, write)
	p.POST("/namespaces/:ns/register-view", f.registerView, admin)
	p.POST("/views/rename", f.renameView, write)
	// Anything else under the face answers in its error model, not the JSON API's.
	g.Any("/*", func(c echo.Context) error { return echo.ErrNotFound })
	srv.Fallback("/iceberg/*", nil)
	f.warnKeyVending()
	return f
}

// endpoints are the routes /v1/config advertises; a warehouse that vends or signs adds its
// credentials or sign endpoint (endpointsFor).
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"POST /v1/{prefix}/namespaces/{namespace}/properties",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/register",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
	"POST /v1/{prefix}/tables/rename",
	"POST /v1/{prefix}/transactions/commit",
	"GET /v1/{prefix}/namespaces/{namespace}/views",
	"POST /v1/{prefix}/namespaces/{namespace}/views",
	"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"POST /v1/{prefix}/namespaces/{namespace}/register-view",
	"POST /v1/{prefix}/views/rename",
}

// Error is an error in the Iceberg REST error model.
type Error struct {
	Status  int
	Type    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

func apiError(status int, typ, msg string) *Error {
	return &Error{Status: status, Type: typ, Message: msg}
}

func badRequest(format string, args ...any) *Error {
	return apiError(http.StatusBadRequest, "BadRequestException", fmt.Sprintf(format, args...))
}

type errorResponse struct {
	Error errorModel `json:"error"`
}

type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// toError maps domain errors to the spec's statuses and exception types, in one place.
func toError(err error) *Error {
	var e *Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	var ce *catalog.Error
	var se *warehouse.ServeError
	var shell *server.Error
	msg := err.Error()
	if errors.As(err, &se) {
		msg = se.Message
	} else if errors.As(err, &ce) {
		msg = ce.Message
	}
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &shell):
		return apiError(shell.Status, shellTypes(shell.Status), shell.Message)
	case errors.As(err, &mbe):
		return apiError(http.StatusRequestEntityTooLarge, "BadRequestException", fmt.Sprintf("the request body is over %d bytes", mbe.Limit))
	case errors.As(err, &he) && (he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed):
		return apiError(he.Code, "NoSuchEndpointException", "not an endpoint of this catalog; GET /iceberg/v1/config lists them")
	case errors.As(err, &he):
		return apiError(he.Code, "BadRequestException", fmt.Sprint(he.Message))
	case errors.Is(err, warehouse.ErrNoSuchWarehouse):
		return apiError(http.StatusNotFound, "NoSuchWarehouseException", msg)
	case errors.Is(err, warehouse.ErrNoSuchNamespace):
		return apiError(http.StatusNotFound, "NoSuchNamespaceException", msg)
	case errors.Is(err, warehouse.ErrNoSuchTable):
		return apiError(http.StatusNotFound, "NoSuchTableException", msg)
	case errors.Is(err, warehouse.ErrNamespaceNotEmpty):
		return apiError(http.StatusConflict, "NamespaceNotEmptyException", msg)
	case errors.Is(err, warehouse.ErrCommitFailed):
		return apiError(http.StatusConflict, "CommitFailedException", msg)
	case errors.Is(err, warehouse.ErrAlreadyExists):
		return apiError(http.StatusConflict, "AlreadyExistsException", msg)
	case errors.Is(err, warehouse.ErrCommitUnknown):
		return apiError(http.StatusInternalServerError, "CommitStateUnknownException", msg)
	case errors.Is(err, warehouse.ErrNotCommitted):
		return apiError(http.StatusServiceUnavailable, "ServiceUnavailableException", msg)
	case errors.Is(err, warehouse.ErrAccessDenied):
		return apiError(http.StatusForbidden, "ForbiddenException", msg)
	case errors.Is(err, warehouse.ErrKeyReused):
		return apiError(http.StatusUnprocessableEntity, "UnprocessableEntityException", msg)
	case errors.Is(err, catalog.ErrInvalid):
		return apiError(http.StatusBadRequest, "BadRequestException", msg)
	case errors.Is(err, catalog.ErrNotFound):
		return apiError(http.StatusNotFound, "NotFoundException", msg)
	case errors.Is(err, catalog.ErrConflict):
		return apiError(http.StatusConflict, "AlreadyExistsException", msg)
	}
	return nil
}

// shellTypes names the exception of an answer the shell gives before a route runs.
func shellTypes(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "NotAuthorizedException"
	case http.StatusForbidden:
		return "ForbiddenException"
	case http.StatusTooManyRequests:
		return "TooManyRequestsException"
	}
	return "BadRequestException"
}

// render answers every error on the face's paths in the spec's error model. An error it cannot
// map is a 500 whose cause goes to the log, not to the client; on a commit a 500 means the
// outcome is unknown, which is true of an error nobody anticipated.
func (f *Face) render(c echo.Context, err error) {
	e := toError(err)
	if e == nil {
		f.cfg.Logger.Error("iceberg rest: request failed", append(server.LogAttrs(c), "err", err)...)
		e = apiError(http.StatusInternalServerError, "ServiceFailureException", "internal error; the server log has the cause (request "+c.Response().Header().Get(echo.HeaderXRequestID)+")")
	} else if e.Status >= 500 {
		f.cfg.Logger.Warn("iceberg rest: request not completed", "route", c.Path(), "status", e.Status, "err", err)
	}
	if e.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tidemark"`)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(e.Status)
		return
	}
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(e.Status)
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false) // messages quote <token> and the like; keep them readable
	_ = enc.Encode(errorResponse{Error: errorModel{Message: e.Message, Type: e.Type, Code: e.Status}})
}

func (f *Face) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > f.cfg.BodyLimit {
			return &http.MaxBytesError{Limit: f.cfg.BodyLimit}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, f.cfg.BodyLimit)
		return next(c)
	}
}

const tokenKey = "tidemark.iceberg.token"

// scope checks the token the shell verified (package server) grants need. A read without a
// token is anonymous unless AuthReads; a read that presents one must present a good one.
func (f *Face) scope(need auth.Scope) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if f.cfg.NoAuth || (need == auth.ScopeRead && !f.cfg.AuthReads && !auth.CredentialFrom(r.Context()).Presented) {
				c.SetRequest(r.WithContext(catalog.WithActor(r.Context(), "anonymous")))
				return next(c)
			}
			tok, err := auth.Require(r.Context(), need)
			if err != nil {
				return authError(err, need)
			}
			c.Set(tokenKey, tok)
			c.SetRequest(r.WithContext(catalog.WithActor(r.Context(), "token:"+tok.Name)))
			return next(c)
		}
	}
}

// authError words a refused credential in the Iceberg error model; a failed look-up stays an
// error (a 500).
func authError(err error, need auth.Scope) error {
	var se *auth.ScopeError
	switch {
	case errors.Is(err, auth.ErrNoCredential), errors.Is(err, auth.ErrMalformed):
		return apiError(http.StatusUnauthorized, "NotAuthorizedException", fmt.Sprintf("this request needs a token with the %s scope: send Authorization: Bearer <token>, or configure the client's credential as <token name>:<token>", need))
	case errors.Is(err, auth.ErrUnknownToken):
		return apiError(http.StatusUnauthorized, "NotAuthorizedException", "the bearer token is not recognised or has been revoked")
	case errors.As(err, &se):
		return apiError(http.StatusForbidden, "ForbiddenException", fmt.Sprintf("token %q has scopes %v; this request needs %s", se.Token.Name, se.Token.Scopes, need))
	}
	return err
}

// allows reports whether the request's token grants a scope.
func (f *Face) allows(c echo.Context, need auth.Scope) bool {
	if f.cfg.NoAuth {
		return true
	}
	tok, ok := c.Get(tokenKey).(auth.Token)
	return ok && tok.Allows(need)
}

// pathParam returns a path parameter unescaped: echo matches on the raw path when the path
// holds escapes the default encoding would not produce (%2F in a name).
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", badRequest("path parameter %s is not valid percent-encoding", name)
	}
	return u, nil
}

// namespaceParam splits the namespace path parameter on the unit separator (%1F).
func namespaceParam(c echo.Context) ([]string, error) {
	v, err := pathParam(c, "ns")
	if err != nil {
		return nil, err
	}
	return strings.Split(v, "\x1f"), nil
}

// namespaceArgs are a namespace route's warehouse and namespace levels.
func namespaceArgs(c echo.Context) (string, []string, error) {
	wh, err := pathParam(c, "prefix")
	if err != nil {
		return "", nil, err
	}
	ns, err := namespaceParam(c)
	return wh, ns, err
}

// tableArgs are a table route's warehouse and table.
func tableArgs(c echo.Context) (string, warehouse.TableIdent, error) {
	wh, err := pathParam(c, "prefix")
	if err != nil {
		return "", warehouse.TableIdent{}, err
	}
	id, err := tableParam(c)
	return wh, id, err
}

func tableParam(c echo.Context) (warehouse.TableIdent, error) {
	ns, err := namespaceParam(c)
	if err != nil {
		return warehouse.TableIdent{}, err
	}
	name, err := pathParam(c, "table")
	if err != nil {
		return warehouse.TableIdent{}, err
	}
	return warehouse.TableIdent{Namespace: ns, Name: name}, nil
}

// decode reads a JSON body strictly: unknown fields are tolerated (the spec grows), trailing
// data is not.
func decode(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body) // bounded by limitBody
	if err != nil {
		return err
	}
	if d := jsonDepth(body); d > MaxJSONDepth {
		return badRequest("the request body nests JSON %d levels deep; the limit is %d (a schema may nest %d levels)", d, MaxJSONDepth, warehouse.MaxSchemaDepth)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("the request body is not the JSON this endpoint takes: %v", err)
	}
	if dec.More() {
		return badRequest("the request body holds more than one JSON value")
	}
	return nil
}

// MaxJSONDepth bounds how deeply a request body nests: each level of a schema's types takes
// about three levels of JSON.
const MaxJSONDepth = 4*warehouse.MaxSchemaDepth + 16

// jsonDepth is how deeply a JSON text nests arrays and objects (strings skipped), read without
// parsing it: a body nested thousands of levels deep is refused before a decoder recurses.
func jsonDepth(b []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			if depth++; depth > deepest {
				deepest = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func (f *Face) options(c echo.Context) warehouse.CommitOptions {
	opt := warehouse.CommitOptions{IdempotencyKey: strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))}
	if fp, ok := c.Get(fingerprintKey).([]byte); ok {
		// The principal too: a key another token used is another request.
		h := sha256.Sum256(append(fp, catalog.ActorFrom(c.Request().Context())...))
		opt.RequestHash = hex.EncodeToString(h[:])
	}
	return opt
}

const fingerprintKey = "tidemark.iceberg.fingerprint"

// checkIdempotencyKey refuses an oversized or unprintable Idempotency-Key on every route, before
// anything is read, and fingerprints a request that carries one (method, path, query, body), so
// a key reused for a different request is refused instead of answering the first one's outcome.
func checkIdempotencyKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		k := strings.TrimSpace(c.Request().Header.Get("Idempotency-Key"))
		if k == "" {
			return next(c)
		}
		if err := warehouse.CheckKey(k); err != nil {
			return badRequest("%s", err.(*catalog.Error).Message)
		}
		r := c.Request()
		body, err := io.ReadAll(r.Body) // bounded by limitBody
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h := sha256.New()
		fmt.Fprintf(h, "%s\n%s\n%s\n", r.Method, r.URL.EscapedPath(), r.URL.RawQuery)
		h.Write(body)
		fp := h.Sum(nil)
		c.Set(fingerprintKey, append(fp, '\n'))
		return next(c)
	}
}
