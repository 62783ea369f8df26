package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// The glossary pages: the terms, one term with its definition (Markdown), owners, related terms
// and what it is linked to, and the forms to create and change terms (a write token; a change
// carries the version the page showed and is refused, 409, when the term changed since).

// maxTermLinks bounds the assets and columns a term's page lists.
const maxTermLinks = 200

// termForm is a term as the form holds it, kept when a change is refused.
type termForm struct {
	Name, Definition, Owners string
	Related                  []string
}

func (f termForm) Relates(id uuid.UUID) bool {
	for _, r := range f.Related {
		if r == id.String() {
			return true
		}
	}
	return false
}

func termFormOf(t catalog.Term) termForm {
	f := termForm{Name: t.Name, Definition: t.Definition, Owners: strings.Join(t.Owners, ", ")}
	for _, r := range t.Related {
		f.Related = append(f.Related, r.ID.String())
	}
	return f
}

// readTermForm reads the form; a related term that is not an ID is invalid input.
func readTermForm(r *http.Request) (termForm, catalog.TermInput, error) {
	f := termForm{Name: strings.TrimSpace(r.PostFormValue("name")), Definition: textarea(r.PostForm, "definition"),
		Owners: r.PostFormValue("owners"), Related: r.PostForm["related"]}
	in := catalog.TermInput{Name: f.Name, Definition: f.Definition}
	for _, o := range strings.Split(f.Owners, ",") {
		if o = strings.TrimSpace(o); o != "" {
			in.Owners = append(in.Owners, o)
		}
	}
	for _, s := range f.Related {
		id, err := uuid.Parse(s)
		if err != nil {
			return f, in, &catalog.Error{Kind: catalog.ErrInvalid, Field: "related", Message: "a related term is not a term ID; reload the page"}
		}
		in.Related = append(in.Related, id)
	}
	return f, in, nil
}

// termStatus is the status a refused term change answers with, or 0 for an internal error.
func termStatus(err error) int {
	var de *catalog.Error
	switch {
	case !errors.As(err, &de):
		return 0
	case errors.Is(err, catalog.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, catalog.ErrNotFound):
		return http.StatusNotFound
	}
	return http.StatusConflict
}

type glossaryData struct {
	Terms []catalog.Term
	After string // the last name listed when more follow
	Form  termForm
	Error string
}

func (u *UI) glossary(w http.ResponseWriter, r *http.Request) {
	u.glossaryPage(w, r, http.StatusOK, glossaryData{})
}

func (u *UI) glossaryPage(w http.ResponseWriter, r *http.Request, status int, d glossaryData) {
	after := r.URL.Query().Get("after")
	terms, more, err := u.cfg.Catalog.Terms(r.Context(), after, 200)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.Terms = terms
	if more && len(terms) > 0 {
		d.After = terms[len(terms)-1].Name
	}
	u.render(w, r, status, "glossary", "Glossary", d)
}

func (u *UI) createTerm(w http.ResponseWriter, r *http.Request) {
	s := u.editor(w, r)
	if s == nil {
		return
	}
	f, in, err := readTermForm(r)
	if err == nil {
		var t catalog.Term
		t, err = u.cfg.Catalog.CreateTerm(catalog.WithActor(r.Context(), s.actor()), in)
		if err == nil {
			http.Redirect(w, r, "/glossary/"+t.ID.String()+"?flash=term-created", http.StatusSeeOther)
			return
		}
	}
	status := termStatus(err)
	if status == 0 {
		u.fail(w, r, err)
		return
	}
	u.glossaryPage(w, r, status, glossaryData{Form: f, Error: err.Error()})
}

type termData struct {
	Term  catalog.Term
	Links []termLink
	// All are the terms a related term is chosen from (this one left out).
	All     []catalog.Term
	Form    termForm
	Version int64 // the version the form carries: the term's current one
	// Error and Stale say why a change was refused (the form then holds what was typed).
	Error string
	Stale bool
}

type termLink struct {
	AssetID uuid.UUID
	Asset   string
	Column  string
}

func (u *UI) term(w http.ResponseWriter, r *http.Request) {
	u.termPage(w, r, http.StatusOK, nil)
}

// termPage renders a term; refused, when set, is a change the page refused (its form kept).
func (u *UI) termPage(w http.ResponseWriter, r *http.Request, status int, refused *termData) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a glossary term ID"})
		return
	}
	ctx := r.Context()
	t, err := u.cfg.Catalog.Term(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := termData{Term: t, Form: termFormOf(t), Version: t.Version}
	if refused != nil {
		d.Form, d.Error, d.Stale = refused.Form, refused.Error, refused.Stale
	}
	links, err := u.cfg.Catalog.TermLinks(ctx, id, maxTermLinks)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ids := make([]uuid.UUID, len(links))
	for i, l := range links {
		ids[i] = l.AssetID
	}
	names, err := u.names(r, ids, false)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for _, l := range links {
		d.Links = append(d.Links, termLink{AssetID: l.AssetID, Asset: names[l.AssetID], Column: l.Column})
	}
	if s := u.sessions.get(r); s != nil && s.Write {
		all, _, err := u.cfg.Catalog.Terms(ctx, "", maxPickTerms)
		if err != nil {
			u.fail(w, r, err)
			return
		}
		for _, x := range all {
			if x.ID != id {
				d.All = append(d.All, x)
			}
		}
	}
	u.render(w, r, status, "term", t.Name, d)
}

func (u *UI) updateTerm(w http.ResponseWriter, r *http.Request) {
	s := u.editor(w, r)
	if s == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a glossary term ID"})
		return
	}
	version, err := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	if err != nil || version < 1 {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "the form does not say which version of the term it was loaded with; reload the page and try again"})
		return
	}
	f, in, err := readTermForm(r)
	if err == nil {
		_, err = u.cfg.Catalog.UpdateTerm(catalog.WithActor(r.Context(), s.actor()), id, version, in)
		if err == nil {
			http.Redirect(w, r, "/glossary/"+id.String()+"?flash=term-saved", http.StatusSeeOther)
			return
		}
	}
	status := termStatus(err)
	if status == 0 || status == http.StatusNotFound {
		u.fail(w, r, err)
		return
	}
	msg, stale := err.Error(), errors.Is(err, catalog.ErrStaleVersion)
	if stale {
		msg = "This term changed since you loaded the page, so nothing was saved. Its current definition is shown below, " +
			"and what you entered is kept in the form: check it and submit again."
	}
	u.termPage(w, r, status, &termData{Form: f, Error: msg, Stale: stale})
}
