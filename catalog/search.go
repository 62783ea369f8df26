package catalog

import (
	"context"
	"fmt"
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
	"github.com/tidemark/tidemark/ent/auditevent"
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
}

// SearchResult is one page of a search.
type SearchResult struct {
	Total int // every matching asset, not only this page
	Hits  []SearchHit
	// Facets counts the matching, non-deleted assets per value of each facet (kind, namespace,
	// tag, owner): the FacetValues most frequent values, most frequent first.
	Facets map[string][]FacetCount
}

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
	// Score orders the hits, highest first: 2 to 3 for an exact match of the current name, 1 to
	// 2 when the current name holds every word, 0 to 1 otherwise (the full-text rank decides
	// within each band); 0 when the search has no words.
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

// fts5 is the SQLite FTS5 query: every token (implicit AND), the last as a prefix; with column
// set, only in that column.
func (p searchPlan) fts5(column string) string {
	var b strings.Builder
	for i, t := range p.tokens {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
		if i == len(p.tokens)-1 {
			b.WriteByte('*')
		}
	}
	if column != "" {
		return column + " : (" + b.String() + ")"
	}
	return b.String()
}

// tsquery is the PostgreSQL tsquery text: every token ANDed, the last as a prefix; weight (a
// tsvector weight letter, e.g. "A") restricts the match to lexemes of that weight.
func (p searchPlan) tsquery(weight string) string {
	var b strings.Builder
	for i, t := range p.tokens {
		if i > 0 {
			b.WriteString(" & ")
		}
		b.WriteString(`'` + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(t) + `'`)
		prefix := i == len(p.tokens)-1
		if prefix || weight != "" {
			b.WriteByte(':')
		}
		if prefix {
			b.WriteByte('*')
		}
		b.WriteString(weight)
	}
	return b.String()
}

// Column weights of the rank, in the fields' order of importance: current name, labels (tags,
// terms, owners), former names, body (description, columns).
const (
	bm25Weights    = "10.0, 5.0, 3.0, 1.0"    // FTS5: t_name, t_labels, t_former, t_body
	tsRankWeights  = "'{0.1, 0.3, 0.5, 1.0}'" // PostgreSQL: D, C, B, A
	tsRankNormBand = 32                       // rank/(rank+1): a rank within [0, 1)
	searchTextCols = "d.t_name, d.t_former, d.t_labels, d.t_body"
)

// SearchAssets finds assets by words in their current and former names, tags, glossary terms,
// owners, description and columns, ranked: an exact match of the current name first, then
// assets whose current name holds every word, then by full-text rank (weighted by field).
// Deleted assets are left out unless asked for.
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
	hits, total, err := searchHits(ctx, client, d, plan, q)
	if err != nil {
		return SearchResult{}, err
	}
	if len(hits) == 0 && q.Offset > 0 {
		// Past the end: the total still says how many there are.
		first := q
		first.Offset, first.Limit = 0, 1
		if _, total, err = searchHits(ctx, client, d, plan, first); err != nil {
			return SearchResult{}, err
		}
	}
	res := SearchResult{Total: total, Hits: make([]SearchHit, 0, len(hits)), Facets: map[string][]FacetCount{}}
	for _, f := range Facets {
		res.Facets[f] = []FacetCount{}
	}
	if total > 0 {
		if err := searchFacets(ctx, client, d, plan, q, res.Facets); err != nil {
			return SearchResult{}, err
		}
	}
	if err := explain(ctx, client, plan, hits); err != nil {
		return SearchResult{}, err
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

// searchFilters is the WHERE condition on search_docs d: the status, and each facet filter.
// With a full-text match driving the query, filters check each matched doc (the doc's own
// columns, or its facets through their (doc_id, facet, value) index); without one, the facet
// index drives instead.
func searchFilters(a *sqlArgs, q SearchQuery, textDriven, forFacets bool) string {
	var w []string
	switch {
	case q.Status != "":
		w = append(w, "d.status = "+a.add(string(q.Status)))
	case !q.IncludeDeleted || forFacets:
		w = append(w, "d.status <> 'deleted'")
	}
	if forFacets && q.Status == StatusDeleted {
		w = append(w, "1 = 0") // facets count assets that are not deleted
	}
	for _, f := range []struct{ facet, col, v string }{
		{FacetKind, "d.kind", q.Kind}, {FacetNamespace, "d.namespace", q.Namespace},
		{FacetTag, "", q.Tag}, {FacetOwner, "", q.Owner},
	} {
		switch {
		case f.v == "":
		case textDriven && f.col != "":
			w = append(w, f.col+" = "+a.add(f.v))
		case textDriven:
			w = append(w, "EXISTS (SELECT 1 FROM search_facets f WHERE f.doc_id = d.id AND f.facet = '"+f.facet+"' AND f.value = "+a.add(f.v)+")")
		default:
			w = append(w, "d.id IN (SELECT doc_id FROM search_facets WHERE facet = '"+f.facet+"' AND value = "+a.add(f.v)+")")
		}
	}
	if len(w) == 0 {
		return "1 = 1"
	}
	return strings.Join(w, " AND ")
}

// hit is a SearchHit with the doc's text fields, to explain what matched.
type hit struct {
	SearchHit
	docID                          int
	tName, tFormer, tLabels, tBody string
}

// searchHits returns one page of hits, ranked, and the total number of matches.
func searchHits(ctx context.Context, client *ent.Client, d string, plan searchPlan, q SearchQuery) ([]hit, int, error) {
	a := newSQLArgs(d)
	var page, order string
	const cols = "p.id, d.asset_id, d.kind, d.status, d.namespace, d.name, "
	switch {
	case len(plan.tokens) == 0:
		page = "SELECT d.id, 2 AS tier, 0.0 AS r, count(*) OVER () AS total FROM search_docs d WHERE " + searchFilters(a, q, false, false) +
			" ORDER BY d.name, d.namespace, d.id"
		order = "d.name, d.namespace, d.id"
	case d == dialect.Postgres:
		page = "SELECT d.id, CASE WHEN d.name_key = " + a.add(plan.key) + " OR d.t_name = " + a.add(plan.key) + " THEN 0" +
			" WHEN d.tsv @@ to_tsquery('simple', " + a.add(plan.tsquery("A")) + ") THEN 1 ELSE 2 END AS tier," +
			" ts_rank(" + tsRankWeights + ", d.tsv, to_tsquery('simple', " + a.add(plan.tsquery("")) + "), " + strconv.Itoa(tsRankNormBand) + ") AS r," +
			" count(*) OVER () AS total" +
			" FROM search_docs d WHERE d.tsv @@ to_tsquery('simple', " + a.add(plan.tsquery("")) + ") AND " + searchFilters(a, q, true, false) +
			" ORDER BY tier, r DESC, d.name, d.id"
		order = "p.tier, p.r DESC, d.name, d.id"
	default:
		page = "WITH m AS (SELECT rowid AS id, bm25(search_fts, " + bm25Weights + ") AS r FROM search_fts WHERE search_fts MATCH " + a.add(plan.fts5("")) + ")," +
			" n AS (SELECT rowid AS id FROM search_fts WHERE search_fts MATCH " + a.add(plan.fts5("t_name")) + ")" +
			" SELECT d.id, CASE WHEN d.name_key = " + a.add(plan.key) + " OR d.t_name = " + a.add(plan.key) + " THEN 0" +
			" WHEN d.id IN (SELECT id FROM n) THEN 1 ELSE 2 END AS tier, m.r AS r, count(*) OVER () AS total" +
			" FROM m JOIN search_docs d ON d.id = m.id WHERE " + searchFilters(a, q, true, false) +
			" ORDER BY tier, r, d.name, d.id"
		order = "p.tier, p.r, d.name, d.id"
	}
	text := "'', '', '', ''"
	if len(plan.tokens) > 0 {
		text = searchTextCols
	}
	query := "SELECT " + cols + text + ", p.tier, p.r, p.total FROM (" + page + " LIMIT " + a.add(q.Limit) + " OFFSET " + a.add(q.Offset) +
		") p JOIN search_docs d ON d.id = p.id ORDER BY " + order
	rows, err := client.QueryContext(ctx, query, a.args...)
	if err != nil {
		return nil, 0, fmt.Errorf("catalog: search: %w", err)
	}
	defer rows.Close()
	var out []hit
	total := 0
	for rows.Next() {
		var h hit
		var kind, status string
		var tier int
		var r float64
		if err := rows.Scan(&h.docID, &h.ID, &kind, &status, &h.Namespace, &h.Name, &h.tName, &h.tFormer, &h.tLabels, &h.tBody,
			&tier, &r, &total); err != nil {
			return nil, 0, fmt.Errorf("catalog: search: read hit: %w", err)
		}
		h.Kind, h.Status = Kind(kind), Status(status)
		if len(plan.tokens) > 0 {
			if d != dialect.Postgres {
				r = -r / (1 - r) // bm25 is negative, lower is better: into [0, 1), higher better
			}
			h.Score = float64(2-tier) + max(r, 0)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("catalog: search: %w", err)
	}
	return out, total, nil
}

// searchFacets counts facet values over every matching, non-deleted doc in one grouped query
// over the matched doc IDs, keeping the FacetValues most frequent values of each facet.
func searchFacets(ctx context.Context, client *ent.Client, d string, plan searchPlan, q SearchQuery, into map[string][]FacetCount) error {
	a := newSQLArgs(d)
	var matched string
	switch {
	case len(plan.tokens) == 0:
		matched = "SELECT d.id FROM search_docs d WHERE " + searchFilters(a, q, false, true)
	case d == dialect.Postgres:
		matched = "SELECT d.id FROM search_docs d WHERE d.tsv @@ to_tsquery('simple', " + a.add(plan.tsquery("")) + ") AND " + searchFilters(a, q, true, true)
	default:
		matched = "SELECT d.id FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid WHERE search_fts MATCH " + a.add(plan.fts5("")) +
			" AND " + searchFilters(a, q, true, true)
	}
	query := "SELECT facet, value, n FROM (SELECT f.facet, f.value, count(*) AS n," +
		" row_number() OVER (PARTITION BY f.facet ORDER BY count(*) DESC, f.value) AS rn" +
		" FROM (" + matched + ") m JOIN search_facets f ON f.doc_id = m.id GROUP BY f.facet, f.value) x" +
		" WHERE rn <= " + strconv.Itoa(FacetValues) + " ORDER BY facet, n DESC, value"
	rows, err := client.QueryContext(ctx, query, a.args...)
	if err != nil {
		return fmt.Errorf("catalog: search facets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f string
		var fc FacetCount
		if err := rows.Scan(&f, &fc.Value, &fc.Count); err != nil {
			return fmt.Errorf("catalog: search facets: %w", err)
		}
		into[f] = append(into[f], fc)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: search facets: %w", err)
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
	q := c.client(ctx).AuditEvent.Query().Order(ent.Desc(auditevent.FieldID)).Limit(limit)
	if before != uuid.Nil {
		q = q.Where(auditevent.IDLT(before))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: audit log: %w", err)
	}
	out := make([]AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = AuditEvent{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, AssetID: r.AssetID,
			Before: r.Before, After: r.After, RequestID: r.RequestID}
	}
	return out, nil
}
