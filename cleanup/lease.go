package cleanup

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/cleanuplease"
	"github.com/tidemark/tidemark/internal/loop"
)

// lease is a claim on (asset, shard): the holder is this Service, the token its fencing token.
type lease struct {
	asset uuid.UUID
	shard string
	token int64
}

// errLeaseLost says a lease expired and was claimed by another worker (or this one anew) since.
var errLeaseLost = errors.New("the lease was lost: another worker took over after it expired")

// claim takes the lease on (asset, shard) for holder until now+ttl, unless another holder has
// it and it has not expired. One statement, an upsert whose update applies only to an expired
// lease or the holder's own: two replicas racing for a shard never see an error, and nothing
// runs in a transaction PostgreSQL has aborted (a failed INSERT would abort it). Every claim
// gets a new fencing token.
func (s *Service) claim(ctx context.Context, asset uuid.UUID, shard string, ttl time.Duration) (*lease, error) {
	now := s.clock()
	rows, err := s.db.QueryContext(ctx, `INSERT INTO cleanup_leases (id, asset_id, shard, holder, expires_at, token) VALUES ($1, $2, $3, $4, $5, 1)
ON CONFLICT (asset_id, shard) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, token = cleanup_leases.token + 1
WHERE cleanup_leases.expires_at < $6 OR cleanup_leases.holder = excluded.holder
RETURNING token`, uuid.Must(uuid.NewV7()), asset, shard, s.holder, now.Add(ttl), now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var l *lease
	if rows.Next() {
		l = &lease{asset: asset, shard: shard}
		if err := rows.Scan(&l.token); err != nil {
			return nil, err
		}
	}
	return l, errors.Join(rows.Err(), rows.Close())
}

// renew extends a lease this worker holds, and fails with errLeaseLost when it no longer does.
func (s *Service) renew(ctx context.Context, l *lease, ttl time.Duration) error {
	now := s.clock()
	n, err := s.db.CleanupLease.Update().Where(cleanuplease.AssetID(l.asset), cleanuplease.Shard(l.shard), cleanuplease.Holder(s.holder),
		cleanuplease.Token(l.token), cleanuplease.ExpiresAtGTE(now)).SetExpiresAt(now.Add(ttl)).Save(ctx)
	if err == nil && n == 0 {
		err = errLeaseLost
	}
	return err
}

// release gives a lease back (only the claim it was: a later claim's token differs).
func (s *Service) release(ctx context.Context, l *lease) {
	if _, err := s.db.CleanupLease.Delete().Where(cleanuplease.AssetID(l.asset), cleanuplease.Shard(l.shard), cleanuplease.Holder(s.holder),
		cleanuplease.Token(l.token)).Exec(context.WithoutCancel(ctx)); err != nil {
		s.log.Warn("release cleanup lease; it will expire", "asset_id", l.asset, "shard", l.shard, "err", err)
	}
}

// keepRenewing renews l every ttl/3 until stop is called; when the lease is lost it cancels the
// work (through cancel) so a worker that lost its lease stops.
func (s *Service) keepRenewing(ctx context.Context, l *lease, ttl time.Duration, cancel context.CancelCauseFunc) (stop func()) {
	return ticking(ctx, ttl/3, func() bool {
		err := s.renew(ctx, l, ttl)
		if errors.Is(err, errLeaseLost) {
			cancel(err)
			return false
		}
		if err != nil {
			s.log.Warn("could not renew a cleanup lease; will retry", "asset_id", l.asset, "shard", l.shard, "err", err)
		}
		return true
	})
}

// ticking calls fn every period (at least a millisecond) until fn returns false, ctx ends or
// stop is called; stop returns once fn is no longer running.
func ticking(ctx context.Context, period time.Duration, fn func() bool) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		loop.Every(ctx, period, false, func(context.Context) {
			if !fn() {
				cancel()
			}
		})
	}()
	return func() { cancel(); <-finished }
}
