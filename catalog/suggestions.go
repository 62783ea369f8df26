package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/classification"
	"github.com/tidemark/tidemark/ent/column"
	"github.com/tidemark/tidemark/ent/columnedge"
	"github.com/tidemark/tidemark/ent/label"
	"github.com/tidemark/tidemark/ent/suggestiondecision"
)

// maxSuggestionEdges bounds the column lineage one asset's suggestions are derived from.
const maxSuggestionEdges = 5000

// Suggestion is a classification tag on an upstream column that column lineage says flows into a
// column of this asset, which does not carry it yet. It is shown, never applied: a person accepts
// or rejects it.
type Suggestion struct {
	ColumnPath     string    `json:"column"`
	ColumnID       uuid.UUID `json:"column_id"` // uuid.Nil when the asset has no record of the column yet
	Tag            string    `json:"tag"`
	FromAssetID    uuid.UUID `json:"from_asset_id"`
	FromColumnID   uuid.UUID `json:"from_column_id"`
	FromColumnPath string    `json:"from_column"`
	Transformation string    `json:"transformation,omitempty"`
	Masking        bool      `json:"masking,omitempty"`
}

// SuggestionKey names a suggestion to accept or reject.
type SuggestionKey struct {
	ColumnPath   string
	Tag          string
	FromColumnID uuid.UUID
}

// Suggestions derives the asset's pending propagation suggestions from its column lineage (one
// hop: accepting one makes the next hop's suggestion appear downstream), leaving out tags the
// column has and suggestions a person rejected.
func (c *Catalog) Suggestions(ctx context.Context, id uuid.UUID) ([]Suggestion, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	return suggestions(ctx, c.client(ctx), id)
}

func suggestions(ctx context.Context, client *ent.Client, id uuid.UUID) ([]Suggestion, error) {
	edges, err := client.ColumnEdge.Query().Where(columnedge.OutAssetID(id), columnedge.InAssetIDNEQ(id)).
		Order(ent.Asc(columnedge.FieldOutField), ent.Asc(columnedge.FieldID)).Limit(maxSuggestionEdges).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: column lineage of %s: %w", id, err)
	}
	if len(edges) == 0 {
		return nil, nil
	}
	fams, err := client.Classification.Query().Where(classification.Propagate(true)).IDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: classifications: %w", err)
	}
	if len(fams) == 0 {
		return nil, nil
	}
	propagates := map[string]bool{}
	for _, f := range fams {
		propagates[f] = true
	}
	var inAssets []uuid.UUID
	for _, e := range edges {
		inAssets = append(inAssets, e.InAssetID)
	}
	inCols, err := client.Column.Query().Where(column.AssetIDIn(uniqueIDs(inAssets)...), column.RemovedAtIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: upstream columns: %w", err)
	}
	type colKey struct {
		asset uuid.UUID
		path  string
	}
	upstream := map[colKey]*ent.Column{}
	var upIDs []uuid.UUID
	for _, col := range inCols {
		upstream[colKey{col.AssetID, col.Path}] = col
		upIDs = append(upIDs, col.ID)
	}
	if len(upIDs) == 0 {
		return nil, nil
	}
	upLabels, err := client.Label.Query().Where(label.ColumnIDIn(upIDs...), label.KindEQ(label.KindTag), label.RemovedAtIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: upstream tags: %w", err)
	}
	tagsOf := map[uuid.UUID][]string{}
	for _, l := range upLabels {
		family, _, _ := strings.Cut(l.Value, ".")
		if propagates[family] {
			tagsOf[l.ColumnID] = append(tagsOf[l.ColumnID], l.Value)
		}
	}
	own, err := client.Column.Query().Where(column.AssetID(id), column.RemovedAtIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: columns: %w", err)
	}
	ownByPath := map[string]uuid.UUID{}
	for _, col := range own {
		ownByPath[col.Path] = col.ID
	}
	ownLabels, err := client.Label.Query().Where(label.AssetID(id), label.KindEQ(label.KindTag), label.RemovedAtIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: tags: %w", err)
	}
	has := map[string]bool{}
	for _, l := range ownLabels {
		has[l.ColumnID.String()+"\x00"+l.Value] = true
	}
	rejected, err := client.SuggestionDecision.Query().Where(suggestiondecision.AssetID(id)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: decisions: %w", err)
	}
	no := map[string]bool{}
	for _, r := range rejected {
		no[r.ColumnPath+"\x00"+r.Tag+"\x00"+r.FromColumnID.String()] = true
	}
	var out []Suggestion
	seen := map[string]bool{}
	for _, e := range edges {
		up := upstream[colKey{e.InAssetID, e.InField}]
		if up == nil {
			continue
		}
		target := ownByPath[e.OutField]
		for _, tag := range tagsOf[up.ID] {
			k := e.OutField + "\x00" + tag + "\x00" + up.ID.String()
			if seen[k] || no[k] || (target != uuid.Nil && has[target.String()+"\x00"+tag]) {
				continue
			}
			seen[k] = true
			out = append(out, Suggestion{ColumnPath: e.OutField, ColumnID: target, Tag: tag, FromAssetID: e.InAssetID,
				FromColumnID: up.ID, FromColumnPath: up.Path, Transformation: strings.Trim(e.TransformationType+"/"+e.TransformationSubtype, "/"),
				Masking: e.Masking})
		}
	}
	return out, nil
}

func findSuggestion(ctx context.Context, client *ent.Client, id uuid.UUID, key SuggestionKey) (Suggestion, error) {
	all, err := suggestions(ctx, client, id)
	if err != nil {
		return Suggestion{}, err
	}
	for _, s := range all {
		if s.ColumnPath == key.ColumnPath && s.Tag == key.Tag && s.FromColumnID == key.FromColumnID {
			return s, nil
		}
	}
	return Suggestion{}, conflict("%s on column %s of asset %s is not suggested any more (accepted, rejected, or its source changed); read the suggestions again", key.Tag, key.ColumnPath, id)
}

// AcceptSuggestion applies a pending suggestion as a label with source propagation (naming where
// it came from), against the asset version the person saw. The suggestion is derived again inside
// the transaction, so one that went away meanwhile is refused. A column the asset has no record
// of yet (known from column lineage only) is recorded first.
func (c *Catalog) AcceptSuggestion(ctx context.Context, id uuid.UUID, expected int64, key SuggestionKey) (Asset, error) {
	return c.mutateNoted(ctx, id, expected, ActionLabelAdd, false, suggestionFields(key), func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		s, err := findSuggestion(ctx, tx.Client(), id, key)
		if err != nil {
			return false, err
		}
		colID := s.ColumnID
		if colID == uuid.Nil {
			n, err := tx.Column.Query().Where(column.AssetID(id), column.RemovedAtIsNil()).Count(ctx)
			if err != nil {
				return false, fmt.Errorf("catalog: count columns: %w", err)
			}
			row, err := tx.Column.Create().SetAssetID(id).SetPath(s.ColumnPath).SetOrdinal(n).SetAddedAt(now).Save(ctx)
			if err != nil {
				return false, fmt.Errorf("catalog: record column %s: %w", s.ColumnPath, err)
			}
			colID = row.ID
		}
		from, fromCol := s.FromAssetID, s.FromColumnID
		return c.addLabel(ctx, tx, id, LabelInput{ColumnID: colID, Kind: LabelTag, Value: s.Tag, Source: SourcePropagation,
			fromAssetID: &from, fromColumnID: &fromCol}, now, note)
	})
}

// RejectSuggestion records a person's no, so the suggestion is not shown again.
func (c *Catalog) RejectSuggestion(ctx context.Context, id uuid.UUID, expected int64, key SuggestionKey) (Asset, error) {
	return c.mutateNoted(ctx, id, expected, ActionSuggestionReject, false, suggestionFields(key), func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error) {
		s, err := findSuggestion(ctx, tx.Client(), id, key)
		if err != nil {
			return false, err
		}
		if err := tx.SuggestionDecision.Create().SetAssetID(id).SetColumnPath(s.ColumnPath).SetTag(s.Tag).
			SetFromColumnID(s.FromColumnID).SetDecidedBy(ActorFrom(ctx)).SetDecidedAt(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: reject suggestion: %w", err)
		}
		note.after = s
		return true, nil
	})
}

// suggestionFields is what deciding on a suggestion depends on: the suggestion, the tag on its
// column, and the column.
func suggestionFields(key SuggestionKey) dependsOn {
	tag := labelField(LabelTag, key.Tag)
	tag.Column = key.ColumnPath
	return fields(field{What: "suggestion", Column: key.ColumnPath, Value: key.Tag}, tag, field{What: "column", Column: key.ColumnPath})
}
