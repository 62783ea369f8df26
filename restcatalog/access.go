package restcatalog

// Storage access handed out per table: the storage settings every load and create answers,
// vended credentials (X-Iceberg-Access-Delegation: vended-credentials, and
// GET .../tables/{table}/credentials) and remote signing (POST .../tables/{table}/sign). The
// checks and the credentials are package warehouse's; this file reads the request and words
// the answer.

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
)

const (
	headerDelegation = "X-Iceberg-Access-Delegation"
	vendedDelegation = "vended-credentials"
	signDelegation   = "remote-signing"

	endpointCredentials = "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"
	endpointSign        = "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign"
)

// storageCredential is the spec's StorageCredential.
type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// loadCredentialsResponse is the spec's LoadCredentialsResponse.
type loadCredentialsResponse struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

// endpointsFor are the endpoints /v1/config advertises for a warehouse: the credentials and
// sign endpoints only where the warehouse vends or signs.
func endpointsFor(w tables.Warehouse) []string {
	out := slices.Clone(endpoints)
	if w.Access.Vend != tables.VendNone {
		out = append(out, endpointCredentials)
	}
	if w.Access.RemoteSigning {
		out = append(out, endpointSign)
	}
	return out
}

// delegation reads which access the client asks for (a comma-separated list).
func delegation(c echo.Context) (vended, signing bool) {
	for _, h := range c.Request().Header.Values(headerDelegation) {
		for _, v := range strings.Split(h, ",") {
			switch strings.TrimSpace(v) {
			case vendedDelegation:
				vended = true
			case signDelegation:
				signing = true
			}
		}
	}
	return vended, signing
}

// storageAccess is the storage part of a LoadTableResult: the settings a client needs to reach
// the table's location (no secret), and, when the client asks for vended credentials and the
// warehouse vends, credentials for the table's prefix; when it asks for remote signing and
// the warehouse signs, where to sign.
func (f *Face) storageAccess(c echo.Context, wh string, t warehouse.ServedTable) (map[string]string, []storageCredential, error) {
	w, ok := f.cfg.Warehouse.Warehouse(wh)
	if !ok {
		return map[string]string{}, nil, nil
	}
	cfg := w.ClientConfig()
	vended, signing := delegation(c)
	if signing && w.Access.RemoteSigning {
		cfg["s3.remote-signing-enabled"] = "true"
		cfg["s3.signer.uri"] = baseURL(c)
		cfg["s3.signer.endpoint"] = signPath(wh, t.Ident)
	}
	if !vended || w.Access.Vend == tables.VendNone || t.Metadata == nil {
		return cfg, nil, nil
	}
	if _, ok := c.Get(tokenKey).(auth.Token); !ok && !f.cfg.NoAuth {
		return cfg, nil, nil // an anonymous read of the catalog (where allowed) gets no storage access
	}
	creds, err := f.vend(c, wh, t.Metadata.Location())
	if errors.Is(err, warehouse.ErrAccessDenied) {
		// iceberg-go asks for credentials on every load: a token that may not have them (a read
		// token where only writeable keys could be vended) still loads the table, without them;
		// GET .../credentials says why.
		return cfg, nil, nil
	}
	return cfg, creds, err
}

// vend asks the warehouse for credentials for one table location, as the request's principal.
func (f *Face) vend(c echo.Context, wh, loc string) ([]storageCredential, error) {
	if err := f.needToken(c, "vended credentials"); err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	got, err := f.cfg.Warehouse.Vend(ctx, wh, loc, f.allows(c, auth.ScopeWrite), catalog.ActorFrom(ctx))
	if err != nil {
		return nil, err
	}
	out := make([]storageCredential, len(got))
	for i, g := range got {
		out[i] = storageCredential{Prefix: g.Prefix, Config: g.Config}
	}
	return out, nil
}

// needToken refuses storage access to a request without a token (anonymous reads, where
// allowed, read the catalog, not the storage).
func (f *Face) needToken(c echo.Context, what string) error {
	if f.cfg.NoAuth {
		return nil
	}
	if _, ok := c.Get(tokenKey).(auth.Token); !ok {
		return apiError(http.StatusUnauthorized, "NotAuthorizedException", what+" need a token: send Authorization: Bearer <token> (read for reading, write for writing)")
	}
	return nil
}

// baseURL is the catalog's base URI as this request reached it (the signer's s3.signer.uri).
func baseURL(c echo.Context) string {
	return c.Scheme() + "://" + c.Request().Host + "/iceberg/"
}

func signPath(wh string, id warehouse.TableIdent) string {
	return "v1/" + url.PathEscape(wh) + "/namespaces/" + url.PathEscape(strings.Join(id.Namespace, "\x1f")) + "/tables/" + url.PathEscape(id.Name) + "/sign"
}

// loadCredentials answers fresh credentials for a table (GET .../tables/{table}/credentials).
func (f *Face) loadCredentials(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	if !f.cfg.Warehouse.Vends(wh) {
		if _, ok := f.cfg.Warehouse.Warehouse(wh); ok {
			return apiError(http.StatusNotFound, "NoSuchEndpointException", "warehouse "+wh+" vends no credentials (its access settings set no vend mode); GET /iceberg/v1/config lists its endpoints")
		}
	}
	t, err := f.cfg.Warehouse.LoadServed(c.Request().Context(), wh, id)
	if err != nil {
		return err
	}
	creds, err := f.vend(c, wh, t.Metadata.Location())
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, loadCredentialsResponse{StorageCredentials: creds})
}

// signBody is the spec's RemoteSignRequest.
type signBody struct {
	Region  string              `json:"region"`
	URI     string              `json:"uri"`
	Method  string              `json:"method"`
	Headers map[string][]string `json:"headers"`
	Body    *string             `json:"body,omitempty"`
}

// signResponse is the spec's RemoteSignResult.
type signResponse struct {
	URI     string              `json:"uri"`
	Headers map[string][]string `json:"headers"`
}

// maxSignHeaders bounds a sign request's headers.
const maxSignHeaders = 100

// sign signs one S3 request for a table (POST .../tables/{table}/sign).
func (f *Face) sign(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	if err := f.needToken(c, "signed requests"); err != nil {
		return err
	}
	var in signBody
	if err := decode(c, &in); err != nil {
		return err
	}
	switch {
	case in.URI == "" || in.Method == "":
		return badRequest("a sign request needs uri and method (and region, headers)")
	case len(in.URI) > 4096:
		return badRequest("uri is over 4096 bytes")
	case len(in.Headers) > maxSignHeaders:
		return badRequest("a sign request holds at most %d headers", maxSignHeaders)
	}
	ctx := c.Request().Context()
	out, err := f.cfg.Warehouse.Sign(ctx, wh, id, warehouse.SignRequest{Region: in.Region, URI: in.URI, Method: in.Method, Headers: in.Headers,
		Write: f.allows(c, auth.ScopeWrite), Principal: catalog.ActorFrom(ctx)})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, signResponse{URI: out.URI, Headers: out.Headers})
}

// warnKeyVending says at start, once per warehouse, that it hands out its own keys.
func (f *Face) warnKeyVending() {
	for _, w := range f.cfg.Warehouse.Warehouses() {
		if w.Access.Vend == tables.VendKeys {
			f.cfg.Logger.Warn("iceberg rest: warehouse vends its own storage keys to tokens with the write scope; they are not limited to a table or to reading (use an STS role to scope them)",
				"warehouse", w.Name, "location", w.Location)
		}
	}
}
