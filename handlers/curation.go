package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
)

// Curation: columns, tags and glossary terms (labels), suggestions, classifications, glossary.

type columnResponse struct {
	ID          uuid.UUID       `json:"id"`
	FieldID     *int            `json:"field_id,omitempty"`
	Path        string          `json:"path"`
	Type        string          `json:"type"`
	Ordinal     int             `json:"ordinal"`
	SourceDoc   string          `json:"source_doc,omitempty"`
	Description string          `json:"description,omitempty"`
	AddedAt     time.Time       `json:"added_at"`
	RemovedAt   *time.Time      `json:"removed_at,omitempty"`
	Labels      []labelResponse `json:"labels"`
}

type columnsResponse struct {
	AssetID uuid.UUID        `json:"asset_id"`
	Version int64            `json:"version"`
	Columns []columnResponse `json:"columns"`
	Labels  []labelResponse  `json:"labels"` // the asset's own
}

type labelResponse struct {
	ID           uuid.UUID  `json:"id"`
	ColumnID     *uuid.UUID `json:"column_id,omitempty"`
	Column       string     `json:"column,omitempty"`
	Kind         string     `json:"kind"`
	Value        string     `json:"value"`
	TermName     string     `json:"term_name,omitempty"`
	Source       string     `json:"source"`
	FromAssetID  *uuid.UUID `json:"from_asset_id,omitempty"`
	FromColumnID *uuid.UUID `json:"from_column_id,omitempty"`
	AddedAt      time.Time  `json:"added_at"`
	AddedBy      string     `json:"added_by"`
	RemovedAt    *time.Time `json:"removed_at,omitempty"`
	RemovedBy    string     `json:"removed_by,omitempty"`
}

type labelsResponse struct {
	AssetID uuid.UUID       `json:"asset_id"`
	Labels  []labelResponse `json:"labels"`
}

type labelRequest struct {
	ColumnID *uuid.UUID `json:"column_id,omitempty"`
	Kind     string     `json:"kind"`  // tag or term
	Value    string     `json:"value"` // the tag, or the term's ID
}

type columnPatchRequest struct {
	Description *string `json:"description"`
}

type schemaChangeResponse struct {
	ID       uuid.UUID              `json:"id"`
	At       time.Time              `json:"at"`
	Source   string                 `json:"source"`
	SchemaID *int                   `json:"schema_id,omitempty"`
	Changes  []columnChangeResponse `json:"changes"`
}

type columnChangeResponse struct {
	Op       string    `json:"op"`
	ColumnID uuid.UUID `json:"column_id"`
	FieldID  *int      `json:"field_id,omitempty"`
	Path     string    `json:"path"`
	OldPath  string    `json:"old_path,omitempty"`
	Type     string    `json:"type,omitempty"`
	OldType  string    `json:"old_type,omitempty"`
}

type schemaHistoryResponse struct {
	AssetID uuid.UUID              `json:"asset_id"`
	Changes []schemaChangeResponse `json:"changes"`
}

type suggestionResponse struct {
	Column         string     `json:"column"`
	ColumnID       *uuid.UUID `json:"column_id,omitempty"`
	Tag            string     `json:"tag"`
	FromAssetID    uuid.UUID  `json:"from_asset_id"`
	FromColumnID   uuid.UUID  `json:"from_column_id"`
	FromColumn     string     `json:"from_column"`
	Transformation string     `json:"transformation,omitempty"`
	Masking        bool       `json:"masking,omitempty"`
}

type suggestionsResponse struct {
	AssetID     uuid.UUID            `json:"asset_id"`
	Version     int64                `json:"version"`
	Suggestions []suggestionResponse `json:"suggestions"`
}

type suggestionRequest struct {
	Column       string    `json:"column"`
	Tag          string    `json:"tag"`
	FromColumnID uuid.UUID `json:"from_column_id"`
}

type classificationResponse struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Values      []string  `json:"values"`
	Propagate   bool      `json:"propagate"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

type classificationsResponse struct {
	Items []classificationResponse `json:"items"`
}

type classificationRequest struct {
	Description string   `json:"description"`
	Values      []string `json:"values"`
	Propagate   *bool    `json:"propagate"`
}

type termRefResponse struct {
	ID   uuid.UUID `json:"id"`
	Name string    `json:"name"`
}

type termResponse struct {
	ID         uuid.UUID         `json:"id"`
	Name       string            `json:"name"`
	Definition string            `json:"definition"`
	Owners     []string          `json:"owners"`
	Related    []termRefResponse `json:"related"`
	Version    int64             `json:"version"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

type termListResponse struct {
	Items     []termResponse `json:"items"`
	NextAfter string         `json:"next_after,omitempty"`
}

type termRequest struct {
	Name       string      `json:"name"`
	Definition string      `json:"definition"`
	Owners     []string    `json:"owners"`
	Related    []uuid.UUID `json:"related"`
}

type termLinksResponse struct {
	TermID uuid.UUID       `json:"term_id"`
	Links  []labelResponse `json:"links"`
}

func toLabelResponse(l catalog.Label) labelResponse {
	out := labelResponse{ID: l.ID, Column: l.Column, Kind: string(l.Kind), Value: l.Value, TermName: l.TermName,
		Source: string(l.Source), FromAssetID: l.FromAssetID, FromColumnID: l.FromColumnID, AddedAt: l.AddedAt,
		AddedBy: l.AddedBy, RemovedAt: l.RemovedAt, RemovedBy: l.RemovedBy}
	if l.ColumnID != uuid.Nil {
		id := l.ColumnID
		out.ColumnID = &id
	}
	return out
}

func toTermResponse(t catalog.Term) termResponse {
	out := termResponse{ID: t.ID, Name: t.Name, Definition: t.Definition, Owners: t.Owners, Related: []termRefResponse{},
		Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	for _, r := range t.Related {
		out.Related = append(out.Related, termRefResponse{ID: r.ID, Name: r.Name})
	}
	return out
}

func toClassificationResponse(c catalog.Classification) classificationResponse {
	return classificationResponse{Name: c.Name, Description: c.Description, Values: c.Values, Propagate: c.Propagate,
		Version: c.Version, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

var optionalIfMatch = param{Name: "If-Match", In: "header", Description: `optional ETag precondition: the asset's version, e.g. "3"`}

func (a *API) curationRoutes() {
	const base = "/api/v1"
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/columns",
		Summary:   "Columns with their tags and terms (history=true includes dropped ones)",
		Tag:       "curation",
		Params:    []param{{Name: "history", In: "query"}},
		Responses: map[int]any{200: columnsResponse{}},
	}, a.listColumns)
	a.handle(operation{
		Method:    http.MethodPatch,
		Path:      base + "/assets/:id/columns/:column",
		Summary:   "Describe a column (Markdown)",
		Tag:       "curation",
		Body:      columnPatchRequest{},
		Params:    []param{ifMatchHeader},
		Responses: map[int]any{200: assetResponse{}},
	}, a.patchColumn)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/schema/history",
		Summary:   "Schema changes, newest first",
		Tag:       "curation",
		Params:    []param{{Name: "limit", In: "query", Description: "1-500, default 50"}},
		Responses: map[int]any{200: schemaHistoryResponse{}},
	}, a.schemaHistory)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/labels",
		Summary:   "Tags and glossary terms on the asset and its columns (history=true includes removed ones)",
		Tag:       "curation",
		Params:    []param{{Name: "history", In: "query"}},
		Responses: map[int]any{200: labelsResponse{}},
	}, a.listLabels)
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        base + "/assets/:id/labels",
		Summary:     "Put a tag or glossary term on the asset or one of its columns",
		Description: "A tag whose first segment is a classification (pii, tier, ...) must use one of its values. Adding a label that is there changes nothing.",
		Tag:         "curation",
		Body:        labelRequest{},
		Params:      []param{optionalIfMatch},
		Responses:   map[int]any{200: assetResponse{}},
	}, a.addLabel)
	a.handle(operation{
		Method:  http.MethodDelete,
		Path:    base + "/assets/:id/labels",
		Summary: "Take a tag or term off (its interval stays in the history)",
		Tag:     "curation",
		Params: []param{{Name: "kind", In: "query", Required: true}, {Name: "value", In: "query", Required: true},
			{Name: "column_id", In: "query", Description: "the column; omit for the asset itself"}, optionalIfMatch},
		Responses: map[int]any{200: assetResponse{}},
	}, a.removeLabel)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/suggestions",
		Summary:   "Classification tags column lineage suggests for this asset's columns",
		Tag:       "curation",
		Responses: map[int]any{200: suggestionsResponse{}},
	}, a.listSuggestions)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/assets/:id/suggestions/accept",
		Summary:   "Accept a suggestion (a person's decision; never automatic)",
		Tag:       "curation",
		Body:      suggestionRequest{},
		Params:    []param{optionalIfMatch},
		Responses: map[int]any{200: assetResponse{}},
	}, a.decideSuggestion(true))
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/assets/:id/suggestions/reject",
		Summary:   "Reject a suggestion so it is not shown again",
		Tag:       "curation",
		Body:      suggestionRequest{},
		Params:    []param{optionalIfMatch},
		Responses: map[int]any{200: assetResponse{}},
	}, a.decideSuggestion(false))
	a.vocabularyRoutes()
}

// vocabularyRoutes are the catalog-wide vocabularies: classifications and the glossary.
func (a *API) vocabularyRoutes() {
	const base = "/api/v1"
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/classifications",
		Summary:   "Classifications (controlled tag families)",
		Tag:       "curation",
		Responses: map[int]any{200: classificationsResponse{}},
	}, a.listClassifications)
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      base + "/classifications/:name",
		Summary:   "Create or change a classification (admin)",
		Tag:       "curation",
		Scope:     auth.ScopeAdmin,
		Body:      classificationRequest{},
		Params:    []param{{Name: "If-Match", In: "header", Description: "the classification's version, when changing one"}},
		Responses: map[int]any{200: classificationResponse{}},
	}, a.putClassification)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/glossary",
		Summary:   "Glossary terms by name",
		Tag:       "glossary",
		Params:    []param{{Name: "limit", In: "query", Description: "1-500, default 100"}, {Name: "after", In: "query", Description: "next_after of the previous page"}},
		Responses: map[int]any{200: termListResponse{}},
	}, a.listTerms)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/glossary",
		Summary:   "Create a glossary term",
		Tag:       "glossary",
		Body:      termRequest{},
		Responses: map[int]any{201: termResponse{}},
	}, a.createTerm)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/glossary/:id",
		Summary:   "A glossary term (ETag: its version)",
		Tag:       "glossary",
		Responses: map[int]any{200: termResponse{}},
	}, a.getTerm)
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      base + "/glossary/:id",
		Summary:   "Replace a glossary term's name, definition, owners and related terms",
		Tag:       "glossary",
		Body:      termRequest{},
		Params:    []param{{Name: "If-Match", In: "header", Required: true, Description: `the term's ETag, e.g. "2"`}},
		Responses: map[int]any{200: termResponse{}},
	}, a.putTerm)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/glossary/:id/links",
		Summary:   "Assets and columns linked to a term",
		Tag:       "glossary",
		Params:    []param{{Name: "limit", In: "query", Description: "1-1000, default 200"}},
		Responses: map[int]any{200: termLinksResponse{}},
	}, a.termLinks)
}

func historyParam(c echo.Context) (bool, error) {
	switch c.QueryParam("history") {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, badRequest("history", "history must be true or false")
}

func (a *API) listColumns(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	history, err := historyParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	got, err := a.cfg.Catalog.Get(ctx, id)
	if err != nil {
		return err
	}
	cols, err := a.cfg.Catalog.Columns(ctx, id, history)
	if err != nil {
		return err
	}
	labels, err := a.cfg.Catalog.Labels(ctx, id, false)
	if err != nil {
		return err
	}
	out := columnsResponse{AssetID: id, Version: got.Version, Columns: make([]columnResponse, 0, len(cols)), Labels: []labelResponse{}}
	byCol := map[uuid.UUID][]labelResponse{}
	for _, l := range labels {
		if l.ColumnID == uuid.Nil {
			out.Labels = append(out.Labels, toLabelResponse(l))
		} else {
			byCol[l.ColumnID] = append(byCol[l.ColumnID], toLabelResponse(l))
		}
	}
	for _, col := range cols {
		r := columnResponse{ID: col.ID, FieldID: col.FieldID, Path: col.Path, Type: col.Type, Ordinal: col.Ordinal,
			SourceDoc: col.SourceDoc, Description: col.Description, AddedAt: col.AddedAt, RemovedAt: col.RemovedAt, Labels: byCol[col.ID]}
		if r.Labels == nil {
			r.Labels = []labelResponse{}
		}
		out.Columns = append(out.Columns, r)
	}
	c.Response().Header().Set("ETag", etag(got.Version))
	return c.JSON(http.StatusOK, out)
}

func (a *API) patchColumn(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	col, err := uuidParam(c, "column", "column ID")
	if err != nil {
		return err
	}
	version, err := ifMatch(c, true)
	if err != nil {
		return err
	}
	var req columnPatchRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.Description == nil {
		return badRequest("description", "give the column's description (an empty string clears it)")
	}
	got, err := a.cfg.Catalog.SetColumnDescription(c.Request().Context(), id, version, col, *req.Description)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) schemaHistory(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 50, 500)
	if err != nil {
		return err
	}
	hist, err := a.cfg.Catalog.SchemaHistory(c.Request().Context(), id, limit)
	if err != nil {
		return err
	}
	out := schemaHistoryResponse{AssetID: id, Changes: make([]schemaChangeResponse, 0, len(hist))}
	for _, h := range hist {
		r := schemaChangeResponse{ID: h.ID, At: h.At, Source: h.Source, SchemaID: h.SchemaID, Changes: make([]columnChangeResponse, 0, len(h.Changes))}
		for _, ch := range h.Changes {
			r.Changes = append(r.Changes, columnChangeResponse(ch))
		}
		out.Changes = append(out.Changes, r)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) listLabels(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	history, err := historyParam(c)
	if err != nil {
		return err
	}
	labels, err := a.cfg.Catalog.Labels(c.Request().Context(), id, history)
	if err != nil {
		return err
	}
	out := labelsResponse{AssetID: id, Labels: make([]labelResponse, 0, len(labels))}
	for _, l := range labels {
		out.Labels = append(out.Labels, toLabelResponse(l))
	}
	return c.JSON(http.StatusOK, out)
}

func parseLabelKind(s string) (catalog.LabelKind, error) {
	switch k := catalog.LabelKind(s); k {
	case catalog.LabelTag, catalog.LabelTerm:
		return k, nil
	}
	return "", badRequest("kind", "kind %q is not tag or term", truncate(s, 32))
}

func (a *API) addLabel(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	var req labelRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	kind, err := parseLabelKind(req.Kind)
	if err != nil {
		return err
	}
	in := catalog.LabelInput{Kind: kind, Value: req.Value}
	if req.ColumnID != nil {
		in.ColumnID = *req.ColumnID
	}
	got, err := a.cfg.Catalog.AddLabel(c.Request().Context(), id, version, in)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) removeLabel(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	kind, err := parseLabelKind(c.QueryParam("kind"))
	if err != nil {
		return err
	}
	value := c.QueryParam("value")
	if value == "" {
		return badRequest("value", "give the tag, or the term's ID, to remove")
	}
	col := uuid.Nil
	if s := c.QueryParam("column_id"); s != "" {
		if col, err = uuid.Parse(s); err != nil {
			return badRequest("column_id", "column_id %q is not a UUID", truncate(s, 64))
		}
	}
	got, err := a.cfg.Catalog.RemoveLabel(c.Request().Context(), id, version, col, kind, value)
	if err != nil {
		return err
	}
	return assetJSON(c, http.StatusOK, got)
}

func (a *API) listSuggestions(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	got, err := a.cfg.Catalog.Get(ctx, id)
	if err != nil {
		return err
	}
	sug, err := a.cfg.Catalog.Suggestions(ctx, id)
	if err != nil {
		return err
	}
	out := suggestionsResponse{AssetID: id, Version: got.Version, Suggestions: make([]suggestionResponse, 0, len(sug))}
	for _, s := range sug {
		r := suggestionResponse{Column: s.ColumnPath, Tag: s.Tag, FromAssetID: s.FromAssetID, FromColumnID: s.FromColumnID,
			FromColumn: s.FromColumnPath, Transformation: s.Transformation, Masking: s.Masking}
		if s.ColumnID != uuid.Nil {
			cid := s.ColumnID
			r.ColumnID = &cid
		}
		out.Suggestions = append(out.Suggestions, r)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) decideSuggestion(accept bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := assetID(c)
		if err != nil {
			return err
		}
		version, err := ifMatch(c, false)
		if err != nil {
			return err
		}
		var req suggestionRequest
		if err := bind(c, &req); err != nil {
			return err
		}
		if req.Column == "" || req.Tag == "" || req.FromColumnID == uuid.Nil {
			return badRequest("column", "give column, tag and from_column_id as GET .../suggestions lists them")
		}
		key := catalog.SuggestionKey{ColumnPath: req.Column, Tag: req.Tag, FromColumnID: req.FromColumnID}
		decide := a.cfg.Catalog.RejectSuggestion
		if accept {
			decide = a.cfg.Catalog.AcceptSuggestion
		}
		got, err := decide(c.Request().Context(), id, version, key)
		if err != nil {
			return err
		}
		return assetJSON(c, http.StatusOK, got)
	}
}

func (a *API) listClassifications(c echo.Context) error {
	cls, err := a.cfg.Catalog.Classifications(c.Request().Context())
	if err != nil {
		return err
	}
	out := classificationsResponse{Items: make([]classificationResponse, 0, len(cls))}
	for _, cl := range cls {
		out.Items = append(out.Items, toClassificationResponse(cl))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) putClassification(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	version, err := ifMatch(c, false)
	if err != nil {
		return err
	}
	var req classificationRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	in := catalog.Classification{Name: name, Description: req.Description, Values: req.Values, Propagate: true}
	if req.Propagate != nil {
		in.Propagate = *req.Propagate
	}
	got, err := a.cfg.Catalog.PutClassification(c.Request().Context(), in, version)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(got.Version))
	return c.JSON(http.StatusOK, toClassificationResponse(got))
}

func (a *API) listTerms(c echo.Context) error {
	limit, err := queryLimit(c, 100, 500)
	if err != nil {
		return err
	}
	after := c.QueryParam("after")
	if len(after) > catalog.MaxTermName {
		return badRequest("after", "after is longer than a term name can be")
	}
	terms, more, err := a.cfg.Catalog.Terms(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := termListResponse{Items: make([]termResponse, 0, len(terms))}
	for _, t := range terms {
		out.Items = append(out.Items, toTermResponse(t))
	}
	if more {
		out.NextAfter = terms[len(terms)-1].Name
	}
	return c.JSON(http.StatusOK, out)
}

func (r termRequest) input() catalog.TermInput {
	return catalog.TermInput{Name: r.Name, Definition: r.Definition, Owners: r.Owners, Related: r.Related}
}

func (a *API) createTerm(c echo.Context) error {
	var req termRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.CreateTerm(c.Request().Context(), req.input())
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(got.Version))
	return c.JSON(http.StatusCreated, toTermResponse(got))
}

func (a *API) getTerm(c echo.Context) error {
	id, err := idParam(c, "glossary term")
	if err != nil {
		return err
	}
	got, err := a.cfg.Catalog.Term(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(got.Version))
	return c.JSON(http.StatusOK, toTermResponse(got))
}

func (a *API) putTerm(c echo.Context) error {
	id, err := idParam(c, "glossary term")
	if err != nil {
		return err
	}
	version, err := ifMatch(c, true)
	if err != nil {
		return err
	}
	var req termRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	got, err := a.cfg.Catalog.UpdateTerm(c.Request().Context(), id, version, req.input())
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(got.Version))
	return c.JSON(http.StatusOK, toTermResponse(got))
}

func (a *API) termLinks(c echo.Context) error {
	id, err := idParam(c, "glossary term")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 200, 1000)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := a.cfg.Catalog.Term(ctx, id); err != nil {
		return err
	}
	links, err := a.cfg.Catalog.TermLinks(ctx, id, limit)
	if err != nil {
		return err
	}
	out := termLinksResponse{TermID: id, Links: make([]labelResponse, 0, len(links))}
	for _, l := range links {
		out.Links = append(out.Links, toLabelResponse(l))
	}
	return c.JSON(http.StatusOK, out)
}
