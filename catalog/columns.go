package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/ent/schemachange"
)

// Limits on columns as sources report them.
const (
	MaxColumns       = 10000
	MaxColumnPath    = 1024
	MaxColumnTypeLen = 1024
)

// Column is one column of an asset: a record of its own, so its description and labels follow it
// through renames (of the column, matched by Iceberg field ID, and of the asset).
type Column struct {
	ID          uuid.UUID  `json:"id"`
	FieldID     *int       `json:"field_id,omitempty"`
	Path        string     `json:"path"`
	Type        string     `json:"type"`
	Ordinal     int        `json:"ordinal"`
	SourceDoc   string     `json:"source_doc,omitempty"`
	Description string     `json:"description,omitempty"`
	AddedAt     time.Time  `json:"added_at"`
	RemovedAt   *time.Time `json:"removed_at,omitempty"`
}

// ColumnInput is one column as a source reports it.
type ColumnInput struct {
	FieldID *int // Iceberg's field ID; nil when the source has none
	Path    string
	Type    string
	Doc     string
}

// SchemaInput is an asset's whole schema as a source reports it now.
type SchemaInput struct {
	Source   LabelSource // openlineage or iceberg
	SchemaID *int        // Iceberg's schema ID
	Columns  []ColumnInput
}

// ColumnChange is one entry of a schema change.
type ColumnChange struct {
	Op       string    `json:"op"` // added, removed, renamed, retyped
	ColumnID uuid.UUID `json:"column_id"`
	FieldID  *int      `json:"field_id,omitempty"`
	Path     string    `json:"path"`
	OldPath  string    `json:"old_path,omitempty"`
	Type     string    `json:"type,omitempty"`
	OldType  string    `json:"old_type,omitempty"`
}

// SchemaChange is one observed change of an asset's columns.
type SchemaChange struct {
	ID       uuid.UUID      `json:"id"`
	At       time.Time      `json:"at"`
	Source   string         `json:"source"`
	SchemaID *int           `json:"schema_id,omitempty"`
	Changes  []ColumnChange `json:"changes"`
}

func toColumn(r *ent.Column) Column {
	return Column{ID: r.ID, FieldID: r.FieldID, Path: r.Path, Type: r.Type, Ordinal: r.Ordinal, SourceDoc: r.SourceDoc,
		Description: r.Description, AddedAt: r.AddedAt.UTC(), RemovedAt: utcPtr(r.RemovedAt)}
}

// Columns returns an asset's current columns in the source's order; with history, dropped ones
// too (after the current ones).
func (c *Catalog) Columns(ctx context.Context, id uuid.UUID, history bool) ([]Column, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	q := c.client(ctx).Column.Query().Where(column.AssetID(id))
	if !history {
		q.Where(column.RemovedAtIsNil())
	}
	rows, err := q.Order(ent.Asc(column.FieldRemovedAt), ent.Asc(column.FieldOrdinal), ent.Asc(column.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: columns of %s: %w", id, err)
	}
	out := make([]Column, 0, len(rows))
	for _, r := range rows { // NULLs sort differently per database: current columns first here
		if r.RemovedAt == nil {
			out = append(out, toColumn(r))
		}
	}
	for _, r := range rows {
		if r.RemovedAt != nil {
			out = append(out, toColumn(r))
		}
	}
	return out, nil
}

func currentColumn(ctx context.Context, client *ent.Client, assetID, columnID uuid.UUID) (*ent.Column, error) {
	col, err := client.Column.Query().Where(column.ID(columnID), column.AssetID(assetID)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, notFound("asset %s has no column %s", assetID, columnID)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: read column: %w", err)
	}
	if col.RemovedAt != nil {
		return nil, conflict("column %s (%s) was dropped from asset %s at %s", columnID, col.Path, assetID, col.RemovedAt.UTC().Format(time.RFC3339))
	}
	return col, nil
}

// SetColumnDescription sets a person's description (Markdown) of one of the asset's current
// columns, against the asset version the person saw.
func (c *Catalog) SetColumnDescription(ctx context.Context, id uuid.UUID, expected int64, columnID uuid.UUID, text string) (Asset, error) {
	if err := validateDescription(text); err != nil {
		return Asset{}, err
	}
	return c.mutateNoted(ctx, id, expected, ActionColumnDescribe, false, columnFields(id, columnID, field{What: "column-description"}), func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		col, err := currentColumn(ctx, tx.Client(), id, columnID)
		if err != nil {
			return false, err
		}
		if col.Description == text {
			return false, nil
		}
		if err := tx.Column.UpdateOne(col).SetDescription(text).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: describe column: %w", err)
		}
		note.before = map[string]string{"column": col.Path, "description": col.Description}
		note.after = map[string]string{"column": col.Path, "description": text}
		return true, nil
	})
}

func validateSchema(in SchemaInput) error {
	if in.Source != SourceOpenLineage && in.Source != SourceIceberg {
		return invalid("source", "schema source %q is not openlineage or iceberg", in.Source)
	}
	if len(in.Columns) > MaxColumns {
		return invalid("fields", "the schema has %d columns; the limit is %d", len(in.Columns), MaxColumns)
	}
	seenPath := map[string]bool{}
	seenID := map[int]bool{}
	for _, col := range in.Columns {
		if err := validateText("field name", col.Path, MaxColumnPath); err != nil {
			return err
		}
		if len(col.Type) > MaxColumnTypeLen {
			return invalid("type", "column %s has a type of %d bytes; the limit is %d", col.Path, len(col.Type), MaxColumnTypeLen)
		}
		if len(col.Doc) > MaxDescription {
			return invalid("description", "column %s has a description of %d bytes; the limit is %d", col.Path, len(col.Doc), MaxDescription)
		}
		if seenPath[col.Path] {
			return invalid("fields", "column %s appears twice", col.Path)
		}
		seenPath[col.Path] = true
		if col.FieldID != nil {
			if seenID[*col.FieldID] {
				return invalid("fields", "field ID %d appears twice", *col.FieldID)
			}
			seenID[*col.FieldID] = true
		}
	}
	return nil
}

// SyncColumns records the asset's schema as a source reports it now: columns are matched by
// field ID where the input has one, by path otherwise; matched columns take the new path, type
// and source doc (a changed path with the same field ID is a rename: the record, its description
// and labels stay); unmatched inputs are added; current columns the schema no longer has are
// closed. Columns with a field ID belong to the Iceberg schema: an OpenLineage schema (no field
// IDs) may update their docs but never renames or drops them, so two sources cannot flap. Any
// structural change is kept as a SchemaChange. It reports whether anything changed. (It is
// RecordSources for one asset; see planColumns.)
func (c *Catalog) SyncColumns(ctx context.Context, id uuid.UUID, in SchemaInput) (bool, error) {
	out, err := c.RecordSources(ctx, in.Source, []SourceReport{{AssetID: id, Schema: &in}})
	if err != nil {
		return false, err
	}
	return out[0].ColumnsChanged, out[0].Err
}

func firstInt(a, b *int) *int {
	if a != nil {
		return a
	}
	return b
}

// SchemaHistory returns the asset's schema changes, newest first, at most limit.
func (c *Catalog) SchemaHistory(ctx context.Context, id uuid.UUID, limit int) ([]SchemaChange, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	rows, err := c.client(ctx).SchemaChange.Query().Where(schemachange.AssetID(id)).
		Order(ent.Desc(schemachange.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: schema history of %s: %w", id, err)
	}
	out := make([]SchemaChange, len(rows))
	for i, r := range rows {
		out[i] = SchemaChange{ID: r.ID, At: r.At.UTC(), Source: r.Source, SchemaID: r.SchemaID}
		if err := json.Unmarshal([]byte(r.Changes), &out[i].Changes); err != nil {
			return nil, fmt.Errorf("catalog: schema change %s: %w", r.ID, err)
		}
	}
	return out, nil
}
