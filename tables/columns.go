package tables

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// columnsOf flattens an Iceberg schema into the catalog's columns, in schema order (a parent
// before its members), each with its field ID, so a renamed column keeps its record. Paths are
// the names Iceberg itself gives fields (Schema.FindColumnName): struct members are dotted
// (address.city), and list elements and map keys and values are columns too, named
// path.element, path.key and path.value (points.element.x for a struct in a list), so a tag or a
// description can go on a struct inside a list. A nested column's type is its kind (struct,
// list, map): its members are columns of their own, and the full type text would make every
// change of a member look like a retype of its parent.
func columnsOf(sc *iceberg.Schema) []catalog.ColumnInput {
	var out []catalog.ColumnInput
	var walk func(prefix string, fields []iceberg.NestedField)
	walk = func(prefix string, fields []iceberg.NestedField) {
		for _, f := range fields {
			id, path := f.ID, prefix+f.Name
			col := catalog.ColumnInput{FieldID: &id, Path: path, Doc: catalog.Shorten(f.Doc, catalog.MaxDescription)}
			if f.Type != nil {
				col.Type = f.Type.String()
			}
			nested, ok := f.Type.(iceberg.NestedType)
			if ok {
				col.Type = nested.Type()
			}
			out = append(out, col)
			if ok {
				walk(path+".", nested.Fields())
			}
		}
	}
	walk("", sc.Fields())
	return out
}

// SyncColumns records the table's current schema as its asset's columns (source iceberg, with
// field IDs and the schema ID) unless prev, the schema ID recorded last, is already the current
// one: a refresh without a schema change costs nothing here. It returns the schema ID now
// recorded. A schema the catalog refuses (more columns than it keeps) or an asset that cannot
// change (deleted) is logged and left for the next refresh; the table is registered all the same.
func (s *Service) SyncColumns(ctx context.Context, id uuid.UUID, meta table.Metadata, prev *int) (*int, error) {
	sc := meta.CurrentSchema()
	if sc == nil || (prev != nil && *prev == sc.ID) {
		return prev, nil
	}
	schemaID := sc.ID
	_, err := s.cat.SyncColumns(ctx, id, catalog.SchemaInput{Source: catalog.SourceIceberg, SchemaID: &schemaID, Columns: columnsOf(sc)})
	if errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrConflict) {
		s.log.Warn("table columns not recorded", "asset_id", id, "schema_id", schemaID, "err", err)
		return prev, nil
	}
	if err != nil {
		return prev, err
	}
	return &schemaID, nil
}
