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
	return c.mutateNoted(ctx, id, expected, ActionColumnDescribe, false, func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
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
// structural change is kept as a SchemaChange. It reports whether anything changed.
func (c *Catalog) SyncColumns(ctx context.Context, id uuid.UUID, in SchemaInput) (bool, error) {
	if err := validateSchema(in); err != nil {
		return false, err
	}
	var changed bool
	_, err := c.mutateNoted(ctx, id, AnyVersion, ActionSchemaChange, false, func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		var err error
		changed, err = c.syncColumns(ctx, tx, id, in, now, note)
		return changed, err
	})
	return changed, err
}

func (c *Catalog) syncColumns(ctx context.Context, tx *ent.Tx, id uuid.UUID, in SchemaInput, now time.Time, note *auditNote) (bool, error) {
	cur, err := tx.Column.Query().Where(column.AssetID(id), column.RemovedAtIsNil()).All(ctx)
	if err != nil {
		return false, fmt.Errorf("catalog: read columns: %w", err)
	}
	byID := map[int]*ent.Column{}
	byPath := map[string]*ent.Column{}
	for _, col := range cur {
		if col.FieldID != nil {
			byID[*col.FieldID] = col
		}
		byPath[col.Path] = col
	}
	iceberg := in.Source == SourceIceberg
	matched := map[uuid.UUID]bool{}
	var changes []ColumnChange
	type update struct {
		row   *ent.Column
		in    ColumnInput
		ord   int
		newID *int
	}
	var updates []update
	var adds []update
	touched := 0 // columns whose doc, order or field ID changed
	for i, col := range in.Columns {
		var row *ent.Column
		if col.FieldID != nil {
			row = byID[*col.FieldID]
		}
		if row == nil {
			// By path: an Iceberg field meets a column an OpenLineage schema recorded (no field
			// ID yet), or two sources without IDs agree on the name.
			if r := byPath[col.Path]; r != nil && !matched[r.ID] && (r.FieldID == nil || col.FieldID == nil) {
				row = r
			}
		}
		if row == nil {
			adds = append(adds, update{in: col, ord: i})
			continue
		}
		matched[row.ID] = true
		updates = append(updates, update{row: row, in: col, ord: i, newID: col.FieldID})
	}
	// Close what the schema no longer has (first, so a new column may take a closed one's path).
	for _, col := range cur {
		if matched[col.ID] || (!iceberg && col.FieldID != nil) {
			continue
		}
		if err := tx.Column.UpdateOne(col).SetRemovedAt(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: drop column: %w", err)
		}
		changes = append(changes, ColumnChange{Op: "removed", ColumnID: col.ID, FieldID: col.FieldID, Path: col.Path, Type: col.Type})
		delete(byPath, col.Path)
	}
	// Renames move paths around (a and b may swap): park renamed columns on a path no column
	// can have first, so the unique current-path index never sees two at once. (A leading space:
	// validateSchema refuses it in a real path; a NUL byte, which PostgreSQL refuses in text,
	// would fail every rename there.)
	for _, u := range updates {
		if u.row.Path != u.in.Path && (iceberg || u.row.FieldID == nil) {
			if err := tx.Column.UpdateOne(u.row).SetPath(" " + u.row.ID.String()).Exec(ctx); err != nil {
				return false, fmt.Errorf("catalog: rename column: %w", err)
			}
		}
	}
	for _, u := range updates {
		q := tx.Column.UpdateOne(u.row).SetOrdinal(u.ord)
		dirty := u.row.Ordinal != u.ord
		if u.row.Path != u.in.Path && (iceberg || u.row.FieldID == nil) {
			q.SetPath(u.in.Path)
			dirty = true
			changes = append(changes, ColumnChange{Op: "renamed", ColumnID: u.row.ID, FieldID: firstInt(u.newID, u.row.FieldID), Path: u.in.Path, OldPath: u.row.Path})
		}
		if u.in.Type != "" && u.in.Type != u.row.Type {
			q.SetType(u.in.Type)
			dirty = true
			if u.row.Type != "" {
				changes = append(changes, ColumnChange{Op: "retyped", ColumnID: u.row.ID, FieldID: firstInt(u.newID, u.row.FieldID), Path: u.in.Path, Type: u.in.Type, OldType: u.row.Type})
			}
		}
		if u.in.Doc != u.row.SourceDoc && (u.in.Doc != "" || iceberg || u.row.FieldID == nil) {
			q.SetSourceDoc(u.in.Doc)
			dirty = true
		}
		if u.newID != nil && u.row.FieldID == nil {
			q.SetFieldID(*u.newID)
			dirty = true
		}
		if dirty {
			touched++
			if err := q.Exec(ctx); err != nil {
				return false, fmt.Errorf("catalog: update column: %w", err)
			}
		}
	}
	for _, a := range adds {
		row, err := tx.Column.Create().SetAssetID(id).SetNillableFieldID(a.in.FieldID).SetPath(a.in.Path).SetType(a.in.Type).
			SetOrdinal(a.ord).SetSourceDoc(a.in.Doc).SetAddedAt(now).Save(ctx)
		if err != nil {
			return false, fmt.Errorf("catalog: add column %s: %w", a.in.Path, err)
		}
		changes = append(changes, ColumnChange{Op: "added", ColumnID: row.ID, FieldID: a.in.FieldID, Path: a.in.Path, Type: a.in.Type})
	}
	if len(changes) > 0 {
		b, err := json.Marshal(changes)
		if err != nil {
			return false, fmt.Errorf("catalog: schema change: %w", err)
		}
		if err := tx.SchemaChange.Create().SetAssetID(id).SetAt(now).SetSource(string(in.Source)).
			SetNillableSchemaID(in.SchemaID).SetChanges(string(b)).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: record schema change: %w", err)
		}
		note.after = map[string]any{"source": in.Source, "schema_id": in.SchemaID, "changes": changes}
		return true, nil
	}
	if touched == 0 {
		return false, nil
	}
	// Docs or order only: not a schema change for the history, but the asset changed (search
	// indexes column docs).
	note.after = map[string]any{"source": in.Source, "columns_updated": touched}
	return true, nil
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
