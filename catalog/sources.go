package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/classification"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/internal/chunk"
)

// SourceReport is what a source system reports about one asset now: its schema, its tags, or
// both.
type SourceReport struct {
	AssetID uuid.UUID
	Schema  *SchemaInput // nil: the asset's columns stay as they are
	// With SyncTags, Tags are exactly the source's tags on the asset and its columns (none when
	// empty); without, the source's tags stay as they are.
	Tags     []SourceTag
	SyncTags bool
}

// SourceOutcome is what recording one report did.
type SourceOutcome struct {
	// ColumnsChanged: a column was added, dropped, renamed or retyped, or took another doc or
	// place.
	ColumnsChanged bool
	TagsChanged    bool
	// Skipped are the tags not recorded: not valid, not a value of their classification, or on a
	// column the asset does not have (after the report's schema).
	Skipped []SourceTag
	// Err says why the report was refused (ErrInvalid: its schema; ErrNotFound; ErrConflict: the
	// asset is deleted). Its asset stays as it was; the other reports are recorded all the same.
	Err error
}

// RecordSources records what one source reports about many assets, as SyncColumns and then
// SyncSourceTags would for each (the schema first, so tags find the columns it adds or
// renames), in a fixed number of statements for the whole set instead of a few dozen per asset:
// lineage ingest records a batch's schemas and tags with it. source is the schemas' source (a
// SchemaInput's own Source may be left empty) and the tags'. The assets are locked first, as any
// change locks its asset; each changed asset gets one new version and an audit event per kind
// of change (schema.change, label.add); an unchanged one keeps its version and leaves no trace.
// A database error fails the whole call.
func (c *Catalog) RecordSources(ctx context.Context, source LabelSource, reports []SourceReport) ([]SourceOutcome, error) {
	out := make([]SourceOutcome, len(reports))
	reports = slices.Clone(reports) // schemas are given their source below
	ids := checkReports(source, reports, out)
	if len(ids) == 0 {
		return out, nil
	}
	ids = uniqueIDs(ids) // one lock order for every caller
	var changed []uuid.UUID
	err := c.tx(ctx, func(tx *ent.Tx) error {
		changed = changed[:0]
		now := c.Now()
		live, err := lockAssets(ctx, tx, ids)
		if err != nil {
			return err
		}
		liveIDs, tagIDs, families := sortReports(reports, out, live)
		cols := map[uuid.UUID][]*ent.Column{}
		if err := chunk.Each(liveIDs, func(part []uuid.UUID) error {
			rows, err := tx.Column.Query().Where(column.AssetIDIn(part...), column.RemovedAtIsNil()).All(ctx)
			for _, r := range rows {
				cols[r.AssetID] = append(cols[r.AssetID], r)
			}
			return err
		}); err != nil {
			return fmt.Errorf("catalog: read columns: %w", err)
		}
		labels := map[uuid.UUID][]*ent.Label{}
		if err := chunk.Each(tagIDs, func(part []uuid.UUID) error {
			rows, err := tx.Label.Query().Where(label.AssetIDIn(part...), label.KindEQ(label.KindTag), label.RemovedAtIsNil()).
				Order(ent.Asc(label.FieldID)).All(ctx)
			for _, r := range rows {
				labels[r.AssetID] = append(labels[r.AssetID], r)
			}
			return err
		}); err != nil {
			return fmt.Errorf("catalog: read labels: %w", err)
		}
		var classes map[string][]string
		if len(tagIDs) > 0 {
			if classes, err = classificationValues(ctx, tx.Client(), families); err != nil {
				return err
			}
		}

		var w sourceWrites
		var audits []pendingAudit
		for i, r := range reports {
			if out[i].Err != nil {
				continue
			}
			paths := currentPaths(cols[r.AssetID])
			if r.Schema != nil {
				p := planColumns(r.AssetID, cols[r.AssetID], *r.Schema)
				w.columns = append(w.columns, p)
				paths = p.after
				if note := p.note(); note != nil {
					out[i].ColumnsChanged = true
					audits = append(audits, pendingAudit{r.AssetID, ActionSchemaChange, note})
				}
			}
			if r.SyncTags {
				p := planTags(r.AssetID, paths, labels[r.AssetID], source, r.Tags, classes)
				out[i].Skipped = p.skipped
				w.tags = append(w.tags, p)
				if len(p.added) > 0 || len(p.removed) > 0 {
					out[i].TagsChanged = true
					audits = append(audits, pendingAudit{r.AssetID, ActionLabelAdd, p.note(source)})
				}
			}
			if out[i].ColumnsChanged || out[i].TagsChanged {
				changed = append(changed, r.AssetID)
			}
		}
		if len(changed) == 0 {
			return nil
		}
		if err := w.write(ctx, tx, now, ActorFrom(ctx)); err != nil {
			return err
		}
		if err := chunk.Each(changed, func(part []uuid.UUID) error {
			return tx.Asset.Update().Where(asset.IDIn(part...)).AddVersion(1).SetUpdatedAt(now).Exec(ctx)
		}); err != nil {
			return fmt.Errorf("catalog: bump versions: %w", err)
		}
		creates, err := c.versionedAudits(ctx, tx, now, changed, audits)
		if err != nil {
			return err
		}
		if err := chunk.Each(creates, func(part []*ent.AuditEventCreate) error {
			return tx.AuditEvent.CreateBulk(part...).Exec(ctx)
		}); err != nil {
			return fmt.Errorf("catalog: audit source reports: %w", err)
		}
		return c.reindex(ctx, tx.Client(), changed...)
	})
	if err != nil {
		return nil, err
	}
	c.changed(ctx, nil, changed...)
	return out, nil
}

// pendingAudit is an audit event of RecordSources waiting for the version its change produced.
type pendingAudit struct {
	assetID uuid.UUID
	action  string
	note    map[string]any
}

// versionedAudits builds the audit events of the changed assets, each note carrying the version
// its change produced (read after the bump), as every change of an asset records.
func (c *Catalog) versionedAudits(ctx context.Context, tx *ent.Tx, now time.Time, changed []uuid.UUID, audits []pendingAudit) ([]*ent.AuditEventCreate, error) {
	versions := make(map[uuid.UUID]int64, len(changed))
	if err := chunk.Each(changed, func(part []uuid.UUID) error {
		rows, err := tx.Asset.Query().Where(asset.IDIn(part...)).Select(asset.FieldID, asset.FieldVersion).All(ctx)
		for _, r := range rows {
			versions[r.ID] = r.Version
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("catalog: read versions: %w", err)
	}
	out := make([]*ent.AuditEventCreate, 0, len(audits))
	for _, a := range audits {
		a.note["version"] = versions[a.assetID]
		q, err := c.auditCreate(ctx, tx, now, a.action, a.assetID, nil, a.note)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// checkReports refuses, in out, the reports that name an asset twice or carry a schema of
// another source or an invalid one, gives schemas without a source this one, and returns the
// assets of the others.
func checkReports(source LabelSource, reports []SourceReport, out []SourceOutcome) []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	var ids []uuid.UUID
	for i, r := range reports {
		if seen[r.AssetID] {
			out[i].Err = invalid("asset_id", "asset %s is reported twice", r.AssetID)
			continue
		}
		seen[r.AssetID] = true
		if r.Schema != nil {
			if r.Schema.Source == "" {
				s := *r.Schema
				s.Source = source
				reports[i].Schema = &s
			}
			if reports[i].Schema.Source != source {
				out[i].Err = invalid("source", "a schema from %s reported as %s", reports[i].Schema.Source, source)
				continue
			}
			if err := validateSchema(*reports[i].Schema); err != nil {
				out[i].Err = err
				continue
			}
		}
		ids = append(ids, r.AssetID)
	}
	return ids
}

type lockedAsset struct {
	Status    asset.Status
	DeletedAt *time.Time
}

// lockAssets takes the row locks of the assets (on PostgreSQL; SQLite has one writer anyway),
// as a change's version claim does, and then reads their state.
func lockAssets(ctx context.Context, tx *ent.Tx, ids []uuid.UUID) (map[uuid.UUID]lockedAsset, error) {
	out := make(map[uuid.UUID]lockedAsset, len(ids))
	err := chunk.Each(ids, func(part []uuid.UUID) error {
		// An update that changes nothing: the lock is all it is for (no FOR UPDATE on SQLite).
		if err := tx.Asset.Update().Where(asset.IDIn(part...)).AddVersion(0).Exec(ctx); err != nil {
			return err
		}
		rows, err := tx.Asset.Query().Where(asset.IDIn(part...)).Select(asset.FieldID, asset.FieldStatus, asset.FieldDeletedAt).All(ctx)
		for _, r := range rows {
			out[r.ID] = lockedAsset{Status: r.Status, DeletedAt: r.DeletedAt}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: lock assets: %w", err)
	}
	return out, nil
}

// sortReports marks the reports of missing or deleted assets in out and returns the live
// assets, those whose tags are synced, and the tag families those tags name.
func sortReports(reports []SourceReport, out []SourceOutcome, live map[uuid.UUID]lockedAsset) (liveIDs, tagIDs []uuid.UUID, families []string) {
	for i, r := range reports {
		if out[i].Err != nil {
			continue
		}
		st, ok := live[r.AssetID]
		switch {
		case !ok:
			out[i].Err = notFound("asset %s does not exist", r.AssetID)
			continue
		case st.Status == asset.StatusDeleted:
			at := ""
			if st.DeletedAt != nil {
				at = " at " + st.DeletedAt.UTC().Format(time.RFC3339)
			}
			out[i].Err = conflict("asset %s was deleted%s; deleted assets cannot change", r.AssetID, at)
			continue
		}
		liveIDs = append(liveIDs, r.AssetID)
		if r.SyncTags {
			tagIDs = append(tagIDs, r.AssetID)
			for _, t := range r.Tags {
				family, _, _ := strings.Cut(t.Tag, ".")
				families = append(families, family)
			}
		}
	}
	return liveIDs, tagIDs, families
}

// classificationValues returns the values of the classifications among families, by name,
// share-locking them as checkTag does, so none of their values is dropped before the tags
// checked against them commit. Only the families the tags name are locked: a report need not
// wait for an edit of a classification it does not use.
func classificationValues(ctx context.Context, client *ent.Client, families []string) (map[string][]string, error) {
	slices.Sort(families)
	families = slices.Compact(families)
	if len(families) == 0 {
		return map[string][]string{}, nil
	}
	var rows []*ent.Classification
	err := chunk.Each(families, func(part []string) error {
		got, err := client.Classification.Query().Where(classification.IDIn(part...), rowLock(entsql.LockShare)).
			Order(ent.Asc(classification.FieldID)).All(ctx)
		rows = append(rows, got...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: read classifications: %w", err)
	}
	out := make(map[string][]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.Values
	}
	return out, nil
}

// checkTagIn is checkTag against classifications read before.
func checkTagIn(tag string, classes map[string][]string) error {
	if err := ValidateTag(tag); err != nil {
		return err
	}
	family, value, _ := strings.Cut(tag, ".")
	values, ok := classes[family]
	if ok && !slices.Contains(values, value) {
		return invalid("tag", "%q is a classification; its tags are %s.<value> with a value among %s", family, family, strings.Join(values, ", "))
	}
	return nil
}

func currentPaths(cols []*ent.Column) map[string]uuid.UUID {
	out := make(map[string]uuid.UUID, len(cols))
	for _, c := range cols {
		out[c.Path] = c.ID
	}
	return out
}

// columnPlan is what recording one schema changes, worked out from the current columns before
// anything is written.
type columnPlan struct {
	assetID uuid.UUID
	in      SchemaInput
	closes  []*ent.Column
	renames []*ent.Column // parked on a path of their own before any column takes a new path
	updates []columnUpdate
	adds    []columnAdd
	changes []ColumnChange
	touched int                  // columns whose doc, order or field ID changed
	after   map[string]uuid.UUID // the current columns afterwards, by path
}

type columnUpdate struct {
	id      uuid.UUID
	ordinal int
	path    *string
	typ     *string
	doc     *string
	fieldID *int
}

type columnAdd struct {
	id      uuid.UUID
	in      ColumnInput
	ordinal int
}

// planColumns matches a schema with the current columns: by field ID where the input has one, by
// path otherwise; matched columns take the new path, type and source doc (a changed path with
// the same field ID is a rename: the record, its description and labels stay); unmatched inputs
// are added; current columns the schema no longer has are closed. Columns with a field ID belong
// to the Iceberg schema: an OpenLineage schema (no field IDs) may update their docs but never
// renames or drops them, so two sources cannot flap.
func planColumns(id uuid.UUID, cur []*ent.Column, in SchemaInput) *columnPlan {
	p := &columnPlan{assetID: id, in: in, after: map[string]uuid.UUID{}}
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
	type match struct {
		row *ent.Column
		in  ColumnInput
		ord int
	}
	var matches []match
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
			p.adds = append(p.adds, columnAdd{id: uuid.Must(uuid.NewV7()), in: col, ordinal: i})
			continue
		}
		matched[row.ID] = true
		matches = append(matches, match{row, col, i})
	}
	// Closed first, so a new or renamed column may take a closed one's path.
	for _, col := range cur {
		if matched[col.ID] || (!iceberg && col.FieldID != nil) {
			if !matched[col.ID] {
				p.after[col.Path] = col.ID // an Iceberg column an OpenLineage schema lacks: kept
			}
			continue
		}
		p.closes = append(p.closes, col)
		p.changes = append(p.changes, ColumnChange{Op: "removed", ColumnID: col.ID, FieldID: col.FieldID, Path: col.Path, Type: col.Type})
	}
	for _, m := range matches {
		u := columnUpdate{id: m.row.ID, ordinal: m.ord}
		dirty := m.row.Ordinal != m.ord
		path := m.row.Path
		if m.row.Path != m.in.Path && (iceberg || m.row.FieldID == nil) {
			p.renames = append(p.renames, m.row)
			u.path, path = &m.in.Path, m.in.Path
			dirty = true
			p.changes = append(p.changes, ColumnChange{Op: "renamed", ColumnID: m.row.ID, FieldID: firstInt(m.in.FieldID, m.row.FieldID), Path: m.in.Path, OldPath: m.row.Path})
		}
		p.after[path] = m.row.ID
		if m.in.Type != "" && m.in.Type != m.row.Type {
			u.typ = &m.in.Type
			dirty = true
			if m.row.Type != "" {
				p.changes = append(p.changes, ColumnChange{Op: "retyped", ColumnID: m.row.ID, FieldID: firstInt(m.in.FieldID, m.row.FieldID), Path: m.in.Path, Type: m.in.Type, OldType: m.row.Type})
			}
		}
		if m.in.Doc != m.row.SourceDoc && (m.in.Doc != "" || iceberg || m.row.FieldID == nil) {
			u.doc = &m.in.Doc
			dirty = true
		}
		if m.in.FieldID != nil && m.row.FieldID == nil {
			u.fieldID = m.in.FieldID
			dirty = true
		}
		if dirty {
			p.touched++
			p.updates = append(p.updates, u)
		}
	}
	for _, a := range p.adds {
		p.after[a.in.Path] = a.id
		p.changes = append(p.changes, ColumnChange{Op: "added", ColumnID: a.id, FieldID: a.in.FieldID, Path: a.in.Path, Type: a.in.Type})
	}
	return p
}

// note is what the audit log records of the plan; nil when it changes nothing.
func (p *columnPlan) note() map[string]any {
	if len(p.changes) > 0 {
		return map[string]any{"source": p.in.Source, "schema_id": p.in.SchemaID, "changes": p.changes}
	}
	if p.touched > 0 {
		// Docs or order only: not a schema change for the history, but the asset changed (search
		// indexes column docs).
		return map[string]any{"source": p.in.Source, "columns_updated": p.touched}
	}
	return nil
}

// tagPlan is what making a source's tags on one asset exactly the reported ones changes.
type tagPlan struct {
	assetID        uuid.UUID
	source         LabelSource
	closes         []uuid.UUID
	adds           []tagKey
	skipped        []SourceTag
	added, removed []string
}

type tagKey struct {
	col uuid.UUID
	tag string
}

// planTags works out the label changes that make the source's tags on the asset exactly tags,
// given its current columns (by path) and tag labels. Labels from other sources (a person's)
// are never touched, and a tag one of them already puts there is not added twice.
func planTags(id uuid.UUID, paths map[string]uuid.UUID, cur []*ent.Label, source LabelSource, tags []SourceTag, classes map[string][]string) *tagPlan {
	p := &tagPlan{assetID: id, source: source}
	want := map[tagKey]bool{}
	var order []tagKey
	for _, t := range tags {
		colID, ok := paths[t.Column]
		if t.Column == "" {
			colID, ok = uuid.Nil, true
		}
		if !ok || checkTagIn(t.Tag, classes) != nil {
			p.skipped = append(p.skipped, t)
			continue
		}
		if k := (tagKey{colID, t.Tag}); !want[k] {
			want[k] = true
			order = append(order, k)
		}
	}
	have := map[tagKey]bool{}
	for _, l := range cur {
		k := tagKey{l.ColumnID, l.Value}
		have[k] = true
		if l.Source != label.Source(source) || want[k] {
			continue
		}
		p.closes = append(p.closes, l.ID)
		p.removed = append(p.removed, l.Value)
	}
	for _, k := range order {
		if !have[k] { // already there, from this source or a person: either way tagged
			p.adds = append(p.adds, k)
			p.added = append(p.added, k.tag)
		}
	}
	slices.Sort(p.added)
	slices.Sort(p.removed)
	return p
}

func (p *tagPlan) note(source LabelSource) map[string]any {
	return map[string]any{"source": source, "added": p.added, "removed": p.removed}
}

// sourceWrites are the plans of one RecordSources, written together: closes, then renames
// (parked first, as a and b may swap), updates, and inserts, each in bulk where the rows allow.
type sourceWrites struct {
	columns []*columnPlan
	tags    []*tagPlan
}

func (w *sourceWrites) write(ctx context.Context, tx *ent.Tx, now time.Time, actor string) error {
	var closes []uuid.UUID
	var adds []*ent.ColumnCreate
	var changes []*ent.SchemaChangeCreate
	for _, p := range w.columns {
		for _, c := range p.closes {
			closes = append(closes, c.ID)
		}
		for _, a := range p.adds {
			adds = append(adds, tx.Column.Create().SetID(a.id).SetAssetID(p.assetID).SetNillableFieldID(a.in.FieldID).SetPath(a.in.Path).
				SetType(a.in.Type).SetOrdinal(a.ordinal).SetSourceDoc(a.in.Doc).SetAddedAt(now))
		}
		if len(p.changes) > 0 {
			b, err := json.Marshal(p.changes)
			if err != nil {
				return fmt.Errorf("catalog: schema change: %w", err)
			}
			changes = append(changes, tx.SchemaChange.Create().SetAssetID(p.assetID).SetAt(now).SetSource(string(p.in.Source)).
				SetNillableSchemaID(p.in.SchemaID).SetChanges(string(b)))
		}
	}
	if err := chunk.Each(closes, func(part []uuid.UUID) error {
		return tx.Column.Update().Where(column.IDIn(part...)).SetRemovedAt(now).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("catalog: drop columns: %w", err)
	}
	// Renames move paths around: park renamed columns on a path no column can have first (a
	// leading space: validateSchema refuses it in a real path; not a NUL byte, which PostgreSQL
	// refuses in text), so the unique current-path index never sees two at once.
	for _, p := range w.columns {
		for _, r := range p.renames {
			if err := tx.Column.UpdateOneID(r.ID).SetPath(" " + r.ID.String()).Exec(ctx); err != nil {
				return fmt.Errorf("catalog: rename column: %w", err)
			}
		}
	}
	for _, p := range w.columns {
		for _, u := range p.updates {
			q := tx.Column.UpdateOneID(u.id).SetOrdinal(u.ordinal)
			if u.path != nil {
				q.SetPath(*u.path)
			}
			if u.typ != nil {
				q.SetType(*u.typ)
			}
			if u.doc != nil {
				q.SetSourceDoc(*u.doc)
			}
			if u.fieldID != nil {
				q.SetFieldID(*u.fieldID)
			}
			if err := q.Exec(ctx); err != nil {
				return fmt.Errorf("catalog: update column: %w", err)
			}
		}
	}
	if err := chunk.Each(adds, func(part []*ent.ColumnCreate) error {
		return tx.Column.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("catalog: add columns: %w", err)
	}
	if err := chunk.Each(changes, func(part []*ent.SchemaChangeCreate) error {
		return tx.SchemaChange.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("catalog: record schema changes: %w", err)
	}

	var labelCloses []uuid.UUID
	var labelAdds []*ent.LabelCreate
	for _, p := range w.tags {
		labelCloses = append(labelCloses, p.closes...)
		for _, k := range p.adds {
			labelAdds = append(labelAdds, tx.Label.Create().SetAssetID(p.assetID).SetColumnID(k.col).SetKind(label.KindTag).SetValue(k.tag).
				SetSource(label.Source(p.source)).SetAddedAt(now).SetAddedBy(actor))
		}
	}
	if err := chunk.Each(labelCloses, func(part []uuid.UUID) error {
		return tx.Label.Update().Where(label.IDIn(part...)).SetRemovedAt(now).SetRemovedBy(actor).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("catalog: close labels: %w", err)
	}
	if err := chunk.Each(labelAdds, func(part []*ent.LabelCreate) error {
		return tx.Label.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("catalog: add labels: %w", err)
	}
	return nil
}
