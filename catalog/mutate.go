package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
)

// AnyVersion skips the optimistic-concurrency check (for ingest paths that apply facts as they
// arrive rather than edits made against a version a person saw).
const AnyVersion int64 = 0

// maxVersionRetries bounds how often a change without an expected version re-reads the asset
// after losing a race for its version (each loss means another change committed).
const maxVersionRetries = 100

// mutate runs the common shape of every change to an existing asset in one transaction: read the
// before state, refuse deleted assets (unless allowDeleted), claim the next version (failing
// with ErrStaleVersion when expected is set, out of date, and a change since touched what deps
// names; see checkSince), apply change, then record the audit event with the after state. change returns false when there was nothing to do; a no-op
// leaves no version bump and no audit event.
func (c *Catalog) mutate(ctx context.Context, id uuid.UUID, expected int64, action string, allowDeleted bool, deps dependsOn,
	change func(tx *ent.Tx, before Asset, now time.Time) (bool, error)) (Asset, error) {
	return c.mutateNoted(ctx, id, expected, action, allowDeleted, deps, func(tx *ent.Tx, before Asset, now time.Time, _ *auditNote) (bool, error) {
		return change(tx, before, now)
	})
}

// auditNote is what a change records in the audit log when the asset's own before and after
// states would not show it (a label, a column's description).
type auditNote struct{ before, after any }

// mutateNoted is mutate for changes that describe themselves in the audit log through note.
func (c *Catalog) mutateNoted(ctx context.Context, id uuid.UUID, expected int64, action string, allowDeleted bool, deps dependsOn,
	change func(tx *ent.Tx, before Asset, now time.Time, note *auditNote) (bool, error)) (Asset, error) {
	var out Asset
	err := c.tx(ctx, func(tx *ent.Tx) error {
		var before Asset
		var now time.Time
		for attempt := 1; ; attempt++ {
			var err error
			if before, err = load(ctx, tx.Client(), id); err != nil {
				return err
			}
			if before.Status == StatusDeleted && !allowDeleted {
				return conflict("asset %s was deleted at %s; deleted assets cannot change", id, before.DeletedAt.Format(time.RFC3339))
			}
			if expected != AnyVersion && before.Version != expected {
				// Moved on since the caller read it: go ahead at the current version unless a
				// change since touched what this edit depends on.
				if err := checkSince(ctx, tx.Client(), before, expected, deps); err != nil {
					return err
				}
			}
			now = c.Now()
			// The conditional update is the real guard: on PostgreSQL a concurrent writer blocks
			// on the row and then sees its version moved; on SQLite writers are serialised.
			n, err := tx.Asset.Update().Where(asset.ID(id), asset.Version(before.Version)).
				AddVersion(1).SetUpdatedAt(now).Save(ctx)
			if err != nil {
				return fmt.Errorf("catalog: bump version of %s: %w", id, err)
			}
			if n == 1 {
				break
			}
			// Lost a race. A caller that named a version for the whole asset is told; one that
			// did not (or named the fields it depends on) meant "the current one", so read it
			// again (under read committed the next read sees the winner's commit) and retry,
			// checking the fields again: a version race on another field is never its problem.
			if expected != AnyVersion && deps == nil || attempt == maxVersionRetries {
				return staleVersion(id, expected, before.Version)
			}
		}
		var note auditNote
		changed, err := change(tx, before, now, &note)
		if err != nil {
			return err
		}
		if !changed {
			// Nothing to do: give the version back (the claim above was only a lock), so a no-op
			// leaves no trace, also when this runs inside a caller's transaction.
			out = before
			return tx.Asset.UpdateOneID(id).SetVersion(before.Version).SetUpdatedAt(before.UpdatedAt).Exec(ctx)
		}
		if err := c.reindex(ctx, tx.Client(), id); err != nil {
			return err
		}
		after, err := load(ctx, tx.Client(), id)
		if err != nil {
			return err
		}
		out = after
		if note.before != nil || note.after != nil {
			b, err := versioned(note.before, before.Version)
			if err != nil {
				return err
			}
			a, err := versioned(note.after, after.Version)
			if err != nil {
				return err
			}
			return c.audit(ctx, tx, now, action, id, b, a)
		}
		return c.audit(ctx, tx, now, action, id, before, after)
	})
	if err == nil && out.Version != 0 {
		c.changed(ctx, nil, id)
	}
	return out, err
}
func staleVersion(id uuid.UUID, expected, current int64) error {
	return &Error{Kind: ErrStaleVersion, Field: "If-Match", Message: fmt.Sprintf(
		"asset %s is at version %d, not %d: it changed since you read it; read it again and retry", id, current, expected)}
}

// Rename gives an asset a new name, keeping its ID and everything keyed on it. The old name is
// closed (it keeps resolving, as a former name) and the new one opened at the same instant. An
// empty namespace keeps the current one. expected is the version the caller saw (AnyVersion to
// skip the check).
func (c *Catalog) Rename(ctx context.Context, id uuid.UUID, expected int64, namespace, name string) (Asset, error) {
	return c.rename(ctx, id, expected, namespace, name, nil)
}

// RenameFound records a rename that was made elsewhere (an engine renamed the table in its
// Iceberg catalog) and found now, known only to have happened after since (the last listing
// that showed the old name). The new name is recorded from now, as usual, with since as the
// start of its uncertain interval: usage under the new name from since on resolves to the asset
// too (as a rename-window attribution), unless another asset held the name then.
func (c *Catalog) RenameFound(ctx context.Context, id uuid.UUID, namespace, name string, since time.Time) (Asset, error) {
	return c.rename(ctx, id, AnyVersion, namespace, name, &since)
}

func (c *Catalog) rename(ctx context.Context, id uuid.UUID, expected int64, namespace, name string, since *time.Time) (Asset, error) {
	a, err := c.mutate(ctx, id, expected, ActionRename, false, fields(field{What: "name"}, field{What: "status"}), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		if namespace == "" {
			namespace = before.Namespace
		}
		if err := ValidateName(namespace, name); err != nil {
			return false, err
		}
		if namespace == before.Namespace && name == before.Name {
			return false, invalid("name", "asset %s is already named %s.%s", id, namespace, name)
		}
		if holder, ok, err := currentHolder(ctx, tx.Client(), SpaceOf(before.Kind), namespace, name); err != nil {
			return false, err
		} else if ok {
			return false, nameTaken(namespace, name, holder)
		}
		cur, err := tx.AssetName.Query().Where(assetname.AssetID(id), assetname.ValidToIsNil()).Only(ctx)
		if err != nil {
			return false, fmt.Errorf("catalog: current name of %s: %w", id, err)
		}
		if now.Before(cur.ValidFrom) {
			now = cur.ValidFrom // a clock step back must not make an interval end before it began
		}
		if err := tx.AssetName.UpdateOne(cur).SetValidTo(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: close name: %w", err)
		}
		open := tx.AssetName.Create().SetAssetID(id).SetSpace(assetname.Space(SpaceOf(before.Kind))).SetNamespace(namespace).SetName(name).
			SetValidFrom(now)
		if since != nil && since.Before(now) {
			// Never before the old name began: the asset was not renamed before it had it.
			open.SetUncertainFrom(later(since.UTC(), cur.ValidFrom))
		}
		if err := open.Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: open name: %w", err)
		}
		return true, nil
	})
	if ent.IsConstraintError(err) {
		// Another transaction took the name between our check and our insert.
		return Asset{}, nameTaken(namespace, name, uuid.Nil)
	}
	return a, err
}

func nameTaken(namespace, name string, holder uuid.UUID) error {
	who := "another asset"
	if holder != uuid.Nil {
		who = "asset " + holder.String()
	}
	return &Error{Kind: ErrNameTaken, Field: "name", Message: fmt.Sprintf(
		"name %s.%s is held by %s; rename or delete that asset first, or pick another name", namespace, name, who)}
}

// UpdateInput changes an asset's attributes; nil fields stay as they are.
type UpdateInput struct {
	Description *string
	Status      *Status // active or deprecated; deleting goes through Delete
}

// Update changes an asset's description or status.
func (c *Catalog) Update(ctx context.Context, id uuid.UUID, expected int64, in UpdateInput) (Asset, error) {
	if in.Description != nil {
		if err := validateDescription(*in.Description); err != nil {
			return Asset{}, err
		}
	}
	if in.Status != nil && *in.Status != StatusActive && *in.Status != StatusDeprecated {
		return Asset{}, invalid("status", "status can be set to active or deprecated; use DELETE to delete an asset")
	}
	var deps []field
	if in.Description != nil {
		deps = append(deps, field{What: "description"})
	}
	if in.Status != nil {
		deps = append(deps, field{What: "status"})
	}
	return c.mutate(ctx, id, expected, ActionUpdate, false, fields(deps...), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		u := tx.Asset.UpdateOneID(id)
		changed := false
		if in.Description != nil && *in.Description != before.Description {
			u.SetDescription(*in.Description)
			changed = true
		}
		if in.Status != nil && *in.Status != before.Status {
			u.SetStatus(asset.Status(*in.Status))
			changed = true
		}
		if !changed {
			return false, nil
		}
		return true, u.Exec(ctx)
	})
}

// Delete soft-deletes an asset: its status becomes deleted and its current name is released
// (closed), so another asset may take it. Its ID, history, owners and external IDs stay, and its
// names still resolve, as former names. Deleting a deleted asset changes nothing.
func (c *Catalog) Delete(ctx context.Context, id uuid.UUID, expected int64) (Asset, error) {
	return c.mutate(ctx, id, expected, ActionDelete, true, fields(field{What: "name"}, field{What: "status"}), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		if before.Status == StatusDeleted {
			return false, nil
		}
		if err := tx.Asset.UpdateOneID(id).SetStatus(asset.StatusDeleted).SetDeletedAt(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: delete %s: %w", id, err)
		}
		if err := tx.AssetName.Update().Where(assetname.AssetID(id), assetname.ValidToIsNil()).
			SetValidTo(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: release name of %s: %w", id, err)
		}
		return true, nil
	})
}

// Restore undoes a soft delete: the asset is active again under the name it held when deleted,
// provided no other asset has taken that name since (ErrNameTaken otherwise). Restoring an
// active asset changes nothing.
func (c *Catalog) Restore(ctx context.Context, id uuid.UUID, expected int64) (Asset, error) {
	a, err := c.mutate(ctx, id, expected, ActionRestore, true, fields(field{What: "name"}, field{What: "status"}), func(tx *ent.Tx, before Asset, now time.Time) (bool, error) {
		if before.Status != StatusDeleted {
			return false, nil
		}
		if holder, ok, err := currentHolder(ctx, tx.Client(), SpaceOf(before.Kind), before.Namespace, before.Name); err != nil {
			return false, err
		} else if ok {
			return false, nameTaken(before.Namespace, before.Name, holder)
		}
		if err := tx.Asset.UpdateOneID(id).SetStatus(asset.StatusActive).ClearDeletedAt().Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: restore %s: %w", id, err)
		}
		if err := tx.AssetName.Create().SetAssetID(id).SetSpace(assetname.Space(SpaceOf(before.Kind))).SetNamespace(before.Namespace).SetName(before.Name).
			SetValidFrom(now).Exec(ctx); err != nil {
			return false, fmt.Errorf("catalog: reopen name of %s: %w", id, err)
		}
		return true, nil
	})
	if ent.IsConstraintError(err) {
		return Asset{}, nameTaken(a.Namespace, a.Name, uuid.Nil)
	}
	return a, err
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
