package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/reconciliationrun"

	"github.com/tidemark/tidemark/internal/loop"
)

// RunDue reconciles every active migration Tidemark can read whose last run started longer
// ago than every. Each run takes the migration's claim, so replicas (and API callers) never run
// one twice at once; one held elsewhere is skipped. It returns how many it ran.
func (s *Service) RunDue(ctx context.Context, every time.Duration) (int, error) {
	ms, err := s.db.DatasetMigration.Query().Where(datasetmigration.StateNEQ(datasetmigration.StateRetired)).All(ctx)
	if err != nil {
		return 0, fmt.Errorf("reconcile: list migrations: %w", err)
	}
	n := 0
	for _, row := range ms {
		m, err := toMigration(row)
		if err != nil {
			return n, err
		}
		if retired, err := s.retireIfGone(ctx, m); err != nil || retired {
			if err != nil {
				return n, err
			}
			continue
		}
		if !m.Readable() {
			continue
		}
		now := s.clock()
		last, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(m.ID)).
			Order(ent.Desc(reconciliationrun.FieldStartedAt)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return n, err
		}
		if last != nil && now.Sub(last.StartedAt) < every {
			continue
		}
		_, rerr := s.Reconcile(ctx, m.ID)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if errors.Is(rerr, catalog.ErrConflict) || errors.Is(rerr, catalog.ErrUnavailable) {
			continue // running elsewhere, or this process is busy: a later tick runs it
		}
		n++
		if rerr != nil {
			s.log.Warn("scheduled reconciliation failed; the run records why", "migration_id", m.ID, "err", rerr)
		}
	}
	return n, nil
}

// retireIfGone marks a cut-over migration retired once its old asset is deleted (retired by the
// cleanup bot, or dropped): there is nothing left to compare, and runs would only fail.
func (s *Service) retireIfGone(ctx context.Context, m Migration) (bool, error) {
	if m.State != string(datasetmigration.StateCutOver) {
		return false, nil
	}
	a, err := s.cat.Get(ctx, m.OldAssetID)
	if err != nil {
		return false, err
	}
	if a.Status != catalog.StatusDeleted {
		return false, nil
	}
	err = s.db.DatasetMigration.UpdateOneID(m.ID).SetState(datasetmigration.StateRetired).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx)
	if err == nil {
		s.log.Info("migration retired: its old asset is gone", "migration_id", m.ID, "old_asset_id", m.OldAssetID)
	}
	return err == nil, err
}

// Job reconciles, every tick, the migrations due at the cadence every (RunDue). Nil when every
// is 0 (scheduled reconciliations off).
func (s *Service) Job(tick, every time.Duration) *loop.Job {
	if every <= 0 {
		return nil
	}
	s.log.Info("reconciliation runs scheduled", "interval", every.String())
	return &loop.Job{Name: "reconcile: scheduled reconciliations", Interval: tick, AtStart: true, Log: s.log,
		Step: loop.Counted(s.log, "scheduled reconciliations done", "migrations", func(ctx context.Context) (int, error) {
			return s.RunDue(ctx, every)
		})}
}
