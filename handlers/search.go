package handlers

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/catalog"
)

// Ranked search: GET /api/v1/search, and GET /api/v1/assets?q= answered from it.

type searchResponse struct {
	Query string `json:"query"`
	// Total counts the matches; past the search window (2,000, or offset+limit when deeper) it
	// is the number examined and total_exact is false: there are more.
	Total      int                             `json:"total"`
	TotalExact bool                            `json:"total_exact"`
	Items      []searchItemResponse            `json:"items"`
	Facets     map[string][]facetCountResponse `json:"facets"`
	// NextOffset is the offset of the next page; absent on the last page (or past the deepest
	// offset a search pages to).
	NextOffset *int `json:"next_offset,omitempty"`
}

type searchItemResponse struct {
	ID        uuid.UUID `json:"id"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// MatchedIn lists the fields the words matched in: name, former_name, tag, term, owner,
	// description, column.
	MatchedIn         []string       `json:"matched_in"`
	MatchedFormerName *qualifiedName `json:"matched_former_name,omitempty"`
	Score             float64        `json:"score"`
}

type facetCountResponse struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

var searchOperation = operation{
	Method:  http.MethodGet,
	Path:    "/api/v1/search",
	Summary: "Search assets, ranked, with facet counts",
	Description: "Words match current and former names, namespaces, tags, glossary terms, owners, descriptions and columns; every word " +
		"must match, the last one as a prefix. An exact match of the current name ranks first, then assets whose current name holds " +
		"every word, then the rest by full-text rank. Deleted assets are left out. Without q, the filters list their assets by name. " +
		"Facets count the matching assets per kind, namespace, tag and owner (the 20 most frequent values each). " +
		"A search examines at most 2,000 matches (or offset+limit): every match of the current name first, then the rest in " +
		"index order; past that, total is the number examined, total_exact is false, and hits and facets come from the examined ones.",
	Tag:       "assets",
	Responses: map[int]any{200: searchResponse{}},
	Params: []param{
		{Name: "q", In: "query", Description: "words to find (at most 200 bytes, 16 words)"},
		{Name: "kind", In: "query", Description: "only assets of this kind"},
		{Name: "namespace", In: "query", Description: "only assets in this current namespace"},
		{Name: "tag", In: "query", Description: "only assets with this tag on them or a column, e.g. pii.email"},
		{Name: "owner", In: "query", Description: "only assets with this current owner"},
		{Name: "limit", In: "query", Description: "1-100, default 20"},
		{Name: "offset", In: "query", Description: "0-10000: results to skip (next_offset of the previous page)"},
	},
}

func (a *API) search(c echo.Context) error {
	q := catalog.SearchQuery{Text: c.QueryParam("q"), Kind: c.QueryParam("kind"), Namespace: c.QueryParam("namespace"),
		Tag: c.QueryParam("tag"), Owner: c.QueryParam("owner")}
	var err error
	if q.Limit, err = queryInt(c, "limit", catalog.DefaultSearchLimit, 1, catalog.MaxSearchLimit); err != nil {
		return err
	}
	if q.Offset, err = queryInt(c, "offset", 0, 0, catalog.MaxSearchOffset); err != nil {
		return err
	}
	res, err := a.cfg.Catalog.SearchAssets(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := searchResponse{Query: q.Text, Total: res.Total, TotalExact: res.TotalExact, Items: make([]searchItemResponse, 0, len(res.Hits)),
		Facets: make(map[string][]facetCountResponse, len(res.Facets))}
	for _, h := range res.Hits {
		it := searchItemResponse{ID: h.ID, Kind: string(h.Kind), Status: string(h.Status), Namespace: h.Namespace, Name: h.Name,
			MatchedIn: h.MatchedIn, Score: h.Score}
		if it.MatchedIn == nil {
			it.MatchedIn = []string{}
		}
		if f := h.MatchedFormer; f != nil {
			it.MatchedFormerName = &qualifiedName{Namespace: f.Namespace, Name: f.Name}
		}
		out.Items = append(out.Items, it)
	}
	for facet, counts := range res.Facets {
		fs := make([]facetCountResponse, 0, len(counts))
		for _, fc := range counts {
			fs = append(fs, facetCountResponse{Value: fc.Value, Count: fc.Count})
		}
		out.Facets[facet] = fs
	}
	if next := q.Offset + len(res.Hits); more(res, next) {
		out.NextOffset = &next
	}
	return c.JSON(http.StatusOK, out)
}

// more reports whether a search has hits past next (a page's end) that a next page may show.
func more(res catalog.SearchResult, next int) bool {
	return len(res.Hits) > 0 && (next < res.Total || !res.TotalExact) && next <= catalog.MaxSearchOffset
}

// searchAssetList answers GET /api/v1/assets?q= from the ranked search: the page holds whole
// assets in rank order, and next_cursor carries the offset of the next page.
func (a *API) searchAssetList(c echo.Context, f catalog.ListFilter, scope string) error {
	offset, err := decodeOffsetCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := a.cfg.Catalog.SearchAssets(ctx, catalog.SearchQuery{Text: f.Query, Namespace: f.Namespace, Kind: string(f.Kind),
		Status: f.Status, Limit: min(f.Limit, catalog.MaxSearchLimit), Offset: offset, HitsOnly: true})
	if err != nil {
		return err
	}
	ids := make([]uuid.UUID, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	assets, err := a.cfg.Catalog.GetMany(ctx, ids)
	if err != nil {
		return err
	}
	out := assetListResponse{Items: make([]assetResponse, 0, len(assets))}
	for _, it := range assets {
		out.Items = append(out.Items, toAssetResponse(it))
	}
	if next := offset + len(res.Hits); more(res, next) {
		out.NextCursor = encodeOffsetCursor(next, scope)
	}
	return c.JSON(http.StatusOK, out)
}

// Search pages are positions in a ranking, not IDs: their cursors carry an offset,
// "s1:<offset>:<scope>", base64url like the others and refused under other filters.
const offsetCursorVersion = "s1"

func encodeOffsetCursor(offset int, scope string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(offsetCursorVersion + ":" + strconv.Itoa(offset) + ":" + scopeHash(scope)))
}

func decodeOffsetCursor(s, scope string) (int, error) {
	if s == "" {
		return 0, nil
	}
	bad := func(why string) (int, error) {
		return 0, badRequest("cursor", "cursor %q is not valid (%s); pass next_cursor from the previous page unchanged, with the same filters", truncate(s, 64), why)
	}
	if len(s) > 200 {
		return bad("too long")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != offsetCursorVersion {
		return bad("unknown format")
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n < 0 || n > catalog.MaxSearchOffset || fmt.Sprint(n) != parts[1] {
		return bad("bad position")
	}
	if parts[2] != scopeHash(scope) {
		return bad("it was issued for different filters")
	}
	return n, nil
}
