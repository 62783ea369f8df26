package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/catalog"
)

// Classifications (controlled tag families such as pii and tier) on a page of their own: anyone
// sees them and their values; an admin (as the API asks) adds one or changes one at the version
// the page showed.

func init() { funcs["join"] = strings.Join }

type classificationsData struct {
	Items []catalog.Classification
	// A refused form: which classification ("" for the new one), why, and what was typed.
	Form    string
	Error   string
	Typed   catalog.Classification
	Refused bool
}

func (u *UI) classificationRoutes() {
	u.handleFunc("GET /classifications", func(w http.ResponseWriter, r *http.Request) {
		u.classificationsPage(w, r, http.StatusOK, classificationsData{})
	})
	u.handleFunc("POST /classifications", u.putClassification)
}

func (u *UI) classificationsPage(w http.ResponseWriter, r *http.Request, status int, d classificationsData) {
	items, err := u.cfg.Catalog.Classifications(r.Context())
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.Items = items
	u.render(w, r, status, "classifications", "Classifications", d)
}

// putClassification creates a classification (version 0: only when the name is free) or changes
// one at the version its form showed.
func (u *UI) putClassification(w http.ResponseWriter, r *http.Request) {
	s := u.editor(w, r)
	if s == nil {
		return
	}
	if !s.Admin {
		http.Error(w, "forbidden: changing classifications needs a token with the admin scope", http.StatusForbidden)
		return
	}
	in := catalog.Classification{Name: strings.TrimSpace(r.PostFormValue("name")), Description: textarea(r.PostForm, "description"),
		Values:    strings.FieldsFunc(r.PostFormValue("values"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' }),
		Propagate: r.PostFormValue("propagate") == "on"}
	version, err := strconv.ParseInt(r.PostFormValue("version"), 10, 64)
	form := in.Name
	if err != nil || version < 0 {
		err = &catalog.Error{Kind: catalog.ErrInvalid, Message: "the form does not say which version it was loaded with; reload the page"}
	} else if version == 0 {
		form = ""
		// AnyVersion would change an existing one: a new one must have a free name.
		items, lerr := u.cfg.Catalog.Classifications(r.Context())
		err = lerr
		for _, c := range items {
			if c.Name == in.Name {
				err = &catalog.Error{Kind: catalog.ErrConflict, Message: "a classification " + in.Name + " exists already; change it in its own form below"}
			}
		}
	}
	if err == nil {
		_, err = u.cfg.Catalog.PutClassification(catalog.WithActor(r.Context(), s.actor()), in, version)
	}
	if err == nil {
		http.Redirect(w, r, "/classifications?flash=classification-saved#cl-"+in.Name, http.StatusSeeOther)
		return
	}
	var de *catalog.Error
	if !errors.As(err, &de) {
		u.fail(w, r, err)
		return
	}
	status, msg := http.StatusConflict, de.Message
	switch {
	case errors.Is(err, catalog.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, catalog.ErrStaleVersion):
		msg = "This classification changed since you loaded the page, so nothing was saved. Its current values are shown, " +
			"and what you entered is kept in the form: check it and submit again."
	case errors.Is(err, catalog.ErrNotFound):
		status = http.StatusNotFound
	}
	u.classificationsPage(w, r, status, classificationsData{Form: form, Error: msg, Typed: in, Refused: true})
}
