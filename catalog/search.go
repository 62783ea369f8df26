package catalog

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Limits on searches: a query is a few words a person typed, and a page is what a person reads.
// Past 10,000 results deep, narrowing the search beats paging.
const (
	MaxSearchBytes     = 200
	MaxSearchTokens    = 16
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	MaxSearchOffset    = 10_000
	// FacetValues is how many values per facet an answer counts (the most frequent ones).
	FacetValues = 20
	// maxFilterBytes bounds a facet filter's value (the longest facet value is a namespace).
	maxFilterBytes = MaxNamespaceBytes
)

// What a hit matched in, as SearchHit.MatchedIn names it.
const (
	MatchedName        = "name"
	MatchedFormerName  = "former_name"
	MatchedTag         = "tag"
	MatchedTerm        = "term"
	MatchedOwner       = "owner"
	MatchedDescription = "description"
	MatchedColumn      = "column"
)

// SearchQuery is a search: words to look for and exact facet filters.
type SearchQuery struct {
	// Text is split into tokens (letters and digits); every token must match, the last one as
	// a prefix. Empty text with a filter lists the filtered assets by name.
	Text string
	// Facet filters, exact: the kind, the current namespace, a tag (on the asset or one of its
	// columns, e.g. "pii.email") and a current owner's principal.
	Kind, Namespace, Tag, Owner string
	// Status, when set, keeps assets with that status only (deleted included when asked for).
	Status Status
	// Limit is the page size (1-100, 0 for 20); Offset skips that many results (up to 10,000).
	Limit, Offset int
	// IncludeDeleted lets deleted assets into the hits (never into the facet counts).
	IncludeDeleted bool
	// HitsOnly skips the facet counts and what each hit matched in, for a caller that shows
	// neither (the asset list): the hits and totals are the same.
	HitsOnly bool
}

// SearchResult is one page of a search.
//
// A search examines at most the search window (2,000 matches by default, or offset+limit when
// deeper): every asset whose current name matches first, then the other matches in index
// order. When there are more, TotalExact is false and Total is the number examined (a lower
// bound), hits are ranked among the examined matches and facets count them. Ranking and counting
// every match of a word found in a fifth of the catalog would take a tenth of a second or more
// per search on either database; a person refines such a search rather than reading it all.
type SearchResult struct {
	Total      int  // the matching assets; a lower bound unless TotalExact
	TotalExact bool // every match was examined
	Hits       []SearchHit
	// Facets counts the matching (examined), non-deleted assets per value of each facet (kind,
	// namespace, tag, owner): the FacetValues most frequent values, most frequent first.
	Facets map[string][]FacetCount
}

// DefaultSearchWindow is how many matches a search examines unless WithSearchWindow says
// otherwise: enough to rank and count any search a person pages through, few enough for an
// answer within 50 ms on both databases (see bench/search).
const DefaultSearchWindow = 2000

// WithSearchWindow sets how many matches a search examines at most (DefaultSearchWindow).
func WithSearchWindow(n int) Option { return func(c *Catalog) { c.searchWindow = n } }

// FacetCount is how many matching assets have a facet value.
type FacetCount struct {
	Value string
	Count int
}

// SearchHit is one matching asset and why it matched.
type SearchHit struct {
	ID        uuid.UUID
	Kind      Kind
	Status    Status
	Namespace string
	Name      string
	// MatchedIn names the fields the query matched in, in this order: name (the current
	// namespace and name), former_name, tag, term, owner, description, column.
	MatchedIn []string
	// MatchedFormer is the former name that matched best, when a former name matched.
	MatchedFormer *Name
	// MatchedTags and MatchedOwners are the tags and owners that matched.
	MatchedTags, MatchedOwners []string
	// Score orders the hits, highest first: 3 to 4 for an exact match of the current name, 2 to
	// 3 for an exact match of a former name, 1 to 2 when the current name holds every word, 0 to
	// 1 otherwise (the full-text rank decides within each band); 0 when the search has no words.
	Score float64
}

// SearchAssets finds assets by words in their current and former names, tags, glossary terms,
// owners, description and columns, ranked: an exact match of the current name first, then an
// exact match of a former name (the asset a person knew by that name), then assets whose
// current name holds every word, then by full-text rank (weighted by field).
// Deleted assets are left out unless asked for. Without words, the filters list their assets
// by name. See SearchResult for how much of a very common word's matches a search examines.
func (c *Catalog) SearchAssets(ctx context.Context, q SearchQuery) (SearchResult, error) {
	plan, err := validateSearch(&q)
	if err != nil {
		return SearchResult{}, err
	}
	client := c.client(ctx)
	d, err := c.sqlDialect(ctx, client)
	if err != nil {
		return SearchResult{}, err
	}
	window := c.searchWindow
	if window <= 0 {
		window = DefaultSearchWindow
	}
	window = max(window, q.Offset+q.Limit)
	s := &searcher{client: client, d: d, q: q, plan: plan, window: window}
	var page []int
	if len(plan.tokens) > 0 {
		page, err = s.matches(ctx)
	} else {
		page, err = s.listing(ctx)
	}
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{Total: len(s.examined), TotalExact: s.complete, Hits: []SearchHit{}, Facets: map[string][]FacetCount{}}
	for _, f := range Facets {
		res.Facets[f] = []FacetCount{}
	}
	hits, err := s.pageHits(ctx, page)
	if err != nil {
		return SearchResult{}, err
	}
	if !q.HitsOnly {
		if err := s.facets(ctx, res.Facets); err != nil {
			return SearchResult{}, err
		}
		if err := explain(ctx, client, plan, hits); err != nil {
			return SearchResult{}, err
		}
	}
	for _, h := range hits {
		res.Hits = append(res.Hits, h.SearchHit)
	}
	return res, nil
}

func validateSearch(q *SearchQuery) (searchPlan, error) {
	if len(q.Text) > MaxSearchBytes {
		return searchPlan{}, invalid("q", "the search is %d bytes long; the limit is %d", len(q.Text), MaxSearchBytes)
	}
	plan := newSearchPlan(q.Text)
	if len(plan.tokens) > MaxSearchTokens {
		return searchPlan{}, invalid("q", "the search has %d words; the limit is %d", len(plan.tokens), MaxSearchTokens)
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Limit < 1 || q.Limit > MaxSearchLimit {
		return searchPlan{}, invalid("limit", "limit must be from 1 to %d, not %d", MaxSearchLimit, q.Limit)
	}
	if q.Offset < 0 || q.Offset > MaxSearchOffset {
		return searchPlan{}, invalid("offset", "offset must be from 0 to %d, not %d; narrow the search with more words or a filter instead",
			MaxSearchOffset, q.Offset)
	}
	if q.Kind != "" {
		if _, err := ParseKind(q.Kind); err != nil {
			return searchPlan{}, err
		}
	}
	if q.Status != "" {
		if _, err := ParseStatus(string(q.Status)); err != nil {
			return searchPlan{}, err
		}
	}
	for _, f := range []struct{ field, v string }{{"namespace", q.Namespace}, {"tag", q.Tag}, {"owner", q.Owner}} {
		switch {
		case len(f.v) > maxFilterBytes:
			return searchPlan{}, invalid(f.field, "%s is %d bytes long; the limit is %d", f.field, len(f.v), maxFilterBytes)
		case !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0):
			return searchPlan{}, invalid(f.field, "%s holds a NUL character or invalid UTF-8", f.field)
		}
	}
	if len(plan.tokens) == 0 && q.Kind == "" && q.Namespace == "" && q.Tag == "" && q.Owner == "" && q.Status == "" {
		if strings.TrimSpace(q.Text) != "" {
			return searchPlan{}, invalid("q", "the search %q has no letters or digits to look for", q.Text)
		}
		return searchPlan{}, invalid("q", "give words to search for, or a filter (kind, namespace, tag, owner)")
	}
	return plan, nil
}
