package cleanup

import (
	"context"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuplease"
)

// claim takes the lease on (asset, shard) for holder until now+ttl, unless another holder has
// it and it has not expired. On PostgreSQL the row is locked with FOR UPDATE SKIP LOCKED, so a
// replica that is claiming the same shard right now is skipped rather than waited for.
func (s *Service) claim(ctx context.Context, asset uuid.UUID, shard string, ttl time.Duration) (bool, error) {
	now := s.clock()
	got := false
	err := s.tx(ctx, func(tx *ent.Tx) error {
		q := tx.CleanupLease.Query().Where(cleanuplease.AssetID(asset), cleanuplease.Shard(shard))
		if !s.sqlite {
			q = q.ForUpdate(sql.WithLockAction(sql.SkipLocked))
		}
		row, err := q.Only(ctx)
		switch {
		case ent.IsNotFound(err):
			err = tx.CleanupLease.Create().SetAssetID(asset).SetShard(shard).SetHolder(s.holder).SetExpiresAt(now.Add(ttl)).Exec(ctx)
			if ent.IsConstraintError(err) {
				return nil // taken (or being taken) by another replica
			}
			got = err == nil
			return err
		case err != nil:
			return err
		}
		if row.Holder != s.holder && row.ExpiresAt.After(now) {
			return nil
		}
		got = true
		return row.Update().SetHolder(s.holder).SetExpiresAt(now.Add(ttl)).Exec(ctx)
	})
	if ent.IsConstraintError(err) {
		return false, nil
	}
	return got, err
}

// renew extends a lease this worker holds.
func (s *Service) renew(ctx context.Context, asset uuid.UUID, shard string, ttl time.Duration) error {
	return s.db.CleanupLease.Update().Where(cleanuplease.AssetID(asset), cleanuplease.Shard(shard), cleanuplease.Holder(s.holder)).
		SetExpiresAt(s.clock().Add(ttl)).Exec(ctx)
}

// release gives a lease back.
func (s *Service) release(ctx context.Context, asset uuid.UUID, shard string) {
	if _, err := s.db.CleanupLease.Delete().Where(cleanuplease.AssetID(asset), cleanuplease.Shard(shard), cleanuplease.Holder(s.holder)).Exec(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("release cleanup lease; it will expire", "asset_id", asset, "shard", shard, "err", err)
	}
}

func (s *Service) tx(ctx context.Context, fn func(tx *ent.Tx) error) error {
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
