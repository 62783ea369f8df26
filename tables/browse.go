package tables

import (
	"context"
	"fmt"
	"strings"

	"entgo.io/ent/dialect/sql"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/icebergtable"
)

// BrowseFilter selects a page of tables for a person browsing them.
type BrowseFilter struct {
	// Contains keeps the tables whose current asset name or namespace, or catalog identifier,
	// holds it (any case).
	Contains      string
	Offset, Limit int
}

// Browse returns a page of tables in asset-ID order (the order they became known) and how many
// match in all.
func (s *Service) Browse(ctx context.Context, f BrowseFilter) ([]Table, int, error) {
	q := s.db.IcebergTable.Query()
	if c := strings.TrimSpace(f.Contains); c != "" {
		q.Where(icebergtable.Or(icebergtable.IdentifierContainsFold(c), func(sel *sql.Selector) {
			n := sql.Table(assetname.Table)
			named := sql.Dialect(sel.Dialect()).Select(n.C(assetname.FieldAssetID)).From(n).Where(sql.And(sql.IsNull(n.C(assetname.FieldValidTo)),
				sql.Or(sql.ContainsFold(n.C(assetname.FieldName), c), sql.ContainsFold(n.C(assetname.FieldNamespace), c))))
			sel.Where(sql.In(sel.C(icebergtable.FieldID), named))
		}))
	}
	total, err := q.Clone().Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("tables: count tables: %w", err)
	}
	rows, err := q.Select(rowFields...).Order(ent.Asc(icebergtable.FieldID)).Offset(f.Offset).Limit(f.Limit).All(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("tables: list tables: %w", err)
	}
	out := make([]Table, len(rows))
	for i, r := range rows {
		out[i] = toTable(r)
	}
	return out, total, nil
}
