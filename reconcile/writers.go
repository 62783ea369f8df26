package reconcile

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Writer is a run that wrote the new side during a window with duplicated keys: where to look
// for the cause.
type Writer struct {
	RunID      string     `json:"run_id"`
	JobAssetID uuid.UUID  `json:"job_asset_id"`
	State      string     `json:"state"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
}

// WithWriters sets how a run finds the runs that wrote the new asset during a window (lineage's
// record of runs): windows with duplicated keys on the new side name them.
func WithWriters(fn func(ctx context.Context, asset uuid.UUID, from, to time.Time, limit int) ([]Writer, error)) Option {
	return func(s *Service) { s.writers = fn }
}

// Bounds on the writers a run names: in the first maxWriterWindows windows with duplication on
// the new side, up to maxWriters runs each.
const (
	maxWriterWindows = 20
	maxWriters       = 10
)

// nameWriters names the runs that wrote the new side in the windows where it holds duplicated
// keys. They are evidence, not the verdict: a failure to find them is logged, not fatal.
func (s *Service) nameWriters(ctx context.Context, m Migration, ws []WindowResult) {
	if m.Spec.New.Kind == SourceIceberg && s.tables != nil {
		if err := s.nameSnapshots(ctx, m, ws); err != nil {
			s.log.Warn("reconcile: find the snapshots that added duplicated keys", "migration_id", m.ID, "err", err)
		}
	}
	if s.writers == nil {
		return
	}
	n := 0
	for i := range ws {
		w := &ws[i]
		if w.New.DuplicateKeys == 0 {
			continue
		}
		if n++; n > maxWriterWindows {
			return
		}
		found, err := s.writers(ctx, m.NewAssetID, w.Start, w.Start.Add(m.Spec.Window()), maxWriters)
		if err != nil {
			s.log.Warn("reconcile: find the runs that wrote duplicated keys", "migration_id", m.ID, "window", w.Start, "err", err)
			return
		}
		w.Writers = found
	}
}
