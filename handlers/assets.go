package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/catalog"
	etags "github.com/tidemark/tidemark/internal/etag"
)

// Request and response types of the asset API. They mirror catalog types on purpose: the wire
// format is a contract and changes only deliberately, whatever the domain types do.

type assetResponse struct {
	ID          uuid.UUID            `json:"id"`
	Kind        string               `json:"kind"`
	Status      string               `json:"status"`
	Version     int64                `json:"version"`
	Namespace   string               `json:"namespace"`
	Name        string               `json:"name"`
	Description string               `json:"description"`
	CreatedAt   time.Time            `json:"created_at"`
	UpdatedAt   time.Time            `json:"updated_at"`
	DeletedAt   *time.Time           `json:"deleted_at,omitempty"`
	ExternalIDs []externalIDResponse `json:"external_ids"`
	Owners      []ownerResponse      `json:"owners"`
}

type externalIDResponse struct {
	System  string    `json:"system"`
	Value   string    `json:"value"`
	BoundAt time.Time `json:"bound_at"`
}

type ownerResponse struct {
	Principal string     `json:"principal"`
	Kind      string     `json:"kind"`
	Role      string     `json:"role"`
	AddedAt   time.Time  `json:"added_at"`
	RemovedAt *time.Time `json:"removed_at,omitempty"`
}

type nameResponse struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	ValidFrom time.Time  `json:"valid_from"`
	ValidTo   *time.Time `json:"valid_to,omitempty"`
	Current   bool       `json:"current"`
}

type assetListResponse struct {
	Items      []assetResponse `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

type namesResponse struct {
	AssetID uuid.UUID      `json:"asset_id"`
	Names   []nameResponse `json:"names"`
}

type ownersResponse struct {
	AssetID uuid.UUID       `json:"asset_id"`
	Owners  []ownerResponse `json:"owners"`
}

type resolveResponse struct {
	Asset assetResponse `json:"asset"`
	// Matched is the name row the query matched; Former says it is not the asset's current
	// name (the asset was renamed or deleted since), whose name is then in Asset.
	Matched nameResponse `json:"matched"`
	Former  bool         `json:"former"`
	// CurrentName is what the asset is called now; absent once it is deleted.
	CurrentName *qualifiedName `json:"current_name,omitempty"`
}

type qualifiedName struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type auditEventResponse struct {
	ID        uuid.UUID       `json:"id"`
	At        time.Time       `json:"at"`
	Actor     string          `json:"actor"`
	Action    string          `json:"action"`
	AssetID   *uuid.UUID      `json:"asset_id,omitempty"`
	Before    json.RawMessage `json:"before,omitempty"`
	After     json.RawMessage `json:"after,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	// Changes is the event as a diff: each field whose value differs, before and after.
	Changes []auditChangeResponse `json:"changes"`
}

type auditChangeResponse struct {
	Field  string `json:"field"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

func toAuditEventResponse(ev catalog.AuditEvent) auditEventResponse {
	out := auditEventResponse{ID: ev.ID, At: ev.At, Actor: ev.Actor, Action: ev.Action, AssetID: ev.AssetID,
		Before: ev.Before, After: ev.After, RequestID: ev.RequestID, Changes: []auditChangeResponse{}}
	for _, ch := range ev.Changes() {
		out.Changes = append(out.Changes, auditChangeResponse(ch))
	}
	return out
}

type auditResponse struct {
	Items      []auditEventResponse `json:"items"`
	NextCursor string               `json:"next_cursor,omitempty"`
}

type externalIDRequest struct {
	System string `json:"system"`
	Value  string `json:"value"`
}

type ownerRequest struct {
	Principal string `json:"principal"`
	Kind      string `json:"kind,omitempty"`
	Role      string `json:"role,omitempty"`
}

type createAssetRequest struct {
	Kind        string              `json:"kind"`
	Namespace   string              `json:"namespace"`
	Name        string              `json:"name"`
	Description string              `json:"description,omitempty"`
	ExternalIDs []externalIDRequest `json:"external_ids,omitempty"`
	Owners      []ownerRequest      `json:"owners,omitempty"`
}

type renameRequest struct {
	Namespace string `json:"namespace,omitempty"` // empty keeps the current namespace
	Name      string `json:"name"`
}

type patchAssetRequest struct {
	Description *string `json:"description,omitempty"`
	Status      *string `json:"status,omitempty"`
}

type setOwnerRequest struct {
	Kind string `json:"kind,omitempty"`
	Role string `json:"role,omitempty"`
}

func toAssetResponse(a catalog.Asset) assetResponse {
	out := assetResponse{ID: a.ID, Kind: string(a.Kind), Status: string(a.Status), Version: a.Version,
		Namespace: a.Namespace, Name: a.Name, Description: a.Description, CreatedAt: a.CreatedAt,
		UpdatedAt: a.UpdatedAt, DeletedAt: a.DeletedAt, ExternalIDs: []externalIDResponse{}, Owners: toOwners(a.Owners)}
	for _, x := range a.ExternalIDs {
		out.ExternalIDs = append(out.ExternalIDs, externalIDResponse(x))
	}
	return out
}

func toOwners(os []catalog.Owner) []ownerResponse {
	out := make([]ownerResponse, 0, len(os))
	for _, o := range os {
		out = append(out, ownerResponse{Principal: o.Principal, Kind: string(o.Kind), Role: o.Role, AddedAt: o.AddedAt, RemovedAt: o.RemovedAt})
	}
	return out
}

func toNameResponse(n catalog.Name) nameResponse {
	return nameResponse{Namespace: n.Namespace, Name: n.Name, ValidFrom: n.ValidFrom, ValidTo: n.ValidTo, Current: n.Current()}
}

var (
	ifMatchHeader   = param{Name: "If-Match", In: "header", Required: true, Description: `the asset's ETag, e.g. "3"`}
	ifMatchOptional = param{Name: "If-Match", In: "header", Description: "optional ETag precondition"}
)

func (a *API) assetRoutes() {
	const base = "/api/v1"
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/assets",
		Summary:   "Create an asset (idempotent on Idempotency-Key or an external ID)",
		Tag:       "assets",
		Body:      createAssetRequest{},
		Responses: map[int]any{201: assetResponse{}, 200: assetResponse{}},
		Params:    []param{{Name: "Idempotency-Key", In: "header", Description: "retries with the same key return the first result"}},
	}, a.createAsset)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets",
		Summary:   "List assets in creation order (with q: search results, ranked)",
		Tag:       "assets",
		Responses: map[int]any{200: assetListResponse{}},
		Params: []param{
			{Name: "namespace", In: "query", Description: "current namespace"},
			{Name: "q", In: "query", Description: "words to search for, as GET /api/v1/search does; the page is then in rank order (at most 100 assets)"},
			{Name: "kind", In: "query"}, {Name: "status", In: "query", Description: "active, deprecated or deleted; default active and deprecated"},
			{Name: "limit", In: "query", Description: "1-500, default 50"}, {Name: "cursor", In: "query", Description: "next_cursor of the previous page"},
		},
	}, a.listAssets)
	a.handle(searchOperation, a.search)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id",
		Summary:   "Get an asset (ETag: its version)",
		Tag:       "assets",
		Responses: map[int]any{200: assetResponse{}, 304: nil},
	}, a.getAsset)
	a.handle(operation{
		Method:    http.MethodPatch,
		Path:      base + "/assets/:id",
		Summary:   "Change description or status (active/deprecated)",
		Tag:       "assets",
		Body:      patchAssetRequest{},
		Params:    []param{ifMatchHeader},
		Responses: map[int]any{200: assetResponse{}},
	}, a.patchAsset)
	a.handle(operation{
		Method:  http.MethodDelete,
		Path:    base + "/assets/:id",
		Summary: "Soft-delete an asset (releases its name; history stays)",
		Description: "A table served through the Iceberg REST catalog is dropped there (DELETE /iceberg/v1/{prefix}/namespaces/{namespace}/tables/{table}); " +
			"here its asset is a 409.",
		Tag:       "assets",
		Params:    []param{ifMatchOptional},
		Responses: map[int]any{200: assetResponse{}},
	}, a.deleteAsset)
	a.handle(operation{
		Method:  http.MethodPost,
		Path:    base + "/assets/:id/rename",
		Summary: "Rename an asset, keeping its ID",
		Description: "A table served through the Iceberg REST catalog is renamed there (POST /iceberg/v1/{prefix}/tables/rename); " +
			"here its asset is a 409.",
		Tag:       "assets",
		Body:      renameRequest{},
		Params:    []param{ifMatchHeader},
		Responses: map[int]any{200: assetResponse{}},
	}, a.renameAsset)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/names",
		Summary:   "Name history, oldest first",
		Tag:       "assets",
		Responses: map[int]any{200: namesResponse{}},
	}, a.assetNames)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/owners",
		Summary:   "Owners (history=true includes removed ones)",
		Tag:       "owners",
		Params:    []param{{Name: "history", In: "query"}},
		Responses: map[int]any{200: ownersResponse{}},
	}, a.listOwners)
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      base + "/assets/:id/owners/:principal",
		Summary:   "Add or change an owner",
		Tag:       "owners",
		Body:      setOwnerRequest{},
		Params:    []param{ifMatchOptional},
		Responses: map[int]any{200: assetResponse{}},
	}, a.setOwner)
	a.handle(operation{
		Method:    http.MethodDelete,
		Path:      base + "/assets/:id/owners/:principal",
		Summary:   "Remove an owner",
		Tag:       "owners",
		Params:    []param{ifMatchOptional},
		Responses: map[int]any{200: assetResponse{}},
	}, a.removeOwner)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/assets/:id/external-ids",
		Summary:   "Bind an external ID (e.g. an Iceberg table-uuid)",
		Tag:       "assets",
		Body:      externalIDRequest{},
		Responses: map[int]any{200: assetResponse{}},
	}, a.bindExternalID)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/resolve",
		Summary: "Resolve a current or former name to an asset",
		Tag:     "assets",
		Params: []param{
			{Name: "name", In: "query", Required: true}, {Name: "namespace", In: "query", Description: "omit to search every namespace"},
			{Name: "at", In: "query", Description: "RFC 3339 time: resolve the name as it was then"},
			{Name: "space", In: "query", Description: "job or dataset, when a job and a dataset share the name"},
		},
		Responses: map[int]any{200: resolveResponse{}},
	}, a.resolve)
}

// auditRoutes are the audit trail of one asset and the log across assets.
func (a *API) auditRoutes() {
	const base = "/api/v1"
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/audit",
		Summary:   "Audit trail, oldest first",
		Tag:       "assets",
		Params:    []param{{Name: "limit", In: "query"}, {Name: "cursor", In: "query"}},
		Responses: map[int]any{200: auditResponse{}},
	}, a.assetAudit)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/audit",
		Summary: "The audit log across assets, newest first, with each change as a diff",
		Tag:     "assets",
		Params: []param{{Name: "actor", In: "query", Description: "exact, e.g. web:alice or token:ci"},
			{Name: "action", In: "query", Description: "exact (asset.rename), or a family without a dot (proposal)"},
			{Name: "asset", In: "query", Description: "an asset ID"},
			{Name: "limit", In: "query", Description: "1-500, default 50"}, {Name: "cursor", In: "query"}},
		Responses: map[int]any{200: auditResponse{}},
	}, a.auditLog)
}

func assetID(c echo.Context) (uuid.UUID, error) { return idParam(c, "asset") }

// idParam parses the :id path parameter; what names it in the error.
func idParam(c echo.Context, what string) (uuid.UUID, error) { return uuidParam(c, "id", what+" ID") }

// uuidParam parses the path parameter name, which holds a UUID; what names it in the error.
func uuidParam(c echo.Context, name, what string) (uuid.UUID, error) {
	s := c.Param(name)
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, badRequest(name, "%s %q is not a UUID (expected the form 0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70)", what, truncate(s, 64))
	}
	return id, nil
}

func (a *API) createAsset(c echo.Context) error {
	var req createAssetRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	in := catalog.CreateInput{Kind: catalog.Kind(req.Kind), Namespace: req.Namespace, Name: req.Name,
		Description: req.Description, IdempotencyKey: c.Request().Header.Get("Idempotency-Key")}
	for _, x := range req.ExternalIDs {
		in.ExternalIDs = append(in.ExternalIDs, catalog.ExternalIDInput(x))
	}
	for _, o := range req.Owners {
		in.Owners = append(in.Owners, catalog.OwnerInput{Principal: o.Principal, Kind: catalog.OwnerKind(o.Kind), Role: o.Role})
	}
	res, err := a.cfg.Catalog.Create(c.Request().Context(), in)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		c.Response().Header().Set(echo.HeaderLocation, "/api/v1/assets/"+res.Asset.ID.String())
	} else {
		c.Response().Header().Set("Idempotent-Replayed", "true")
	}
	return assetJSON(c, status, res.Asset)
}

func assetJSON(c echo.Context, status int, a catalog.Asset) error {
	c.Response().Header().Set("ETag", etag(a.Version))
	return c.JSON(status, toAssetResponse(a))
}

func (a *API) getAsset(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	got, err := a.cfg.Catalog.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	// Every If-None-Match line counts: a list may come as one line or several.
	if etags.Matches(strings.Join(c.Request().Header.Values("If-None-Match"), ","), etag(got.Version)) {
		c.Response().Header().Set("ETag", etag(got.Version))
		return c.NoContent(http.StatusNotModified)
	}
	return assetJSON(c, http.StatusOK, got)
}

const (
	defaultPageSize = 50
	maxPageSize     = 500
)

func (a *API) listAssets(c echo.Context) error {
	limit, err := queryLimit(c, defaultPageSize, maxPageSize)
	if err != nil {
		return err
	}
	f := catalog.ListFilter{Namespace: c.QueryParam("namespace"), Query: c.QueryParam("q"),
		Kind: catalog.Kind(c.QueryParam("kind")), Status: catalog.Status(c.QueryParam("status")), Limit: limit}
	for field, s := range map[string]string{"namespace": f.Namespace, "q": f.Query} {
		if len(s) > catalog.MaxNameBytes {
			return badRequest(field, "%s is %d bytes long; the limit is %d", field, len(s), catalog.MaxNameBytes)
		}
	}
	scope := fmt.Sprintf("assets|%s|%s|%s|%s", f.Namespace, f.Query, f.Kind, f.Status)
	if f.Query != "" {
		return a.searchAssetList(c, f, scope)
	}
	if f.After, err = decodeCursor(c.QueryParam("cursor"), scope); err != nil {
		return err
	}
	items, more, err := a.cfg.Catalog.List(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := assetListResponse{Items: make([]assetResponse, 0, len(items))}
	for _, it := range items {
		out.Items = append(out.Items, toAssetResponse(it))
	}
	if more {
		out.NextCursor = encodeCursor(items[len(items)-1].ID, scope)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) patchAsset(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c, true)
	if err != nil {
		return err
	}
	var req patchAssetRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	in := catalog.UpdateInput{Description: req.Description}
	if req.Status != nil {
		st, err := catalog.ParseStatus(*req.Status)
		if err != nil {
			return err
		}
		in.Status = &st
	}
	got, err := a.cfg.Catalog.Update(c.Request().Context(), id, version, in)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) deleteAsset(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	if err := a.refuseServed(c, id); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.Delete(c.Request().Context(), id, version)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) renameAsset(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c, true)
	if err != nil {
		return err
	}
	var req renameRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if err := a.refuseServed(c, id); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.Rename(c.Request().Context(), id, version, req.Namespace, req.Name)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

// refuseServed is the 409 for an asset the Iceberg REST catalog serves: only the catalog renames
// or drops it (warehouse.Service.RefuseServed says why).
func (a *API) refuseServed(c echo.Context, id uuid.UUID) error {
	if a.cfg.Warehouse == nil {
		return nil
	}
	return a.cfg.Warehouse.RefuseServed(c.Request().Context(), id)
}

func (a *API) assetNames(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	names, err := a.cfg.Catalog.Names(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := namesResponse{AssetID: id, Names: make([]nameResponse, 0, len(names))}
	for _, n := range names {
		out.Names = append(out.Names, toNameResponse(n))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) listOwners(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	history, err := historyParam(c)
	if err != nil {
		return err
	}
	var owners []catalog.Owner
	if history {
		if owners, err = a.cfg.Catalog.Owners(c.Request().Context(), id); err != nil {
			return err
		}
	} else {
		got, err := a.cfg.Catalog.Get(c.Request().Context(), id)
		if err != nil {
			return err
		}
		owners = got.Owners
	}
	return c.JSON(http.StatusOK, ownersResponse{AssetID: id, Owners: toOwners(owners)})
}

func (a *API) setOwner(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	principal, err := pathParam(c, "principal")
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	var req setOwnerRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.SetOwner(c.Request().Context(), id, version,
		catalog.OwnerInput{Principal: principal, Kind: catalog.OwnerKind(req.Kind), Role: req.Role})
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) removeOwner(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	principal, err := pathParam(c, "principal")
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	got, err := a.cfg.Catalog.RemoveOwner(c.Request().Context(), id, version, principal)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) bindExternalID(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	var req externalIDRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.BindExternalID(c.Request().Context(), id, catalog.ExternalIDInput(req))
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) assetAudit(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, defaultPageSize, maxPageSize)
	if err != nil {
		return err
	}
	scope := "audit|" + id.String()
	after, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	evs, more, err := a.cfg.Catalog.Audit(c.Request().Context(), id, after, limit)
	if err != nil {
		return err
	}
	out := auditResponse{Items: make([]auditEventResponse, 0, len(evs))}
	for _, ev := range evs {
		out.Items = append(out.Items, toAuditEventResponse(ev))
	}
	if more {
		out.NextCursor = encodeCursor(evs[len(evs)-1].ID, scope)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) auditLog(c echo.Context) error {
	limit, err := queryLimit(c, defaultPageSize, maxPageSize)
	if err != nil {
		return err
	}
	f := catalog.AuditFilter{Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Limit: limit + 1}
	if s := c.QueryParam("asset"); s != "" {
		if f.AssetID, err = uuid.Parse(s); err != nil {
			return badRequest("asset", "asset %q is not an asset ID", truncate(s, 64))
		}
	}
	scope := fmt.Sprintf("auditlog|%s|%s|%s", f.Actor, f.Action, f.AssetID)
	if f.Before, err = decodeCursor(c.QueryParam("cursor"), scope); err != nil {
		return err
	}
	evs, err := a.cfg.Catalog.AuditEvents(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := auditResponse{Items: make([]auditEventResponse, 0, len(evs))}
	for i, ev := range evs {
		if i == limit {
			out.NextCursor = encodeCursor(evs[limit-1].ID, scope)
			break
		}
		out.Items = append(out.Items, toAuditEventResponse(ev))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) resolve(c echo.Context) error {
	name, namespace := c.QueryParam("name"), c.QueryParam("namespace")
	if name == "" {
		return badRequest("name", "name is required, e.g. /api/v1/resolve?namespace=warehouse&name=orders")
	}
	space, err := catalog.ParseSpace(c.QueryParam("space"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var res catalog.Resolution
	if at := c.QueryParam("at"); at != "" {
		t, perr := time.Parse(time.RFC3339Nano, at)
		if perr != nil {
			return badRequest("at", "at %q is not an RFC 3339 time such as 2026-01-31T12:00:00Z", truncate(at, 64))
		}
		res, err = a.cfg.Catalog.ResolveAt(ctx, space, namespace, name, t)
	} else {
		res, err = a.cfg.Catalog.ResolveIn(ctx, space, namespace, name)
	}
	if err != nil {
		return err
	}
	out := resolveResponse{Asset: toAssetResponse(res.Asset), Matched: toNameResponse(res.Matched), Former: res.Former}
	if res.Asset.Status != catalog.StatusDeleted {
		out.CurrentName = &qualifiedName{Namespace: res.Asset.Namespace, Name: res.Asset.Name}
	}
	return c.JSON(http.StatusOK, out)
}
