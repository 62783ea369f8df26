package catalog

// What a search sends the database: the full-text queries made of its words, bound parameters,
// and the conditions and match statements the searcher builds of them.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/tidemark/tidemark/ent"
)

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
