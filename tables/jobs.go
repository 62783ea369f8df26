package tables

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/internal/loop"
)

// SyncJob reads every configured Iceberg catalog (Sync: renames, drops, new tables) at start and
// every interval. Nil without connections or with interval 0.
func (s *Service) SyncJob(interval time.Duration) *loop.Job {
	if len(s.Connections()) == 0 || interval <= 0 {
		return nil
	}
	s.log.Info("Iceberg catalog sync scheduled", "connections", len(s.Connections()), "interval", interval.String())
	return &loop.Job{Name: "tables: Iceberg catalog sync", Interval: interval, AtStart: true, Log: s.log,
		Step: func(ctx context.Context) error {
			rep, err := s.Sync(ctx, nil)
			if err != nil {
				return err
			}
			s.log.Info("Iceberg catalogs synced", "sync_id", rep.ID, "added", rep.Added, "renamed", rep.Renamed,
				"marked_deleted", rep.MarkedDeleted, "refreshed", rep.Refreshed, "errors", rep.Errors)
			return nil
		}}
}
