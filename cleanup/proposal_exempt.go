package cleanup

// Exemptions of assets from proposal kinds: set by people, heeded by the proposer and executor.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupexemption"
)

// Exempt sets or clears an asset's exemption from the given proposal kinds (unused_asset,
// orphan_files, expire_snapshots; none given: unused_asset). Setting replaces the kinds.
func (s *Service) Exempt(ctx context.Context, asset uuid.UUID, exempt bool, reason string, kinds ...string) error {
	if _, err := s.cat.Get(ctx, asset); err != nil {
		return err
	}
	if len(kinds) == 0 {
		kinds = []string{KindUnusedAsset}
	}
	for _, k := range kinds {
		if !slices.Contains([]string{KindUnusedAsset, KindOrphanFiles, KindExpireSnapshots}, k) {
			return &catalog.Error{Kind: catalog.ErrInvalid, Field: "kinds", Message: fmt.Sprintf("%q cannot be exempted: give unused_asset, orphan_files or expire_snapshots", k)}
		}
	}
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	joined := strings.Join(kinds, ",")
	return s.tx(ctx, func(tx *ent.Tx) error {
		if !exempt {
			if _, err := tx.CleanupExemption.Delete().Where(cleanupexemption.ID(asset)).Exec(ctx); err != nil {
				return err
			}
		} else {
			// Look first: on PostgreSQL a failed insert aborts the transaction it ran in.
			found, err := tx.CleanupExemption.Query().Where(cleanupexemption.ID(asset)).Exist(ctx)
			if err != nil {
				return err
			}
			if found {
				err = tx.CleanupExemption.UpdateOneID(asset).SetKinds(joined).SetReason(reason).SetBy(catalog.ActorFrom(ctx)).SetAt(s.clock()).Exec(ctx)
			} else {
				err = tx.CleanupExemption.Create().SetID(asset).SetKinds(joined).SetReason(reason).SetBy(catalog.ActorFrom(ctx)).SetAt(s.clock()).Exec(ctx)
			}
			if err != nil {
				return err
			}
		}
		return s.cat.RecordAudit(ctx, tx, "cleanup.exempt", asset, nil, map[string]any{"exempt": exempt, "reason": reason, "kinds": kinds})
	})
}

// exempt reports whether a person exempted the asset from a proposal kind.
func (s *Service) exempt(ctx context.Context, asset uuid.UUID, kind string) (bool, error) {
	row, err := s.db.CleanupExemption.Get(ctx, asset)
	if ent.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return slices.Contains(strings.Split(row.Kinds, ","), kind), nil
}
