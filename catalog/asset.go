package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/ent/owner"
)

// Asset is an asset as the catalog describes it: identity, status, its latest name, and what
// hangs off it now.
type Asset struct {
	ID          uuid.UUID    `json:"id"`
	Kind        Kind         `json:"kind"`
	Status      Status       `json:"status"`
	Version     int64        `json:"version"`
	Namespace   string       `json:"namespace"` // latest name; released (not current) once deleted
	Name        string       `json:"name"`
	Description string       `json:"description"`
	CreatedAt   time.Time    `json:"created_at"`
	UpdatedAt   time.Time    `json:"updated_at"`
	DeletedAt   *time.Time   `json:"deleted_at,omitempty"`
	ExternalIDs []ExternalID `json:"external_ids"`
	Owners      []Owner      `json:"owners"` // current owners only; see Owners for history
}

// Name is one interval of an asset's name history; ValidTo is nil while current.
type Name struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	ValidFrom time.Time  `json:"valid_from"`
	ValidTo   *time.Time `json:"valid_to,omitempty"`
}

// Current reports whether the name is held now.
func (n Name) Current() bool { return n.ValidTo == nil }

// ExternalID is an identity in another system bound to an asset.
type ExternalID struct {
	System  string    `json:"system"`
	Value   string    `json:"value"`
	BoundAt time.Time `json:"bound_at"`
}

// Owner is one ownership interval.
type Owner struct {
	Principal string     `json:"principal"`
	Kind      OwnerKind  `json:"kind"`
	Role      string     `json:"role"`
	AddedAt   time.Time  `json:"added_at"`
	RemovedAt *time.Time `json:"removed_at,omitempty"`
}

// Get returns the asset with id.
func (c *Catalog) Get(ctx context.Context, id uuid.UUID) (Asset, error) {
	return load(ctx, c.client(ctx), id)
}

// load reads an asset and what hangs off it through client (the catalog's or a transaction's).
func load(ctx context.Context, client *ent.Client, id uuid.UUID) (Asset, error) {
	row, err := client.Asset.Query().Where(asset.ID(id)).
		WithExternalIds(func(q *ent.ExternalIDQuery) { q.Order(ent.Asc(externalid.FieldID)) }).
		WithOwners(func(q *ent.OwnerQuery) { q.Where(owner.RemovedAtIsNil()).Order(ent.Asc(owner.FieldPrincipal)) }).
		Only(ctx)
	if ent.IsNotFound(err) {
		return Asset{}, notFound("asset %s does not exist", id)
	}
	if err != nil {
		return Asset{}, fmt.Errorf("catalog: load asset %s: %w", id, err)
	}
	latest, err := latestNames(ctx, client, []uuid.UUID{id})
	if err != nil {
		return Asset{}, err
	}
	return toAsset(row, latest[id]), nil
}

// GetMany returns the assets with ids that exist, in the order of ids (a search page's assets
// in full, with three queries instead of three per asset).
func (c *Catalog) GetMany(ctx context.Context, ids []uuid.UUID) ([]Asset, error) {
	if len(ids) == 0 {
		return []Asset{}, nil
	}
	client := c.client(ctx)
	rows, err := client.Asset.Query().Where(asset.IDIn(ids...)).
		WithExternalIds(func(q *ent.ExternalIDQuery) { q.Order(ent.Asc(externalid.FieldID)) }).
		WithOwners(func(q *ent.OwnerQuery) { q.Where(owner.RemovedAtIsNil()).Order(ent.Asc(owner.FieldPrincipal)) }).
		All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: load assets: %w", err)
	}
	latest, err := latestNames(ctx, client, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]*ent.Asset, len(rows))
	for _, r := range rows {
		byID[r.ID] = r
	}
	out := make([]Asset, 0, len(rows))
	for _, id := range ids {
		if r, ok := byID[id]; ok {
			out = append(out, toAsset(r, latest[id]))
		}
	}
	return out, nil
}

// latestNames returns the newest name row of each asset: the current name, or for a deleted
// asset the name it held when deleted. Current names come from the partial unique index in one
// query; only deleted assets need a second query over their (short) histories.
func latestNames(ctx context.Context, client *ent.Client, ids []uuid.UUID) (map[uuid.UUID]*ent.AssetName, error) {
	out := make(map[uuid.UUID]*ent.AssetName, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := client.AssetName.Query().Where(assetname.AssetIDIn(ids...), assetname.ValidToIsNil()).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: load names: %w", err)
	}
	for _, r := range rows {
		out[r.AssetID] = r
	}
	var missing []uuid.UUID // deleted assets: no current name, so the newest closed one
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	rows, err = client.AssetName.Query().Where(assetname.AssetIDIn(missing...)).
		Order(ent.Asc(assetname.FieldAssetID), ent.Desc(assetname.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: load last names: %w", err)
	}
	for _, r := range rows {
		if _, seen := out[r.AssetID]; !seen {
			out[r.AssetID] = r
		}
	}
	return out, nil
}

func toAsset(row *ent.Asset, name *ent.AssetName) Asset {
	a := Asset{
		ID:          row.ID,
		Kind:        Kind(row.Kind),
		Status:      Status(row.Status),
		Version:     row.Version,
		Description: row.Description,
		CreatedAt:   row.CreatedAt.UTC(),
		UpdatedAt:   row.UpdatedAt.UTC(),
		DeletedAt:   utcPtr(row.DeletedAt),
		ExternalIDs: []ExternalID{},
		Owners:      []Owner{},
	}
	if name != nil {
		a.Namespace, a.Name = name.Namespace, name.Name
	}
	for _, x := range row.Edges.ExternalIds {
		a.ExternalIDs = append(a.ExternalIDs, ExternalID{System: x.System, Value: x.Value, BoundAt: x.CreatedAt.UTC()})
	}
	for _, o := range row.Edges.Owners {
		a.Owners = append(a.Owners, toOwner(o))
	}
	return a
}

func toOwner(o *ent.Owner) Owner {
	return Owner{Principal: o.Principal, Kind: OwnerKind(o.Kind), Role: o.Role, AddedAt: o.AddedAt.UTC(), RemovedAt: utcPtr(o.RemovedAt)}
}

func toName(n *ent.AssetName) Name {
	return Name{Namespace: n.Namespace, Name: n.Name, ValidFrom: n.ValidFrom.UTC(), ValidTo: utcPtr(n.ValidTo)}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Names returns an asset's name history, oldest first.
func (c *Catalog) Names(ctx context.Context, id uuid.UUID) ([]Name, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	rows, err := c.client(ctx).AssetName.Query().Where(assetname.AssetID(id)).Order(ent.Asc(assetname.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: names of %s: %w", id, err)
	}
	out := make([]Name, len(rows))
	for i, r := range rows {
		out[i] = toName(r)
	}
	return out, nil
}

// Owners returns an asset's ownership history (current and removed), oldest first.
func (c *Catalog) Owners(ctx context.Context, id uuid.UUID) ([]Owner, error) {
	if err := c.exists(ctx, id); err != nil {
		return nil, err
	}
	rows, err := c.client(ctx).Owner.Query().Where(owner.AssetID(id)).Order(ent.Asc(owner.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: owners of %s: %w", id, err)
	}
	out := make([]Owner, len(rows))
	for i, r := range rows {
		out[i] = toOwner(r)
	}
	return out, nil
}

func (c *Catalog) exists(ctx context.Context, id uuid.UUID) error {
	ok, err := c.client(ctx).Asset.Query().Where(asset.ID(id)).Exist(ctx)
	if err != nil {
		return fmt.Errorf("catalog: look up asset %s: %w", id, err)
	}
	if !ok {
		return notFound("asset %s does not exist", id)
	}
	return nil
}
