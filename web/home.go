package web

// The home page: search and browse.

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/usage"
)

type homeData struct {
	Query     string
	Namespace string
	Kind      string
	Search    *searchView // see search.go
	Assets    []catalog.Asset
	Kinds     []catalog.Kind
	Searched  bool
	// Waiting are the names usage records wait under until an asset takes them.
	Waiting        []usage.Waiting
	WaitingRecords int64
	// Browsing: Total assets match, this page shows From to From+len(Assets)-1, Next continues.
	Total int
	From  int
	Next  string
}

// homePage is how many assets the browse list shows at once.
const homePage = 100

func (u *UI) home(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := homeData{Query: q, Namespace: r.URL.Query().Get("ns"), Kind: r.URL.Query().Get("kind"), Kinds: catalog.Kinds}
	ctx := r.Context()
	var err error
	if searching(r.URL.Query()) {
		d.Searched = true
		d.Search, err = u.search(ctx, r.URL.Query())
	} else {
		f := catalog.ListFilter{NamespaceContains: strings.TrimSpace(d.Namespace), Kind: catalog.Kind(d.Kind), Limit: homePage}
		f.After, _ = uuid.Parse(r.URL.Query().Get("after"))
		d.From = 1
		if n, _ := strconv.Atoi(r.URL.Query().Get("from")); n > 1 && f.After != uuid.Nil {
			d.From = n
		}
		var more bool
		d.Assets, more, err = u.cfg.Catalog.List(ctx, f)
		if err == nil {
			d.Total, err = u.cfg.Catalog.Count(ctx, f)
		}
		if err == nil && more {
			q := url.Values{"after": {d.Assets[len(d.Assets)-1].ID.String()}, "from": {strconv.Itoa(d.From + len(d.Assets))}}
			if d.Namespace != "" {
				q.Set("ns", d.Namespace)
			}
			if d.Kind != "" {
				q.Set("kind", d.Kind)
			}
			d.Next = "/?" + q.Encode()
		}
		if err == nil && u.cfg.Usage != nil {
			d.Waiting, d.WaitingRecords, err = u.cfg.Usage.Unresolved(ctx, 10)
		}
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "home", "Search", d)
}
