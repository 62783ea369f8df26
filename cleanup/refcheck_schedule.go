package cleanup

// Scheduled reference checks: each table's references checked by key at its cadence, an
// unfinished check resumed.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuprefcheck"

	"github.com/tidemark/tidemark/internal/loop"
)

// RefCheckJob runs the due reference checks every tick (CheckRefsDue); cadence is how often each
// table's references are checked in full. Nil when cadence is 0 (scheduled checks off).
func (s *Service) RefCheckJob(tick, cadence time.Duration, opt RefCheckOptions) *loop.Job {
	if cadence <= 0 {
		return nil
	}
	s.log.Info("reference checks scheduled", "interval", cadence.String())
	return &loop.Job{Name: "cleanup: scheduled reference checks", Interval: tick, AtStart: true, Log: s.log,
		Step: loop.Counted(s.log, "scheduled reference checks done", "tables", func(ctx context.Context) (int, error) {
			return s.CheckRefsDue(ctx, cadence, opt)
		})}
}

// CheckRefsDue runs the reference check of every known table that is due: never checked, last
// complete pass started longer ago than the cadence, or a pass left unfinished (resumed once its
// last run ended at least a lease period ago, so a failing table is not retried every tick). A
// table another replica is checking is skipped. It returns how many checks it ran.
func (s *Service) CheckRefsDue(ctx context.Context, cadence time.Duration, opt RefCheckOptions) (int, error) {
	if cadence <= 0 || !s.InWindow() {
		return 0, nil
	}
	n := 0
	after := uuid.Nil
	for {
		ts, more, err := s.tables.List(ctx, after, 200)
		if err != nil {
			return n, err
		}
		for _, t := range ts {
			after = t.AssetID
			if t.GoneAt != nil {
				continue
			}
			due, err := s.refCheckDue(ctx, t.AssetID, cadence)
			if err != nil {
				return n, err
			}
			if !due {
				continue
			}
			_, err = s.CheckRefs(ctx, t.AssetID, opt)
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			if errors.Is(err, catalog.ErrConflict) {
				continue // another replica is checking it
			}
			n++
			if err != nil {
				s.log.Warn("scheduled reference check failed; its report says why", "asset_id", t.AssetID, "err", err)
			}
		}
		if !more {
			return n, nil
		}
	}
}

// refCheckDue says whether a table's reference check should run now.
func (s *Service) refCheckDue(ctx context.Context, asset uuid.UUID, cadence time.Duration) (bool, error) {
	last, err := s.db.CleanupRefCheck.Query().Where(cleanuprefcheck.AssetID(asset)).Order(ent.Desc(cleanuprefcheck.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cleanup: read the last reference check of table %s: %w", asset, err)
	}
	now := s.clock()
	if last.State == cleanuprefcheck.StateComplete {
		return now.Sub(last.StartedAt) >= cadence, nil
	}
	ended := last.StartedAt
	switch {
	case last.FinishedAt != nil:
		ended = *last.FinishedAt
	case last.HeartbeatAt != nil:
		ended = *last.HeartbeatAt
	}
	return now.Sub(ended) >= s.leaseTTL, nil
}
