package catalog

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/ent/owner"
	"github.com/tidemark/tidemark/ent/searchfacet"
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

// searchPlan is a query's tokens and the full-text queries made of them. User text reaches SQL
// only as bound parameters; the tokens hold letters and digits only and are quoted anyway.
type searchPlan struct {
	tokens []string
	key    string // the tokens joined by spaces: an exact name match compares with it
}

func newSearchPlan(text string) searchPlan {
	toks := searchTokens(text)
	return searchPlan{tokens: toks, key: strings.Join(toks, " ")}
}

// fts5Whole is fts5 with every token whole (no prefix): for exact matches.
func (p searchPlan) fts5Whole(column string) string { return p.fts5Query(column, false) }

// tsqueryWhole is tsquery with every token whole (no prefix): for exact matches.
func (p searchPlan) tsqueryWhole() string { return strings.TrimSuffix(p.tsquery(), ":*") }

// fts5 is the SQLite FTS5 query: every token (implicit AND), the last as a prefix; with column
// set, only in that column.
func (p searchPlan) fts5(column string) string { return p.fts5Query(column, true) }

func (p searchPlan) fts5Query(column string, prefix bool) string {
	var b strings.Builder
	for i, t := range p.tokens {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
		if prefix && i == len(p.tokens)-1 {
			b.WriteByte('*')
		}
	}
	if column != "" {
		return column + " : (" + b.String() + ")"
	}
	return b.String()
}

// tsquery is the PostgreSQL tsquery text: every token ANDed, the last as a prefix.
func (p searchPlan) tsquery() string {
	var b strings.Builder
	for i, t := range p.tokens {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteString(`'` + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(t) + `'`)
		if i == len(p.tokens)-1 {
			b.WriteString(":*")
		}
	}
	return b.String()
}

// Column weights of the rank, in the fields' order of importance: current name, labels (tags,
// terms, owners), former names, body (description, columns).
const (
	bm25Weights    = "10.0, 5.0, 3.0, 1.0"    // FTS5: t_name, t_labels, t_former, t_body
	tsRankWeights  = "'{0.1, 0.3, 0.5, 1.0}'" // PostgreSQL: D, C, B, A
	tsRankNormBand = "32"                     // rank/(rank+1): a rank within [0, 1)
)

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

// sqlDialect returns the database's dialect as ent's query builder sees it, asking once
// (through client, so a transaction's own connection answers).
func (c *Catalog) sqlDialect(ctx context.Context, client *ent.Client) (string, error) {
	if d := c.dialect.Load(); d != nil {
		return *d, nil
	}
	var d string
	if _, err := client.SearchDoc.Query().Where(func(s *entsql.Selector) {
		d = s.Dialect()
		s.Where(entsql.False())
	}).Exist(ctx); err != nil {
		return "", fmt.Errorf("catalog: search: %w", err)
	}
	c.dialect.Store(&d)
	return d, nil
}

// sqlArgs collects bound parameters and writes their placeholders: $1, $2, ... on PostgreSQL,
// ? on SQLite (whose numbered and named parameters cost a scan of the ones before each: a
// statement with thousands of them spent most of its time being parsed). Each add is a
// parameter of its own, also for a value used twice.
type sqlArgs struct {
	pg   bool
	args []any
}

func newSQLArgs(d string) *sqlArgs { return &sqlArgs{pg: d == dialect.Postgres} }

func (a *sqlArgs) add(v any) string {
	a.args = append(a.args, v)
	if a.pg {
		return "$" + strconv.Itoa(len(a.args))
	}
	return "?"
}

// searcher runs one search: it finds the examined matches (every match, or the window's worth),
// orders them, and reads what the page and the facets need.
type searcher struct {
	client *ent.Client
	d      string
	q      SearchQuery
	plan   searchPlan
	window int
	// examined are the matching docs looked at, by doc ID; complete says they are all of them.
	examined map[int]candidate
	complete bool
}

// candidate is an examined match: its band (tierExact ... tierOther) and its full-text rank
// within [0, 1), higher better.
type candidate struct {
	id   int
	tier int
	rel  float64
}

// The bands of a search's hits, best first.
const (
	tierExact  = iota // the current name is the words
	tierFormer        // a former name is the words (or its last dotted part is)
	tierNamed         // the current name holds every word
	tierOther         // the words are found elsewhere
)

// eligible is the condition a doc (its ID in idExpr) must meet besides matching: its status
// (not deleted, unless asked for) and each facet filter but skip, all through the facet index.
func (s *searcher) eligible(a *sqlArgs, idExpr, skip string) string {
	var w []string
	probe := func(facet, value string) string {
		return "EXISTS (SELECT 1 FROM search_facets e WHERE e.doc_id = " + idExpr + " AND e.facet = '" + facet + "' AND e.value = " + a.add(value) + ")"
	}
	switch {
	case s.q.Status == StatusActive:
		w = append(w, idExpr+" NOT IN (SELECT doc_id FROM search_facets WHERE facet = 'status')") // see facetStatus
	case s.q.Status != "" && skip != facetStatus:
		w = append(w, probe(facetStatus, string(s.q.Status)))
	case s.q.Status == "" && !s.q.IncludeDeleted:
		w = append(w, idExpr+" NOT IN (SELECT doc_id FROM search_facets WHERE facet = 'status' AND value = 'deleted')")
	}
	for _, f := range s.filters() {
		switch {
		case f[0] == skip:
		case f[0] == FacetKind:
			w = append(w, probe(f[0], f[1])) // a kind holds a large share of the catalog: probe each doc
		default:
			// A tag, owner or namespace holds few docs: collect them once (the database keeps
			// them in a hash or a temporary index) rather than probe the index per match.
			// The unary plus keeps SQLite from handing the IN list to FTS5 as rowids to look
			// up, which runs the full-text query again per rowid.
			plus := "+"
			if s.d == dialect.Postgres {
				plus = "" // the planner may drive from the filter's docs through the primary key
			}
			w = append(w, plus+idExpr+" IN (SELECT doc_id FROM search_facets WHERE facet = '"+f[0]+"' AND value = "+a.add(f[1])+")")
		}
	}
	if len(w) == 0 {
		return "1 = 1"
	}
	return strings.Join(w, " AND ")
}

// filters are the facet filters set, most selective kinds first (the first drives a listing).
func (s *searcher) filters() [][2]string {
	var out [][2]string
	for _, f := range [][2]string{{FacetTag, s.q.Tag}, {FacetOwner, s.q.Owner}, {FacetNamespace, s.q.Namespace}, {FacetKind, s.q.Kind}} {
		if f[1] != "" {
			out = append(out, f)
		}
	}
	return out
}

// matches finds the matches of the words, in one statement of four parts: the assets whose
// current name is exactly the words (through the name_key index), the assets whose current
// name holds every word, with their rank, every match in index order, and the assets whose
// former names hold every word (exactFormer then keeps those with a former name that is the
// words); the last three stop after the window. On SQLite the other matches are ranked by a
// second statement only when the page reaches past the name matches: there ranking costs more
// per match than finding it (4 µs against 1 µs for two words), and a common word's name
// matches usually fill the page. It returns the doc IDs of the requested page.
func (s *searcher) matches(ctx context.Context) ([]int, error) {
	a := newSQLArgs(s.d)
	var keys []string // the exact name could be any suffix of the words (the rest the namespace)
	for i := range s.plan.tokens {
		keys = append(keys, a.add(strings.Join(s.plan.tokens[i:], " ")))
	}
	exact := "SELECT 0 AS part, d.id, 0.0 AS r, d.name_key, d.t_name FROM search_docs d WHERE d.name_key IN (" + strings.Join(keys, ", ") +
		") AND " + s.eligible(a, "d.id", "")
	named := s.matchPart(a, 1, true)
	// PostgreSQL: finding costs most (the heap visit), ranking adds a fifth. SQLite: ranking every
	// match of a common word costs more than finding it, but words together match few, and
	// matching them twice (find, then rank) costs more than ranking them once.
	rankAll := s.d == dialect.Postgres || len(s.plan.tokens) > 1
	all := s.matchPart(a, 2, rankAll)
	former := s.matchPart(a, 3, false)
	rows, err := s.client.QueryContext(ctx, exact+" UNION ALL "+named+" UNION ALL "+all+" UNION ALL "+former, a.args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	defer rows.Close()
	var exacts, names, alls []candidate
	var formers []int
	rank := map[int]float64{} // by the name part's rank where there is one, else the whole doc's
	for rows.Next() {
		var c candidate
		var part int
		var nameKey, tName string
		if err := rows.Scan(&part, &c.id, &c.rel, &nameKey, &tName); err != nil {
			return nil, fmt.Errorf("catalog: search: %w", err)
		}
		switch part {
		case 0:
			if nameKey == s.plan.key || tName == s.plan.key {
				exacts = append(exacts, c)
			}
		case 1:
			c.rel = s.rel(c.rel)
			names = append(names, c)
			rank[c.id] = c.rel
		case 2:
			c.rel = s.rel(c.rel)
			alls = append(alls, c)
			if _, ok := rank[c.id]; !ok {
				rank[c.id] = c.rel
			}
		default:
			formers = append(formers, c.id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	rows.Close()
	formerExact, err := s.exactFormer(ctx, formers)
	if err != nil {
		return nil, err
	}
	s.complete = len(alls) <= s.window
	s.examined = make(map[int]candidate, min(len(alls), s.window))
	add := func(id, tier int, rel float64) {
		if _, seen := s.examined[id]; !seen && len(s.examined) < s.window {
			s.examined[id] = candidate{id: id, tier: tier, rel: rel}
		}
	}
	for _, e := range exacts {
		add(e.id, tierExact, rank[e.id])
	}
	for _, id := range formerExact {
		add(id, tierFormer, rank[id])
	}
	for _, n := range names {
		add(n.id, tierNamed, n.rel)
	}
	named0 := len(s.examined)
	for _, m := range alls {
		add(m.id, tierOther, m.rel)
	}
	if !rankAll && named0 < s.q.Offset+s.q.Limit && len(s.examined) > named0 {
		if err := s.rankOthers(ctx); err != nil {
			return nil, err
		}
	}
	order := make([]candidate, 0, len(s.examined))
	for _, c := range s.examined {
		order = append(order, c)
	}
	slices.SortFunc(order, func(x, y candidate) int {
		return cmp.Or(cmp.Compare(x.tier, y.tier), cmp.Compare(y.rel, x.rel), cmp.Compare(x.id, y.id))
	})
	var page []int
	for _, c := range order[min(s.q.Offset, len(order)):min(s.q.Offset+s.q.Limit, len(order))] {
		page = append(page, c.id)
	}
	return page, nil
}

// rankOthers ranks the examined matches of the last band (SQLite, when the page reaches them),
// the same window of them.
func (s *searcher) rankOthers(ctx context.Context) error {
	a := newSQLArgs(s.d)
	rows, err := s.client.QueryContext(ctx, s.matchPart(a, 2, true), a.args...)
	if err != nil {
		return fmt.Errorf("catalog: search: rank: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c candidate
		var part int
		var k1, k2 string
		if err := rows.Scan(&part, &c.id, &c.rel, &k1, &k2); err != nil {
			return fmt.Errorf("catalog: search: rank: %w", err)
		}
		if e, ok := s.examined[c.id]; ok && e.tier == tierOther {
			e.rel = s.rel(c.rel)
			s.examined[c.id] = e
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: search: rank: %w", err)
	}
	return nil
}

// exactFormer keeps, of docs whose former names hold every word, those with a former name
// that is the words: its name ("db.orders" for "db orders"), its namespace and name, or its
// name's last dotted part ("orders" for "db.orders"), in doc ID order. Former names are few,
// so reading them for the candidates is one small query.
func (s *searcher) exactFormer(ctx context.Context, docs []int) ([]int, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	a := newSQLArgs(s.d)
	rows, err := s.client.QueryContext(ctx, "SELECT d.id, d.namespace, d.name, n.namespace, n.name FROM search_docs d"+
		" JOIN asset_names n ON n.asset_id = d.asset_id WHERE d.id IN ("+a.list(docs)+")", a.args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: former names: %w", err)
	}
	defer rows.Close()
	found := map[int]bool{}
	for rows.Next() {
		var id int
		var curNS, cur, ns, name string
		if err := rows.Scan(&id, &curNS, &cur, &ns, &name); err != nil {
			return nil, fmt.Errorf("catalog: search: former names: %w", err)
		}
		if (ns != curNS || name != cur) && formerNameIs(s.plan.key, ns, name) {
			found[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: search: former names: %w", err)
	}
	return slices.Sorted(maps.Keys(found)), nil
}

// formerNameIs reports whether the words (key, as tokenText makes it) are the name namespace.name.
func formerNameIs(key, namespace, name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	return key == tokenText(name) || key == tokenText(namespace, name) || key == tokenText(last)
}

// matchPart is the statement of one part of matches: the docs whose current name holds every
// word (part 1) or all matches (part 2), eligible, in index order, up to one past the window;
// with rank, their full-text rank (the name part's, on SQLite, ranks by the name alone: FTS5
// cannot rank given rows by another query without running it once per row).
func (s *searcher) matchPart(a *sqlArgs, part int, rank bool) string {
	limit := strconv.Itoa(s.window + 1)
	r := "0.0"
	if s.d == dialect.Postgres {
		if rank {
			r = "ts_rank(" + tsRankWeights + ", d.tsv, to_tsquery('simple', " + a.add(s.plan.tsquery()) + "), " + tsRankNormBand + ")"
		}
		vector, query := "d.tsv", s.plan.tsquery()
		switch part {
		case 1:
			vector = "to_tsvector('simple', d.t_name)" // its own index: search_docs_name_tsv
		case 3:
			vector, query = "to_tsvector('simple', d.t_former)", s.plan.tsqueryWhole() // search_docs_former_tsv
		}
		match := vector + " @@ to_tsquery('simple', " + a.add(query) + ")"
		return "(SELECT " + strconv.Itoa(part) + ", d.id, " + r + ", '', '' FROM search_docs d WHERE " + match +
			" AND " + s.eligible(a, "d.id", "") + " LIMIT " + limit + ")"
	}
	if rank {
		r = "bm25(search_fts, " + bm25Weights + ")"
	}
	query := s.plan.fts5("")
	switch part {
	case 1:
		query = s.plan.fts5("t_name")
	case 3:
		query = s.plan.fts5Whole("t_former")
	}
	return "SELECT * FROM (SELECT " + strconv.Itoa(part) + ", rowid, " + r + ", '', '' FROM search_fts WHERE search_fts MATCH " +
		a.add(query) + " AND " + s.eligible(a, "search_fts.rowid", "") + " LIMIT " + limit + ")"
}

// rel turns a database's rank into [0, 1), higher better.
func (s *searcher) rel(r float64) float64 {
	if s.d != dialect.Postgres {
		r = -r / (1 - r) // bm25 is negative, lower better
	}
	return max(r, 0)
}

// listing lists the assets the filters select (no words), by name. The examined docs (for the
// total and the facets) are the first of the window through the most selective filter's facet
// index; the page comes from them when they are all, or else from a walk of the name_key index,
// which meets a page of a large set soon.
func (s *searcher) listing(ctx context.Context) ([]int, error) {
	drive := [2]string{facetStatus, string(s.q.Status)}
	if fs := s.filters(); len(fs) > 0 {
		drive = fs[0]
	}
	if drive == [2]string{facetStatus, string(StatusActive)} {
		drive = [2]string{} // active assets have no status facet: most docs are, so scan them
	}
	a := newSQLArgs(s.d)
	var q string
	if drive[0] == "" {
		q = "SELECT d.id FROM search_docs d WHERE " + s.eligible(a, "d.id", "") + " ORDER BY d.id"
	} else {
		q = "SELECT f.doc_id FROM search_facets f WHERE f.facet = '" + drive[0] + "' AND f.value = " + a.add(drive[1]) +
			" AND " + s.eligible(a, "f.doc_id", drive[0]) + " ORDER BY f.doc_id"
	}
	ids, err := s.ints(ctx, q+" LIMIT "+strconv.Itoa(s.window+1), a.args)
	if err != nil {
		return nil, err
	}
	s.complete = len(ids) <= s.window
	ids = ids[:min(len(ids), s.window)]
	s.examined = make(map[int]candidate, len(ids))
	for _, id := range ids {
		s.examined[id] = candidate{id: id, tier: tierOther}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	a = newSQLArgs(s.d)
	if s.complete {
		q = "SELECT d.id FROM search_docs d WHERE d.id IN (" + a.list(ids) + ")"
	} else {
		indexed := ""
		if s.d != dialect.Postgres {
			indexed = " INDEXED BY searchdoc_name_key"
		}
		q = "SELECT d.id FROM search_docs d" + indexed + " WHERE " + s.eligible(a, "d.id", drive[0])
		if drive[0] != "" {
			q += " AND EXISTS (SELECT 1 FROM search_facets e WHERE e.doc_id = d.id AND e.facet = '" + drive[0] + "' AND e.value = " + a.add(drive[1]) + ")"
		}
	}
	q += " ORDER BY d.name_key, d.id LIMIT " + a.add(s.q.Limit) + " OFFSET " + a.add(s.q.Offset)
	return s.ints(ctx, q, a.args)
}

func (s *searcher) ints(ctx context.Context, q string, args []any) ([]int, error) {
	rows, err := s.client.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("catalog: search: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	return out, nil
}

// list adds ids as parameters and returns their placeholders, comma-separated.
func (a *sqlArgs) list(ids []int) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.add(id))
	}
	return b.String()
}

// hit is a SearchHit with the doc's text fields, to explain what matched.
type hit struct {
	SearchHit
	docID                          int
	tName, tFormer, tLabels, tBody string
}

// pageHits reads the docs of the page, in the page's order.
func (s *searcher) pageHits(ctx context.Context, page []int) ([]hit, error) {
	if len(page) == 0 {
		return nil, nil
	}
	a := newSQLArgs(s.d)
	rows, err := s.client.QueryContext(ctx, "SELECT id, asset_id, kind, status, namespace, name, t_name, t_former, t_labels, t_body"+
		" FROM search_docs WHERE id IN ("+a.list(page)+")", a.args...)
	if err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	defer rows.Close()
	byID := map[int]hit{}
	for rows.Next() {
		var h hit
		var kind, status string
		if err := rows.Scan(&h.docID, &h.ID, &kind, &status, &h.Namespace, &h.Name, &h.tName, &h.tFormer, &h.tLabels, &h.tBody); err != nil {
			return nil, fmt.Errorf("catalog: search: read hit: %w", err)
		}
		h.Kind, h.Status = Kind(kind), Status(status)
		if c := s.examined[h.docID]; len(s.plan.tokens) > 0 {
			h.Score = float64(tierOther-c.tier) + max(c.rel, 0)
		}
		byID[h.docID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("catalog: search: %w", err)
	}
	out := make([]hit, 0, len(page))
	for _, id := range page {
		if h, ok := byID[id]; ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// facetChunkIDs bounds the doc IDs per facet count query.
const facetChunkIDs = 5000

// facets counts facet values over the examined docs that are not deleted, from one query over
// their IDs (per 5,000), and keeps the FacetValues most frequent values of each facet.
func (s *searcher) facets(ctx context.Context, into map[string][]FacetCount) error {
	if s.q.Status == StatusDeleted || len(s.examined) == 0 {
		return nil
	}
	ids := make([]int, 0, len(s.examined))
	for id := range s.examined {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	counts := map[[2]string]int{}
	for part := range slices.Chunk(ids, facetChunkIDs) {
		a := newSQLArgs(s.d)
		// SQLite sorts the rows to group them, which took a third of the query's time: it sends
		// them as they are and they are counted here. PostgreSQL groups them in a hash faster
		// than it sends them.
		q := "SELECT facet, value, 1 FROM search_facets WHERE doc_id IN (" + a.list(part) + ") AND facet IN ('kind', 'namespace', 'tag', 'owner')"
		if s.d == dialect.Postgres {
			q = strings.Replace(q, ", 1 FROM", ", count(*) FROM", 1)
		}
		if s.q.IncludeDeleted && s.q.Status == "" {
			q += " AND doc_id NOT IN (SELECT doc_id FROM search_facets WHERE facet = 'status' AND value = 'deleted')"
		}
		if s.d == dialect.Postgres {
			q += " GROUP BY facet, value"
		}
		rows, err := s.client.QueryContext(ctx, q, a.args...)
		if err != nil {
			return fmt.Errorf("catalog: search facets: %w", err)
		}
		var k [2]string
		var n int
		for rows.Next() {
			if err := rows.Scan(&k[0], &k[1], &n); err != nil {
				rows.Close()
				return fmt.Errorf("catalog: search facets: %w", err)
			}
			counts[k] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("catalog: search facets: %w", err)
		}
	}
	for k, n := range counts {
		into[k[0]] = append(into[k[0]], FacetCount{Value: k[1], Count: n})
	}
	for f, fc := range into {
		slices.SortFunc(fc, func(x, y FacetCount) int { return cmp.Or(cmp.Compare(y.Count, x.Count), cmp.Compare(x.Value, y.Value)) })
		into[f] = fc[:min(len(fc), FacetValues)]
	}
	return nil
}

// matcher tells whether document tokens match a query's tokens (the last one as a prefix).
type matcher []string

func (m matcher) token(t string) bool {
	for i, q := range m {
		if t == q || (i == len(m)-1 && strings.HasPrefix(t, q)) {
			return true
		}
	}
	return false
}

// any reports whether a token of text matches.
func (m matcher) any(text string) bool {
	return slices.ContainsFunc(searchTokens(text), m.token)
}

// covered counts the query tokens that some token of text matches.
func (m matcher) covered(text string) int {
	toks := searchTokens(text)
	n := 0
	for i, q := range m {
		if slices.ContainsFunc(toks, func(t string) bool { return t == q || (i == len(m)-1 && strings.HasPrefix(t, q)) }) {
			n++
		}
	}
	return n
}

// explain fills in what each hit matched: the fields, the former name, tags and owners. The
// fields come from the docs' token text; which former name, tag or owner it was takes one query
// each for the page's hits that need it.
func explain(ctx context.Context, client *ent.Client, plan searchPlan, hits []hit) error {
	if len(plan.tokens) == 0 {
		return nil
	}
	m := matcher(plan.tokens)
	var formerOf, bodyOf []uuid.UUID
	var labelDocs []int
	for i := range hits {
		h := &hits[i]
		if m.any(h.tFormer) {
			formerOf = append(formerOf, h.ID)
		}
		if m.any(h.tLabels) {
			labelDocs = append(labelDocs, h.docID)
		}
		if m.any(h.tBody) {
			bodyOf = append(bodyOf, h.ID)
		}
	}
	formers := map[uuid.UUID][]*ent.AssetName{}
	if len(formerOf) > 0 {
		rows, err := client.AssetName.Query().Where(assetname.AssetIDIn(formerOf...), assetname.ValidToNotNil()).
			Order(ent.Desc(assetname.FieldID)).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: former names: %w", err)
		}
		for _, r := range rows {
			formers[r.AssetID] = append(formers[r.AssetID], r)
		}
	}
	facets := map[int][]*ent.SearchFacet{}
	if len(labelDocs) > 0 {
		rows, err := client.SearchFacet.Query().Where(searchfacet.DocIDIn(labelDocs...), searchfacet.FacetIn(FacetTag, FacetOwner)).
			Order(ent.Asc(searchfacet.FieldValue)).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: labels: %w", err)
		}
		for _, r := range rows {
			facets[r.DocID] = append(facets[r.DocID], r)
		}
	}
	descriptions := map[uuid.UUID]string{}
	if len(bodyOf) > 0 {
		rows, err := client.Asset.Query().Where(asset.IDIn(bodyOf...)).Select(asset.FieldDescription).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: search: descriptions: %w", err)
		}
		for _, r := range rows {
			descriptions[r.ID] = r.Description
		}
	}
	for i := range hits {
		h := &hits[i]
		h.MatchedIn = []string{}
		if m.any(h.tName) {
			h.MatchedIn = append(h.MatchedIn, MatchedName)
		}
		if m.any(h.tFormer) {
			best := 0
			for _, n := range formers[h.ID] { // newest first: the newest wins a tie
				if n.Namespace == h.Namespace && n.Name == h.Name {
					continue // the current name, held before too (a restore)
				}
				if k := m.covered(n.Namespace + " " + n.Name); k > best {
					best = k
					name := toName(n)
					h.MatchedFormer = &name
				}
			}
			h.MatchedIn = append(h.MatchedIn, MatchedFormerName)
		}
		if m.any(h.tLabels) {
			explained := map[string]bool{}
			for _, f := range facets[h.docID] {
				if !m.any(f.Value) {
					continue
				}
				for _, t := range searchTokens(f.Value) {
					explained[t] = true
				}
				if f.Facet == FacetTag {
					h.MatchedTags = append(h.MatchedTags, f.Value)
				} else {
					h.MatchedOwners = append(h.MatchedOwners, f.Value)
				}
			}
			if len(h.MatchedTags) > 0 {
				h.MatchedIn = append(h.MatchedIn, MatchedTag)
			}
			// A matching label token no tag or owner holds is a glossary term's.
			if slices.ContainsFunc(searchTokens(h.tLabels), func(t string) bool { return m.token(t) && !explained[t] }) {
				h.MatchedIn = append(h.MatchedIn, MatchedTerm)
			}
			if len(h.MatchedOwners) > 0 {
				h.MatchedIn = append(h.MatchedIn, MatchedOwner)
			}
		}
		if m.any(h.tBody) {
			desc := map[string]bool{}
			for _, t := range searchTokens(descriptions[h.ID]) {
				desc[t] = true
			}
			if m.any(descriptions[h.ID]) {
				h.MatchedIn = append(h.MatchedIn, MatchedDescription)
			}
			if slices.ContainsFunc(searchTokens(h.tBody), func(t string) bool { return m.token(t) && !desc[t] }) {
				h.MatchedIn = append(h.MatchedIn, MatchedColumn)
			}
		}
	}
	return nil
}

// GetMany returns the assets with ids that exist, in the order of ids (a search page's assets
// in full, with three queries instead of three per asset).
func (c *Catalog) GetMany(ctx context.Context, ids []uuid.UUID) ([]Asset, error) {
	if len(ids) == 0 {
		return []Asset{}, nil
	}
	client := c.client(ctx)
	rows, err := client.Asset.Query().Where(asset.IDIn(ids...)).
		WithExternalIds(func(q *ent.ExternalIDQuery) { q.Order(ent.Asc(externalid.FieldID)) }).
		WithOwners(func(q *ent.OwnerQuery) { q.Where(owner.RemovedAtIsNil()).Order(ent.Asc(owner.FieldPrincipal)) }).
		All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: load assets: %w", err)
	}
	latest, err := latestNames(ctx, client, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*ent.Asset, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Asset, 0, len(rows))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, toAsset(r, latest[id]))
		}
	}
	return out, nil
}

// AuditLog returns the whole audit trail, newest first, before the event ID before (zero for
// the newest).
func (c *Catalog) AuditLog(ctx context.Context, before uuid.UUID, limit int) ([]AuditEvent, error) {
	return c.AuditEvents(ctx, AuditFilter{Before: before, Limit: limit})
}
