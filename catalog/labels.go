package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/classification"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/ent/glossaryterm"
	"github.com/tidemark/tidemark/ent/label"
)

// LabelKind is what a label attaches: a tag or a glossary term.
type LabelKind string

// Label kinds.
const (
	LabelTag  LabelKind = "tag"
	LabelTerm LabelKind = "term"
)

// LabelSource says who put a label on: a person, a source system as it reported it, or a person
// accepting a suggested propagation.
type LabelSource string

// Label sources.
const (
	SourcePerson      LabelSource = "person"
	SourceOpenLineage LabelSource = "openlineage"
	SourceIceberg     LabelSource = "iceberg"
	SourcePropagation LabelSource = "propagation"
)

// MaxTagBytes bounds a tag.
const MaxTagBytes = 128

// Label is one interval of a tag or glossary term on an asset or one of its columns.
type Label struct {
	ID       uuid.UUID   `json:"id"`
	AssetID  uuid.UUID   `json:"asset_id"`
	ColumnID uuid.UUID   `json:"column_id"` // uuid.Nil: the asset itself
	Column   string      `json:"column,omitempty"`
	Kind     LabelKind   `json:"kind"`
	Value    string      `json:"value"` // the tag, or the term's ID
	TermName string      `json:"term_name,omitempty"`
	Source   LabelSource `json:"source"`
	// FromAssetID and FromColumnID name where an accepted propagation came from.
	FromAssetID  *uuid.UUID `json:"from_asset_id,omitempty"`
	FromColumnID *uuid.UUID `json:"from_column_id,omitempty"`
	AddedAt      time.Time  `json:"added_at"`
	AddedBy      string     `json:"added_by"`
	RemovedAt    *time.Time `json:"removed_at,omitempty"`
	RemovedBy    string     `json:"removed_by,omitempty"`
}

// LabelInput is a label to put on an asset (ColumnID uuid.Nil) or one of its current columns.
type LabelInput struct {
	ColumnID uuid.UUID
	Kind     LabelKind
	Value    string
	Source   LabelSource // person when empty
	// Set by AcceptSuggestion only.
	fromAssetID, fromColumnID *uuid.UUID
}

// labelNote is a label change as the audit log records it.
type labelNote struct {
	Column string    `json:"column,omitempty"`
	Kind   LabelKind `json:"kind"`
	Value  string    `json:"value"`
	Term   string    `json:"term,omitempty"`
	Source string    `json:"source,omitempty"`
}

// ValidateTag checks a tag's form: dot-separated segments of lower-case letters, digits, '_'
// and '-'. The first segment of a classification's tags is the classification.
func ValidateTag(tag string) error {
	if tag == "" {
		return invalid("tag", "tag is empty")
	}
	if len(tag) > MaxTagBytes {
		return invalid("tag", "tag is %d bytes long; the limit is %d", len(tag), MaxTagBytes)
	}
	for _, seg := range strings.Split(tag, ".") {
		if seg == "" {
			return invalid("tag", "tag %q has an empty segment; write segments separated by single dots, as in pii.email", tag)
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return invalid("tag", "tag %q has %q; tags use lower-case letters, digits, '_', '-' and '.' (as in pii.email or tier.gold)", tag, r)
			}
		}
	}
	return nil
}

// rowLock makes a query's read take row locks of strength on PostgreSQL, held until its
// transaction ends. SQLite has no row locks and needs none: a transaction takes the database's
// one write lock at BEGIN (_txlock=immediate), so a read and the writes after it are never
// interleaved with another writer's.
func rowLock(strength entsql.LockStrength) func(*entsql.Selector) {
	return func(s *entsql.Selector) {
		if s.Dialect() == dialect.Postgres {
			s.For(strength)
		}
	}
}

// checkTag validates a tag against the controlled families: a tag whose first segment names a
// classification must be one of its values. Run it in the transaction that writes the tag: it
// share-locks the classification, so PutClassification (which locks it for update) cannot drop
// the value between this check and the commit, and waits to see the tag instead. A share lock,
// so tags of one family on many assets do not queue behind each other.
func checkTag(ctx context.Context, client *ent.Client, tag string) error {
	if err := ValidateTag(tag); err != nil {
		return err
	}
	family, value, _ := strings.Cut(tag, ".")
	cl, err := client.Classification.Query().Where(classification.ID(family), rowLock(entsql.LockShare)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil // a free tag
	}
	if err != nil {
		return fmt.Errorf("catalog: read classification %s: %w", family, err)
	}
	if !slices.Contains(cl.Values, value) {
		return invalid("tag", "%q is a classification; its tags are %s.<value> with a value among %s", family, family, strings.Join(cl.Values, ", "))
	}
	return nil
}

// AddLabel puts a tag or a glossary term on the asset or one of its current columns. expected is
// the asset version the caller saw (AnyVersion to skip the check). A label already there changes
// nothing.
func (c *Catalog) AddLabel(ctx context.Context, id uuid.UUID, expected int64, in LabelInput) (Asset, error) {
	if in.Source == "" {
		in.Source = SourcePerson
	}
	a, err := c.mutateNoted(ctx, id, expected, ActionLabelAdd, false, columnFields(id, in.ColumnID, labelField(in.Kind, in.Value)), func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		return c.addLabel(ctx, tx, id, in, now, note)
	})
	if ent.IsConstraintError(err) {
		return Asset{}, conflict("that label was added to asset %s concurrently; read it again", id)
	}
	return a, err
}

func (c *Catalog) addLabel(ctx context.Context, tx *ent.Tx, id uuid.UUID, in LabelInput, now time.Time, note *auditNote) (bool, error) {
	n := labelNote{Kind: in.Kind, Value: in.Value, Source: string(in.Source)}
	switch in.Kind {
	case LabelTag:
		if err := checkTag(ctx, tx.Client(), in.Value); err != nil {
			return false, err
		}
	case LabelTerm:
		termID, err := uuid.Parse(in.Value)
		if err != nil {
			return false, invalid("term", "term %q is not a glossary term ID", in.Value)
		}
		t, err := tx.GlossaryTerm.Get(ctx, termID)
		if ent.IsNotFound(err) {
			return false, notFound("glossary term %s does not exist", termID)
		}
		if err != nil {
			return false, fmt.Errorf("catalog: read term: %w", err)
		}
		in.Value, n.Value, n.Term = termID.String(), termID.String(), t.Name
	default:
		return false, invalid("kind", "label kind %q is not tag or term", in.Kind)
	}
	if in.ColumnID != uuid.Nil {
		col, err := currentColumn(ctx, tx.Client(), id, in.ColumnID)
		if err != nil {
			return false, err
		}
		n.Column = col.Path
	}
	exists, err := tx.Label.Query().Where(label.AssetID(id), label.ColumnID(in.ColumnID), label.KindEQ(label.Kind(in.Kind)),
		label.Value(in.Value), label.RemovedAtIsNil()).Exist(ctx)
	if err != nil {
		return false, fmt.Errorf("catalog: read labels: %w", err)
	}
	if exists {
		return false, nil
	}
	if err := tx.Label.Create().SetAssetID(id).SetColumnID(in.ColumnID).SetKind(label.Kind(in.Kind)).SetValue(in.Value).
		SetSource(label.Source(in.Source)).SetNillableFromAssetID(in.fromAssetID).SetNillableFromColumnID(in.fromColumnID).
		SetAddedAt(now).SetAddedBy(ActorFrom(ctx)).Exec(ctx); err != nil {
		return false, fmt.Errorf("catalog: add label: %w", err)
	}
	note.after = n
	return true, nil
}

// RemoveLabel takes a tag or term off the asset or one of its columns; its interval closes and
// stays in the history.
func (c *Catalog) RemoveLabel(ctx context.Context, id uuid.UUID, expected int64, columnID uuid.UUID, kind LabelKind, value string) (Asset, error) {
	return c.mutateNoted(ctx, id, expected, ActionLabelRemove, false, columnFields(id, columnID, labelField(kind, value)), func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		row, err := tx.Label.Query().Where(label.AssetID(id), label.ColumnID(columnID), label.KindEQ(label.Kind(kind)),
			label.Value(value), label.RemovedAtIsNil()).Only(ctx)
		if ent.IsNotFound(err) {
			return false, notFound("asset %s has no %s %q there", id, kind, value)
		}
		if err != nil {
			return false, fmt.Errorf("catalog: read label: %w", err)
		}
		if err := tx.Label.UpdateOne(row).SetRemovedAt(now).SetRemovedBy(ActorFrom(ctx)).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: remove label: %w", err)
		}
		n := labelNote{Kind: kind, Value: value, Source: string(row.Source)}
		if columnID != uuid.Nil {
			if col, err := tx.Column.Get(ctx, columnID); err == nil {
				n.Column = col.Path
			}
		}
		note.before = n
		return true, nil
	})
}

// Labels returns an asset's labels (asset and columns), oldest first; with history, removed ones
// too.
func (c *Catalog) Labels(ctx context.Context, id uuid.UUID, history bool) ([]Label, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	q := c.client(ctx).Label.Query().Where(label.AssetID(id)).Order(ent.Asc(label.FieldID))
	if !history {
		q.Where(label.RemovedAtIsNil())
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: labels of %s: %w", id, err)
	}
	return c.toLabels(ctx, rows)
}

// toLabels converts rows, naming their columns and terms.
func (c *Catalog) toLabels(ctx context.Context, rows []*ent.Label) ([]Label, error) {
	var colIDs, termIDs []uuid.UUID
	for _, r := range rows {
		if r.ColumnID != uuid.Nil {
			colIDs = append(colIDs, r.ColumnID)
		}
		if r.Kind == label.KindTerm {
			if t, err := uuid.Parse(r.Value); err == nil {
				termIDs = append(termIDs, t)
			}
		}
	}
	paths := map[uuid.UUID]string{}
	if len(colIDs) > 0 {
		cols, err := c.client(ctx).Column.Query().Where(column.IDIn(colIDs...)).Select(column.FieldID, column.FieldPath).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: label columns: %w", err)
		}
		for _, col := range cols {
			paths[col.ID] = col.Path
		}
	}
	terms := map[string]string{}
	if len(termIDs) > 0 {
		ts, err := c.client(ctx).GlossaryTerm.Query().Where(glossaryterm.IDIn(termIDs...)).Select(glossaryterm.FieldID, glossaryterm.FieldName).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: label terms: %w", err)
		}
		for _, t := range ts {
			terms[t.ID.String()] = t.Name
		}
	}
	out := make([]Label, len(rows))
	for i, r := range rows {
		out[i] = Label{ID: r.ID, AssetID: r.AssetID, ColumnID: r.ColumnID, Column: paths[r.ColumnID], Kind: LabelKind(r.Kind),
			Value: r.Value, Source: LabelSource(r.Source), FromAssetID: r.FromAssetID, FromColumnID: r.FromColumnID,
			AddedAt: r.AddedAt.UTC(), AddedBy: r.AddedBy, RemovedAt: utcPtr(r.RemovedAt), RemovedBy: r.RemovedBy}
		if r.Kind == label.KindTerm {
			out[i].TermName = terms[r.Value]
		}
	}
	return out, nil
}

// SourceTag is a tag a source system reports on an asset (Column "") or one of its columns.
type SourceTag struct {
	Column string
	Tag    string
}

// SyncSourceTags makes the asset's labels from source exactly tags: new ones are added, ones the
// source no longer reports are closed. Labels from other sources (a person's) are never touched.
// Tags that are not valid, or name a column the asset does not have, are skipped and returned, so
// one bad tag does not refuse a whole lineage event. (It is RecordSources for one asset; see
// planTags.)
func (c *Catalog) SyncSourceTags(ctx context.Context, id uuid.UUID, source LabelSource, tags []SourceTag) (skipped []SourceTag, err error) {
	out, err := c.RecordSources(ctx, source, []SourceReport{{AssetID: id, Tags: tags, SyncTags: true}})
	if err != nil {
		return nil, err
	}
	return out[0].Skipped, out[0].Err
}

// --- classifications ---------------------------------------------------------------------------

// Classification is a controlled tag family.
type Classification struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Values      []string  `json:"values"`
	Propagate   bool      `json:"propagate"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// DefaultClassifications are created when missing (EnsureClassifications), so a new catalog can
// mark personal data and tiers from the start.
var DefaultClassifications = []Classification{
	{Name: "pii", Description: "Personal data: columns and assets that identify or describe a person.",
		Values: []string{"email", "phone", "name", "address", "birth_date", "government_id", "ip_address", "financial", "health", "other"}, Propagate: true},
	{Name: "tier", Description: "How critical an asset is: gold is relied on by production and reporting.",
		Values: []string{"gold", "silver", "bronze"}, Propagate: false},
}

// EnsureClassifications creates the default classifications that do not exist yet; existing ones
// (perhaps changed by an admin) are left as they are.
func (c *Catalog) EnsureClassifications(ctx context.Context) error {
	for _, d := range DefaultClassifications {
		ok, err := c.client(ctx).Classification.Query().Where(classification.ID(d.Name)).Exist(ctx)
		if err != nil {
			return fmt.Errorf("catalog: read classification: %w", err)
		}
		if ok {
			continue
		}
		now := c.Now()
		err = c.client(ctx).Classification.Create().SetID(d.Name).SetDescription(d.Description).SetValues(d.Values).
			SetPropagate(d.Propagate).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
		if err != nil && !ent.IsConstraintError(err) { // another replica made it first
			return fmt.Errorf("catalog: create classification %s: %w", d.Name, err)
		}
	}
	return nil
}

// Classifications lists the classifications by name.
func (c *Catalog) Classifications(ctx context.Context) ([]Classification, error) {
	rows, err := c.client(ctx).Classification.Query().Order(ent.Asc(classification.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: classifications: %w", err)
	}
	out := make([]Classification, len(rows))
	for i, r := range rows {
		out[i] = toClassification(r)
	}
	return out, nil
}

func toClassification(r *ent.Classification) Classification {
	return Classification{Name: r.ID, Description: r.Description, Values: r.Values, Propagate: r.Propagate,
		Version: r.Version, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// PutClassification creates a classification, or changes one at version expected (AnyVersion to
// skip the check). A value still used by a current tag cannot be dropped.
func (c *Catalog) PutClassification(ctx context.Context, in Classification, expected int64) (Classification, error) {
	if err := ValidateTag(in.Name); err != nil || strings.Contains(in.Name, ".") {
		return Classification{}, invalid("name", "classification %q: use one segment of lower-case letters, digits, '_' or '-'", in.Name)
	}
	if len(in.Values) == 0 || len(in.Values) > 200 {
		return Classification{}, invalid("values", "a classification lists 1 to 200 values")
	}
	for _, v := range in.Values {
		if err := ValidateTag(v); err != nil || strings.Contains(v, ".") {
			return Classification{}, invalid("values", "value %q: use one segment of lower-case letters, digits, '_' or '-'", v)
		}
	}
	if err := validateDescription(in.Description); err != nil {
		return Classification{}, err
	}
	var out Classification
	err := c.tx(ctx, func(tx *ent.Tx) error {
		now := c.Now()
		// Locked for update, so a tag being added with a value dropped here either commits first
		// (and the check below sees it) or waits and then reads the new values (checkTag).
		cur, err := tx.Classification.Query().Where(classification.ID(in.Name), rowLock(entsql.LockUpdate)).Only(ctx)
		if ent.IsNotFound(err) {
			if expected != AnyVersion {
				return notFound("classification %s does not exist", in.Name)
			}
			row, err := tx.Classification.Create().SetID(in.Name).SetDescription(in.Description).SetValues(in.Values).
				SetPropagate(in.Propagate).SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
			if err != nil {
				return fmt.Errorf("catalog: create classification: %w", err)
			}
			out = toClassification(row)
			return c.audit(ctx, tx, now, ActionClassificationPut, uuid.Nil, nil, out)
		}
		if err != nil {
			return fmt.Errorf("catalog: read classification: %w", err)
		}
		if expected != AnyVersion && cur.Version != expected {
			return &Error{Kind: ErrStaleVersion, Field: "If-Match", Message: fmt.Sprintf(
				"classification %s is at version %d, not %d: read it again and retry", in.Name, cur.Version, expected)}
		}
		for _, v := range cur.Values {
			if slices.Contains(in.Values, v) {
				continue
			}
			used, err := tx.Label.Query().Where(label.KindEQ(label.KindTag), label.Value(in.Name+"."+v), label.RemovedAtIsNil()).Exist(ctx)
			if err != nil {
				return fmt.Errorf("catalog: read labels: %w", err)
			}
			if used {
				return conflict("%s.%s is still on some assets or columns; remove those tags before dropping the value", in.Name, v)
			}
		}
		n, err := tx.Classification.Update().Where(classification.ID(in.Name), classification.Version(cur.Version)).
			SetDescription(in.Description).SetValues(in.Values).SetPropagate(in.Propagate).AddVersion(1).SetUpdatedAt(now).Save(ctx)
		if err != nil {
			return fmt.Errorf("catalog: update classification: %w", err)
		}
		if n == 0 {
			return conflict("classification %s changed concurrently; read it again and retry", in.Name)
		}
		row, err := tx.Classification.Get(ctx, in.Name)
		if err != nil {
			return fmt.Errorf("catalog: read classification: %w", err)
		}
		out = toClassification(row)
		return c.audit(ctx, tx, now, ActionClassificationPut, uuid.Nil, toClassification(cur), out)
	})
	if ent.IsConstraintError(err) {
		return Classification{}, conflict("classification %s was created concurrently; read it again", in.Name)
	}
	return out, err
}
