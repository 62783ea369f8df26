package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/datasetmigration"
)

// runClaim is how long a run holds its migration: it outlasts any run comfortably, and a replica
// killed mid-run frees the migration when it ends.
const runClaim = time.Hour

// DefaultMaxRuns is how many of its own reconciliations one process runs at once: each reads
// both sides, so runs are memory-bound.
const DefaultMaxRuns = 2

// WithMaxRuns sets how many reconciliations this process runs at once (at least 1); one more
// is refused as busy (503) until one ends.
func WithMaxRuns(n int) Option {
	return func(s *Service) { s.slots = make(chan struct{}, max(n, 1)) }
}

// slot takes one of the process's run slots, or refuses at once when all are taken.
func (s *Service) slot(id uuid.UUID) (func(), error) {
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, nil
	default:
		return nil, &catalog.Error{Kind: catalog.ErrUnavailable, Message: fmt.Sprintf(
			"this process is running %d reconciliations already; run migration %s again when one ends", cap(s.slots), id)}
	}
}

// claim takes the migration's run claim in the database, so one run at a time writes its
// findings, whichever replica or caller starts it. release frees it only if it is still this
// run's (an expired claim another run took is left alone).
func (s *Service) claim(ctx context.Context, id uuid.UUID) (release func(), err error) {
	now := s.clock()
	until := now.Add(runClaim)
	n, err := s.db.DatasetMigration.Update().Where(datasetmigration.ID(id),
		datasetmigration.Or(datasetmigration.RunClaimedUntilIsNil(), datasetmigration.RunClaimedUntilLT(now))).
		SetRunClaimedUntil(until).Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: claim migration %s: %w", id, err)
	}
	if n == 0 {
		return nil, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
			"a reconciliation of migration %s is running already (here or on another replica); read its runs when it ends", id)}
	}
	return func() {
		err := s.db.DatasetMigration.Update().Where(datasetmigration.ID(id), datasetmigration.RunClaimedUntil(until)).
			ClearRunClaimedUntil().Exec(context.WithoutCancel(ctx))
		if err != nil {
			s.log.Warn("reconcile: the run claim could not be freed; it expires by itself", "migration_id", id, "until", until, "err", err)
		}
	}, nil
}
