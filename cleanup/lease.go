package cleanup

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuplease"
)

// claim takes the lease on (asset, shard) for holder until now+ttl, unless another holder has
// it and it has not expired. One statement, an upsert whose update applies only to an expired
// lease or the holder's own: two replicas racing for a shard never see an error, and nothing
// runs in a transaction PostgreSQL has aborted (a failed INSERT would abort it).
func (s *Service) claim(ctx context.Context, asset uuid.UUID, shard string, ttl time.Duration) (bool, error) {
	now := s.clock()
	rows, err := s.db.QueryContext(ctx, `INSERT INTO cleanup_leases (id, asset_id, shard, holder, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (asset_id, shard) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE cleanup_leases.expires_at < $6 OR cleanup_leases.holder = excluded.holder
RETURNING holder`, uuid.Must(uuid.NewV7()), asset, shard, s.holder, now.Add(ttl), now)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	got := rows.Next()
	return got, errors.Join(rows.Err(), rows.Close())
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
