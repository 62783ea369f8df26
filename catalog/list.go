package catalog

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/ent/owner"
	"github.com/tidemark/tidemark/ent/predicate"
)

// ListFilter selects assets. Namespace and Query match current names; zero fields match all.
type ListFilter struct {
	Namespace string
	// NamespaceContains is a case-insensitive substring of the current namespace (the UI's
	// browse filter: "ware" finds warehouse and s3://warehouse).
	NamespaceContains string
	Query             string // case-insensitive substring of the current name
	Kind              Kind
	Status            Status // empty: active and deprecated (deleted assets only when asked for)
	After             uuid.UUID
	Limit             int
}

// List returns assets in ID order (creation order, since IDs are UUIDv7), starting after
// f.After, and whether more follow. The order is stable under concurrent inserts, so a cursor
// never skips or repeats an asset that existed when paging began.
func (c *Catalog) List(ctx context.Context, f ListFilter) ([]Asset, bool, error) {
	if f.Limit <= 0 {
		return nil, false, invalid("limit", "limit must be positive")
	}
	where, err := listWhere(f)
	if err != nil {
		return nil, false, err
	}
	if f.After != uuid.Nil {
		where = append(where, asset.IDGT(f.After))
	}
	rows, err := c.client(ctx).Asset.Query().Where(where...).
		WithExternalIds(func(q *ent.ExternalIDQuery) { q.Order(ent.Asc(externalid.FieldID)) }).
		WithOwners(func(q *ent.OwnerQuery) { q.Where(owner.RemovedAtIsNil()).Order(ent.Asc(owner.FieldPrincipal)) }).
		Order(ent.Asc(asset.FieldID)).Limit(f.Limit + 1).All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: list assets: %w", err)
	}
	more := len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	latest, err := latestNames(ctx, c.client(ctx), ids)
	if err != nil {
		return nil, false, err
	}
	out := make([]Asset, len(rows))
	for i, r := range rows {
		out[i] = toAsset(r, latest[r.ID])
	}
	return out, more, nil
}

// Count is how many assets List would page through for f (its After and Limit aside).
func (c *Catalog) Count(ctx context.Context, f ListFilter) (int, error) {
	where, err := listWhere(f)
	if err != nil {
		return 0, err
	}
	n, err := c.client(ctx).Asset.Query().Where(where...).Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("catalog: count assets: %w", err)
	}
	return n, nil
}

// listWhere is f as predicates, cursor aside.
func listWhere(f ListFilter) ([]predicate.Asset, error) {
	var where []predicate.Asset
	switch f.Status {
	case "":
		where = append(where, asset.StatusNEQ(asset.StatusDeleted))
	default:
		if _, err := ParseStatus(string(f.Status)); err != nil {
			return nil, err
		}
		where = append(where, asset.StatusEQ(asset.Status(f.Status)))
	}
	if f.Kind != "" {
		if _, err := ParseKind(string(f.Kind)); err != nil {
			return nil, err
		}
		where = append(where, asset.KindEQ(asset.Kind(f.Kind)))
	}
	if f.Namespace != "" || f.NamespaceContains != "" || f.Query != "" {
		names := []predicate.AssetName{assetname.ValidToIsNil()}
		if f.Namespace != "" {
			names = append(names, assetname.Namespace(f.Namespace))
		}
		if f.NamespaceContains != "" {
			names = append(names, assetname.NamespaceContainsFold(f.NamespaceContains))
		}
		if f.Query != "" {
			names = append(names, assetname.NameContainsFold(f.Query))
		}
		where = append(where, asset.HasNamesWith(names...))
	}
	return where, nil
}
