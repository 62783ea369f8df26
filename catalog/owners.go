package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/ent/owner"
)

// SetOwner makes principal an owner of the asset with the given kind and role. Setting an owner
// that is already there with the same kind and role changes nothing; a different kind or role
// closes the old interval and opens a new one, so the history shows the change. expected is the
// version the caller saw (AnyVersion for none): a person decides on the owners a page showed.
func (c *Catalog) SetOwner(ctx context.Context, id uuid.UUID, expected int64, in OwnerInput) (Asset, error) {
	if err := validateOwner(&in); err != nil {
		return Asset{}, err
	}
	a, err := c.mutate(ctx, id, expected, ActionOwnerSet, false, fields(field{What: "owner", Value: in.Principal}), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		cur, err := tx.Owner.Query().Where(owner.AssetID(id), owner.Principal(in.Principal), owner.RemovedAtIsNil()).Only(ctx)
		switch {
		case err == nil:
			if OwnerKind(cur.Kind) == in.Kind && cur.Role == in.Role {
				return false, nil
			}
			if err := tx.Owner.UpdateOne(cur).SetRemovedAt(now).Exec(ctx); err != nil {
				return false, fmt.Errorf("catalog: close owner: %w", err)
			}
		case !ent.IsNotFound(err):
			return false, fmt.Errorf("catalog: read owner: %w", err)
		}
		if err := tx.Owner.Create().SetAssetID(id).SetPrincipal(in.Principal).SetKind(owner.Kind(in.Kind)).
			SetRole(in.Role).SetAddedAt(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: add owner: %w", err)
		}
		return true, nil
	})
	if ent.IsConstraintError(err) {
		return Asset{}, conflict("owner %q of asset %s was changed concurrently; retry", in.Principal, id)
	}
	return a, err
}

// RemoveOwner ends principal's ownership of the asset; expected as in SetOwner.
func (c *Catalog) RemoveOwner(ctx context.Context, id uuid.UUID, expected int64, principal string) (Asset, error) {
	if err := validateText("principal", principal, MaxPrincipalBytes); err != nil {
		return Asset{}, err
	}
	return c.mutate(ctx, id, expected, ActionOwnerRemove, false, fields(field{What: "owner", Value: principal}), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		n, err := tx.Owner.Update().Where(owner.AssetID(id), owner.Principal(principal), owner.RemovedAtIsNil()).
			SetRemovedAt(now).Save(ctx)
		if err != nil {
			return false, fmt.Errorf("catalog: remove owner: %w", err)
		}
		if n == 0 {
			return false, notFound("%q is not an owner of asset %s", principal, id)
		}
		return true, nil
	})
}

// BindExternalID binds an identity from another system to the asset. Binding an ID the asset
// already has changes nothing; an ID bound to another asset is a conflict (the catalog will not
// silently move an identity between assets).
func (c *Catalog) BindExternalID(ctx context.Context, id uuid.UUID, in ExternalIDInput) (Asset, error) {
	return c.bindExternalID(ctx, id, in, false)
}

// BindOnlyExternalID binds an identity as BindExternalID does, unless the asset already holds
// another identity of the same system (a conflict): an asset is one Iceberg table, whatever
// races to adopt it. The check runs after the asset's row is locked, so racing binds of two
// values cannot both succeed.
func (c *Catalog) BindOnlyExternalID(ctx context.Context, id uuid.UUID, in ExternalIDInput) (Asset, error) {
	return c.bindExternalID(ctx, id, in, true)
}

// UnbindExternalID removes an identity the asset holds (nothing when it does not hold it).
func (c *Catalog) UnbindExternalID(ctx context.Context, id uuid.UUID, in ExternalIDInput) error {
	_, err := c.mutate(ctx, id, AnyVersion, ActionBindID, true, nil, func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		n, err := tx.ExternalID.Delete().Where(externalid.AssetID(id), externalid.System(in.System), externalid.Value(in.Value)).Exec(ctx)
		return n > 0, err
	})
	return err
}

func (c *Catalog) bindExternalID(ctx context.Context, id uuid.UUID, in ExternalIDInput, only bool) (Asset, error) {
	if err := validateExternalID(in); err != nil {
		return Asset{}, err
	}
	a, err := c.mutate(ctx, id, AnyVersion, ActionBindID, false, nil, func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		if only {
			other, err := tx.ExternalID.Query().Where(externalid.AssetID(id), externalid.System(in.System), externalid.ValueNEQ(in.Value)).First(ctx)
			if err == nil {
				return false, conflict("asset %s is already bound to %s:%s", id, in.System, other.Value)
			}
			if !ent.IsNotFound(err) {
				return false, fmt.Errorf("catalog: look up external ids: %w", err)
			}
		}
		row, err := tx.ExternalID.Query().Where(externalid.System(in.System), externalid.Value(in.Value)).Only(ctx)
		switch {
		case err == nil && row.AssetID == id:
			return false, nil
		case err == nil:
			return false, conflict("external ID %s:%s is bound to asset %s", in.System, in.Value, row.AssetID)
		case !ent.IsNotFound(err):
			return false, fmt.Errorf("catalog: look up external id: %w", err)
		}
		if err := tx.ExternalID.Create().SetAssetID(id).SetSystem(in.System).SetValue(in.Value).
			SetCreatedAt(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: bind external id: %w", err)
		}
		return true, nil
	})
	if ent.IsConstraintError(err) {
		return Asset{}, conflict("external ID %s:%s was bound concurrently by another request", in.System, in.Value)
	}
	return a, err
}
