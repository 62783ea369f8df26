package web

import (
	"context"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// The home page's search: ranked hits that say what matched, and facet links that narrow the
// search with counts.

// searchPageSize is the hits per page of the home page's search.
const searchPageSize = 50

// searchParams maps each facet to the query parameter the page uses for it ("ns" is the browse
// form's name for the namespace, kept so one link works for both).
var searchParams = []struct{ facet, param, label string }{
	{catalog.FacetKind, "kind", "Kind"},
	{catalog.FacetNamespace, "ns", "Namespace"},
	{catalog.FacetTag, "tag", "Tag"},
	{catalog.FacetOwner, "owner", "Owner"},
}

type searchView struct {
	Query  string
	Total  int
	Exact  bool // Total counts every match (else it is a lower bound)
	Hits   []searchHitView
	Facets []facetView
	Active []activeFilter
	// Prev and Next link the neighbouring pages; empty when there is none.
	Prev, Next string
	From, To   int
}

type searchHitView struct {
	ID                    uuid.UUID
	Name, Namespace, Kind string
	Status                string
	// Former is the former name that matched ("orders", or "orders in warehouse" when the
	// namespace differs from the current one).
	Former  string
	Owners  []string // owners that matched
	Matched string   // what else matched, for a person: "tag pii.email, column"
}

type facetView struct {
	Label  string
	Values []facetValueView
}

type facetValueView struct {
	Value  string
	Count  int
	Href   string
	Active bool
}

type activeFilter struct {
	Label, Value string
	Clear        string // the same search without this filter
}

// searching reports whether the home page asks for a search rather than the browse list: words,
// or a tag or owner filter (kind and namespace alone browse, as they always did).
func searching(v url.Values) bool {
	return strings.TrimSpace(v.Get("q")) != "" || v.Get("tag") != "" || v.Get("owner") != ""
}

// search runs the home page's search from its query parameters.
func (u *UI) search(ctx context.Context, v url.Values) (*searchView, error) {
	offset := 0
	if s := v.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "offset", Message: "offset must be a whole number"}
		}
		offset = n
	}
	q := catalog.SearchQuery{Text: strings.TrimSpace(v.Get("q")), Kind: v.Get("kind"), Namespace: v.Get("ns"),
		Tag: v.Get("tag"), Owner: v.Get("owner"), Limit: searchPageSize, Offset: offset}
	res, err := u.cfg.Catalog.SearchAssets(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &searchView{Query: q.Text, Total: res.Total, Exact: res.TotalExact, From: offset + 1, To: offset + len(res.Hits)}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, toHitView(h))
	}
	// Links keep the words and filters, and start again at the first page.
	link := func(set map[string]string) string {
		w := url.Values{}
		if q.Text != "" {
			w.Set("q", q.Text)
		}
		for _, p := range searchParams {
			if val := v.Get(p.param); val != "" {
				w.Set(p.param, val)
			}
		}
		for k, val := range set {
			if val == "" {
				w.Del(k)
			} else {
				w.Set(k, val)
			}
		}
		return "/?" + w.Encode()
	}
	for _, p := range searchParams {
		current := v.Get(p.param)
		if current != "" {
			out.Active = append(out.Active, activeFilter{Label: p.label, Value: current, Clear: link(map[string]string{p.param: ""})})
		}
		f := facetView{Label: p.label}
		for _, fc := range res.Facets[p.facet] {
			f.Values = append(f.Values, facetValueView{Value: fc.Value, Count: fc.Count, Active: fc.Value == current,
				Href: link(map[string]string{p.param: fc.Value})})
		}
		if len(f.Values) > 0 {
			out.Facets = append(out.Facets, f)
		}
	}
	if offset > 0 {
		out.Prev = link(map[string]string{"offset": strconv.Itoa(max(0, offset-searchPageSize))})
	}
	if next := offset + len(res.Hits); len(res.Hits) > 0 && (next < res.Total || !res.TotalExact) && next <= catalog.MaxSearchOffset {
		out.Next = link(map[string]string{"offset": strconv.Itoa(next)})
	}
	return out, nil
}

func toHitView(h catalog.SearchHit) searchHitView {
	out := searchHitView{ID: h.ID, Name: h.Name, Namespace: h.Namespace, Kind: string(h.Kind), Status: string(h.Status), Owners: h.MatchedOwners}
	if f := h.MatchedFormer; f != nil {
		out.Former = f.Name
		if f.Namespace != h.Namespace {
			out.Former += " in " + f.Namespace
		}
	}
	var what []string
	for _, m := range h.MatchedIn {
		switch m {
		case catalog.MatchedName, catalog.MatchedFormerName, catalog.MatchedOwner:
			// shown on their own
		case catalog.MatchedTag:
			what = append(what, "tag "+strings.Join(h.MatchedTags, ", "))
		case catalog.MatchedTerm:
			what = append(what, "glossary term")
		default:
			what = append(what, m)
		}
	}
	out.Matched = strings.Join(what, "; ")
	return out
}
