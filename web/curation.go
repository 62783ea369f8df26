package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
)

// Curation on the asset page: descriptions (Markdown), owners, tags and glossary terms on the
// asset and its columns, column descriptions, and the propagation suggestions a person accepts
// or rejects. Every form is a classic POST carrying the session's CSRF token and the asset
// version the page showed; a stale version is refused (409) with the page showing the current
// value next to what the person typed.

func init() {
	funcs["markdown"] = markdown
	funcs["columnChange"] = columnChange
	funcs["labelsOf"] = labelsOf
}

func (u *UI) curationRoutes() {
	for path, h := range map[string]http.HandlerFunc{
		"description":        u.editAsset("description", editDescription),
		"owners":             u.editAsset("owners", editOwnerAdd),
		"owners/remove":      u.editAsset("owners", editOwnerRemove),
		"tags":               u.editAsset("tags", editTagAdd),
		"tags/remove":        u.editAsset("tags", editTagRemove),
		"terms":              u.editAsset("terms", editTermAdd),
		"terms/remove":       u.editAsset("terms", editTermRemove),
		"column-description": u.editAsset("column", editColumnDescription),
		"suggestions/accept": u.editAsset("suggestion", editSuggestion(true)),
		"suggestions/reject": u.editAsset("suggestion", editSuggestion(false)),
	} {
		u.handleFunc("POST /assets/{id}/"+path, h)
	}
	u.handleFunc("GET /glossary", u.glossary)
	u.handleFunc("POST /glossary", u.createTerm)
	u.handleFunc("GET /glossary/{id}", u.term)
	u.handleFunc("POST /glossary/{id}", u.updateTerm)
}

// --- what the asset page shows --------------------------------------------------------------

// curationData is the asset page's curation part.
type curationData struct {
	Columns     []columnView
	AssetTags   []labelView
	AssetTerms  []labelView
	History     []catalog.SchemaChange
	Suggestions []suggestionView
	// For the forms (read only for a session that may edit): the terms to choose from and the
	// classification values a tag input offers.
	Terms     []catalog.Term
	TagValues []string
}

type columnView struct {
	catalog.Column
	Tags, Terms []labelView
}

type labelView struct {
	catalog.Label
	How string // who or what put it on: "by web:alice", "from Iceberg", "propagated from x.y"
}

type suggestionView struct {
	catalog.Suggestion
	FromName string
}

// labelsBox is what the "labels" template shows: the tags and terms of the asset or one of its
// columns, with the forms to change them.
type labelsBox struct {
	Tags, Terms []labelView
	Column      string // the column's ID; empty for the asset itself
	Of          string // "the asset", "column email": for labels read aloud
	AssetID     uuid.UUID
	Version     int64
	CSRF        string
	Edit        bool
	Problem     editState
	Cur         curationData
}

func labelsOf(tags, terms []labelView, column, of string, id uuid.UUID, version int64, csrf string, edit bool, e editState, cur curationData) labelsBox {
	return labelsBox{Tags: tags, Terms: terms, Column: column, Of: of, AssetID: id, Version: version, CSRF: csrf, Edit: edit, Problem: e, Cur: cur}
}

// maxPickTerms bounds the terms offered on the asset page's term pickers.
const maxPickTerms = 500

// curationParts reads the asset page's curation part into d.Cur, at once with the other parts.
func (u *UI) curationParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	ctx, id, cat := r.Context(), d.Asset.ID, u.cfg.Catalog
	g.Go(func() error {
		cols, err := cat.Columns(ctx, id, false)
		if miss("the columns", err) {
			return nil
		}
		labels, err := cat.Labels(ctx, id, false)
		if miss("the tags and glossary terms", err) {
			return nil
		}
		views, err := u.labelViews(r, labels)
		if miss("the tags and glossary terms", err) {
			return nil
		}
		byCol := map[uuid.UUID]*columnView{}
		d.Cur.Columns = make([]columnView, len(cols))
		for i, c := range cols {
			d.Cur.Columns[i] = columnView{Column: c}
			byCol[c.ID] = &d.Cur.Columns[i]
		}
		for _, l := range views {
			target := &d.Cur.AssetTags
			if l.Kind == catalog.LabelTerm {
				target = &d.Cur.AssetTerms
			}
			if l.ColumnID != uuid.Nil {
				c := byCol[l.ColumnID]
				if c == nil {
					continue // a label of a dropped column
				}
				target = &c.Tags
				if l.Kind == catalog.LabelTerm {
					target = &c.Terms
				}
			}
			*target = append(*target, l)
		}
		return nil
	})
	g.Go(func() error {
		var err error
		d.Cur.History, err = cat.SchemaHistory(ctx, id, 10)
		miss("the schema history", err)
		return nil
	})
	g.Go(func() error {
		ss, err := cat.Suggestions(ctx, id)
		if miss("the suggested tags", err) {
			return nil
		}
		ids := make([]uuid.UUID, len(ss))
		for i, s := range ss {
			ids[i] = s.FromAssetID
		}
		names, err := u.names(r, ids, false)
		if miss("the suggested tags", err) {
			return nil
		}
		for _, s := range ss {
			d.Cur.Suggestions = append(d.Cur.Suggestions, suggestionView{Suggestion: s, FromName: names[s.FromAssetID]})
		}
		return nil
	})
	if s := u.sessions.get(r); s != nil && s.Write {
		g.Go(func() error {
			var err error
			d.Cur.Terms, _, err = cat.Terms(ctx, "", maxPickTerms)
			miss("the glossary terms to choose from", err)
			cls, err := cat.Classifications(ctx)
			if !miss("the classifications", err) {
				for _, c := range cls {
					for _, v := range c.Values {
						d.Cur.TagValues = append(d.Cur.TagValues, c.Name+"."+v)
					}
				}
			}
			return nil
		})
	}
}

// labelViews says where each label came from; a propagated one names its upstream column.
func (u *UI) labelViews(r *http.Request, labels []catalog.Label) ([]labelView, error) {
	var from []uuid.UUID
	for _, l := range labels {
		if l.FromAssetID != nil && !slices.Contains(from, *l.FromAssetID) {
			from = append(from, *l.FromAssetID)
		}
	}
	from = from[:min(len(from), 20)] // more sources than that are named by asset only
	names, err := u.names(r, from, false)
	if err != nil {
		return nil, err
	}
	paths := map[uuid.UUID]string{}
	for _, a := range from {
		cols, err := u.cfg.Catalog.Columns(r.Context(), a, true)
		if err != nil && !errors.Is(err, catalog.ErrNotFound) {
			return nil, err
		}
		for _, c := range cols {
			paths[c.ID] = c.Path
		}
	}
	out := make([]labelView, len(labels))
	for i, l := range labels {
		out[i] = labelView{Label: l}
		switch l.Source {
		case catalog.SourcePerson:
			out[i].How = "by " + l.AddedBy
		case catalog.SourceOpenLineage:
			out[i].How = "from OpenLineage"
		case catalog.SourceIceberg:
			out[i].How = "from Iceberg"
		case catalog.SourcePropagation:
			where := "upstream"
			if l.FromAssetID != nil {
				where = names[*l.FromAssetID]
				if where == "" {
					where = "asset " + short(*l.FromAssetID)
				}
				if l.FromColumnID != nil && paths[*l.FromColumnID] != "" {
					where += "." + paths[*l.FromColumnID]
				}
			}
			out[i].How = "propagated from " + where + ", accepted by " + l.AddedBy
		default:
			out[i].How = string(l.Source)
		}
	}
	return out, nil
}

// columnChange says one schema change in words.
func columnChange(c catalog.ColumnChange) string {
	switch c.Op {
	case "renamed":
		return "renamed " + c.OldPath + " → " + c.Path
	case "retyped":
		return "retyped " + c.Path + " " + c.OldType + " → " + c.Type
	case "added":
		if c.Type != "" {
			return "added " + c.Path + " (" + c.Type + ")"
		}
	}
	return c.Op + " " + c.Path
}

// --- refused edits --------------------------------------------------------------------------

// editState is an edit the asset page refused: which form, why, what the edited thing holds
// now, and what the person typed, put back into the form so it is not lost.
type editState struct {
	Form    string // description, owners, tags, terms, column, suggestion
	Column  string // the column's ID; empty for the asset itself
	Seen    int64  // the asset version the form carried
	Message string
	Stale   bool
	Typed   url.Values
	// What names the edited thing; Current is its value now, one entry per line (a description
	// is one entry: its Markdown source); Text says Current is a text, not a list.
	What    string
	Current []string
	Text    bool
}

// On reports whether the refused edit came from this form.
func (e editState) On(form, column string) bool {
	return e.Form != "" && e.Form == form && e.Column == column
}

// Value is what the person typed into a field of the refused form.
func (e editState) Value(field string) string { return e.Typed.Get(field) }

// current fills in the current value of what the refused edit was about, from the page.
func (e *editState) current(d *assetData) {
	if e.Form == "" {
		return
	}
	if e.Stale {
		// Only a change of what the edit depends on refuses it (catalog: per-field conflicts),
		// so the message names that, not the asset as a whole.
		defer func() {
			e.Message = fmt.Sprintf("This asset's %s changed since you loaded the page (you saw version %d; it is at version %d now), "+
				"so nothing was saved. Its current value is below, and what you entered is kept in the form: check it and submit again.",
				e.What, e.Seen, d.Asset.Version)
		}()
	}
	var col *columnView
	colName := "the asset"
	if e.Column != "" {
		colName = "column (no longer there)"
		for i := range d.Cur.Columns {
			if d.Cur.Columns[i].ID.String() == e.Column {
				col = &d.Cur.Columns[i]
				colName = "column " + col.Path
			}
		}
	}
	labels := func(ls []labelView) []string {
		out := []string{}
		for _, l := range ls {
			v := l.Value
			if l.Kind == catalog.LabelTerm {
				v = l.TermName
			}
			out = append(out, v+" ("+l.How+")")
		}
		return out
	}
	switch e.Form {
	case "description":
		e.What, e.Current, e.Text = "description", []string{d.Asset.Description}, true
	case "column":
		e.What, e.Text = "description of "+colName, true
		if col != nil {
			e.Current = []string{col.Description}
		}
	case "owners":
		e.What = "owners"
		for _, o := range d.Asset.Owners {
			e.Current = append(e.Current, fmt.Sprintf("%s (%s, %s)", o.Principal, o.Kind, o.Role))
		}
	case "tags":
		e.What = "tags of " + colName
		if col != nil {
			e.Current = labels(col.Tags)
		} else if e.Column == "" {
			e.Current = labels(d.Cur.AssetTags)
		}
	case "terms":
		e.What = "glossary terms of " + colName
		if col != nil {
			e.Current = labels(col.Terms)
		} else if e.Column == "" {
			e.Current = labels(d.Cur.AssetTerms)
		}
	case "rename", "delete", "restore":
		e.What, e.Current = "name", []string{d.Asset.Namespace + "." + d.Asset.Name}
	case "status":
		e.What, e.Current = "status", []string{string(d.Asset.Status)}
	case "suggestion":
		e.What = "suggested tags"
		for _, s := range d.Cur.Suggestions {
			e.Current = append(e.Current, fmt.Sprintf("%s on column %s, from %s.%s", s.Tag, s.ColumnPath, s.FromName, s.FromColumnPath))
		}
	}
}

// --- applying edits -------------------------------------------------------------------------

// assetEditFunc applies one form's edit at the asset version the person saw and returns the
// flash key and the page section to go back to.
type assetEditFunc func(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (flash, anchor string, err error)

// formSession reads a POSTed form of at most limit bytes and returns the signed-in session whose
// CSRF token it carries; otherwise it answers 400 or 403 and returns nil.
func (u *UI) formSession(w http.ResponseWriter, r *http.Request, limit int64) *session {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form is too large or malformed", http.StatusBadRequest)
		return nil
	}
	s := u.sessions.get(r)
	if s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden: sign in, and use the page's own form", http.StatusForbidden)
		return nil
	}
	return s
}

// editor returns the session of a person who may edit through this request's form: signed in
// with a write token, the form carrying the session's CSRF token. Otherwise it answers 403 and
// returns nil.
func (u *UI) editor(w http.ResponseWriter, r *http.Request) *session {
	s := u.formSession(w, r, 256<<10) // a description is at most 16 KiB, encoded up to 3x
	if s == nil {
		return nil
	}
	if !s.Write {
		http.Error(w, "forbidden: editing needs a token with the write scope", http.StatusForbidden)
		return nil
	}
	return s
}

// editAsset serves one of the asset page's forms.
func (u *UI) editAsset(form string, apply assetEditFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := u.editor(w, r)
		if s == nil {
			return
		}
		id, err := uuid.Parse(r.PathValue("id"))
		if err != nil {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID"})
			return
		}
		version, err := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
		if err != nil || version < 1 {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "the form does not say which version of the asset it was loaded with; reload the page and try again"})
			return
		}
		ctx := catalog.WithActor(r.Context(), s.actor())
		flash, anchor, err := apply(ctx, u.cfg.Catalog, id, version, r.PostForm)
		if err != nil {
			u.refused(w, r, form, version, err)
			return
		}
		http.Redirect(w, r, "/assets/"+id.String()+"?flash="+flash+"#"+anchor, http.StatusSeeOther)
	}
}

// refused answers an edit the domain refused with the asset page: 400 for invalid input, 409
// for a stale version or a conflict with the current state (a label or column that is gone), the
// page showing the current value and the form keeping what was typed.
func (u *UI) refused(w http.ResponseWriter, r *http.Request, form string, seen int64, err error) {
	var de *catalog.Error
	if !errors.As(err, &de) {
		u.fail(w, r, err)
		return
	}
	status := http.StatusConflict
	if errors.Is(err, catalog.ErrInvalid) {
		status = http.StatusBadRequest
	}
	typed := url.Values{}
	for k, v := range r.PostForm {
		if k != "csrf" && k != "version" {
			typed[k] = v
		}
	}
	u.assetPage(w, r, status, editState{Form: form, Column: r.PostFormValue("column"), Seen: seen, Message: de.Message,
		Stale: errors.Is(err, catalog.ErrStaleVersion), Typed: typed})
}

// textarea is a textarea's value with the browser's CRLF line ends made LF.
func textarea(f url.Values, field string) string {
	return strings.ReplaceAll(f.Get(field), "\r\n", "\n")
}

// columnOf reads the form's column: empty for the asset itself.
func columnOf(f url.Values) (uuid.UUID, error) {
	s := f.Get("column")
	if s == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "column", Message: "the form names a column that is not a column ID; reload the page"}
	}
	return id, nil
}

func editDescription(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	desc := textarea(f, "description")
	_, err := cat.Update(ctx, id, version, catalog.UpdateInput{Description: &desc})
	return "description-saved", "description", err
}

func editColumnDescription(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	col, err := columnOf(f)
	if err == nil && col == uuid.Nil {
		err = &catalog.Error{Kind: catalog.ErrInvalid, Field: "column", Message: "the form does not name a column; reload the page"}
	}
	if err != nil {
		return "", "", err
	}
	_, err = cat.SetColumnDescription(ctx, id, version, col, textarea(f, "description"))
	return "column-saved", "col-" + col.String(), err
}

func editOwnerAdd(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	_, err := cat.SetOwner(ctx, id, version, catalog.OwnerInput{Principal: strings.TrimSpace(f.Get("principal")),
		Kind: catalog.OwnerKind(f.Get("kind")), Role: strings.TrimSpace(f.Get("role"))})
	return "owner-added", "owners-h", err
}

func editOwnerRemove(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	_, err := cat.RemoveOwner(ctx, id, version, f.Get("principal"))
	return "owner-removed", "owners-h", err
}

// labelAnchor is the page section a label edit goes back to.
func labelAnchor(col uuid.UUID) string {
	if col == uuid.Nil {
		return "labels-h"
	}
	return "col-" + col.String()
}

func editTagAdd(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	col, err := columnOf(f)
	if err != nil {
		return "", "", err
	}
	_, err = cat.AddLabel(ctx, id, version, catalog.LabelInput{ColumnID: col, Kind: catalog.LabelTag, Value: strings.TrimSpace(f.Get("tag"))})
	return "tag-added", labelAnchor(col), err
}

func editTagRemove(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	col, err := columnOf(f)
	if err != nil {
		return "", "", err
	}
	_, err = cat.RemoveLabel(ctx, id, version, col, catalog.LabelTag, f.Get("tag"))
	return "tag-removed", labelAnchor(col), err
}

func editTermAdd(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	col, err := columnOf(f)
	if err != nil {
		return "", "", err
	}
	if f.Get("term") == "" {
		return "", "", &catalog.Error{Kind: catalog.ErrInvalid, Field: "term", Message: "choose a glossary term to link"}
	}
	_, err = cat.AddLabel(ctx, id, version, catalog.LabelInput{ColumnID: col, Kind: catalog.LabelTerm, Value: f.Get("term")})
	return "term-linked", labelAnchor(col), err
}

func editTermRemove(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
	col, err := columnOf(f)
	if err != nil {
		return "", "", err
	}
	_, err = cat.RemoveLabel(ctx, id, version, col, catalog.LabelTerm, f.Get("term"))
	return "term-unlinked", labelAnchor(col), err
}

func editSuggestion(accept bool) assetEditFunc {
	return func(ctx context.Context, cat *catalog.Catalog, id uuid.UUID, version int64, f url.Values) (string, string, error) {
		from, err := uuid.Parse(f.Get("from"))
		if err != nil {
			return "", "", &catalog.Error{Kind: catalog.ErrInvalid, Field: "from", Message: "the form does not name the upstream column; reload the page"}
		}
		key := catalog.SuggestionKey{ColumnPath: f.Get("path"), Tag: f.Get("tag"), FromColumnID: from}
		if accept {
			_, err = cat.AcceptSuggestion(ctx, id, version, key)
			return "suggestion-accepted", "suggestions-h", err
		}
		_, err = cat.RejectSuggestion(ctx, id, version, key)
		return "suggestion-rejected", "suggestions-h", err
	}
}
