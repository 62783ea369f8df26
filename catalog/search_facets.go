package catalog

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"entgo.io/ent/dialect"
)

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
