package warehouse

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/internal/loop"
)

// SettleJob settles, every minute, the commits left pending longer than olderThan
// (ResolvePending): such a commit stopped between its metadata write and its swap, so its file
// becomes known as a leftover (or, were it swapped, as committed). Nil when nothing is served.
func (s *Service) SettleJob(olderThan time.Duration) *loop.Job {
	if len(s.warehouses) == 0 {
		return nil
	}
	return &loop.Job{Name: "warehouse: settling pending Iceberg commits", Interval: time.Minute, AtStart: true, Log: s.log,
		Step: loop.Counted(s.log, "settled pending Iceberg commits", "count", func(ctx context.Context) (int, error) {
			return s.ResolvePending(ctx, olderThan)
		})}
}

// InspectionJob inspects again, every interval, the served tables committed to since the last
// round (RefreshServed): at most once a round, however often they are written. Nil when nothing
// is served.
func (s *Service) InspectionJob(interval time.Duration) *loop.Job {
	if len(s.warehouses) == 0 {
		return nil
	}
	return &loop.Job{Name: "warehouse: inspecting served tables", Interval: interval, Log: s.log,
		Step: func(ctx context.Context) error {
			_, err := s.RefreshServed(ctx)
			return err
		}}
}
