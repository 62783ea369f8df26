package catalog

import (
	"context"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
)

// Reindex rebuilds the search docs of ids in a transaction of its own, for tests that write
// curation rows (labels, columns, glossary terms) directly.
func (c *Catalog) Reindex(ctx context.Context, ids ...uuid.UUID) error {
	return c.tx(ctx, func(tx *ent.Tx) error { return c.reindex(ctx, tx.Client(), ids...) })
}

// SearchTokens exposes the tokenizer to the fuzz test.
func SearchTokens(s string) []string { return searchTokens(s) }

// SearchQueries returns the full-text queries a search text becomes: FTS5, and PostgreSQL's
// tsquery text.
func SearchQueries(text string) (fts5, tsquery string) {
	p := newSearchPlan(text)
	return p.fts5(""), p.tsquery()
}
