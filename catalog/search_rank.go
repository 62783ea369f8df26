package catalog

// The searcher: it finds a search's matches and orders them (by band, then full-text rank), or
// lists the filters' assets by name, and reads the page's docs.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"entgo.io/ent/dialect"

	"github.com/tidemark/tidemark/ent"
)

// Column weights of the rank, in the fields' order of importance: current name, labels (tags,
// terms, owners), former names, body (description, columns).
const (
	bm25Weights    = "10.0, 5.0, 3.0, 1.0"    // FTS5: t_name, t_labels, t_former, t_body
	tsRankWeights  = "'{0.1, 0.3, 0.5, 1.0}'" // PostgreSQL: D, C, B, A
	tsRankNormBand = "32"                     // rank/(rank+1): a rank within [0, 1)
)

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
