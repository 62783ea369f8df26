package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/reconciliationfinding"
)

// Finding is a defect a run found, open until a run shows it gone.
type Finding struct {
	ID          uuid.UUID
	Kind, Side  string
	WindowStart time.Time
	Owner       string
	Detail      string
	OpenedRunID uuid.UUID
	OpenedAt    time.Time
	ClosedRunID *uuid.UUID
	ClosedAt    *time.Time
}

// Findings returns a migration's findings, open ones first.
func (s *Service) Findings(ctx context.Context, id uuid.UUID) ([]Finding, error) {
	rows, err := s.db.ReconciliationFinding.Query().Where(reconciliationfinding.MigrationID(id)).
		Order(ent.Asc(reconciliationfinding.FieldOpenedAt), ent.Asc(reconciliationfinding.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read findings: %w", err)
	}
	out := make([]Finding, len(rows))
	for i, r := range rows {
		out[i] = Finding{ID: r.ID, Kind: string(r.Kind), Side: string(r.Side), WindowStart: r.WindowStart.UTC(), Owner: r.Owner,
			Detail: r.Detail, OpenedRunID: r.OpenedRunID, OpenedAt: r.OpenedAt.UTC(), ClosedRunID: r.ClosedRunID, ClosedAt: r.ClosedAt}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		switch {
		case a.ClosedAt == nil && b.ClosedAt != nil:
			return -1
		case a.ClosedAt != nil && b.ClosedAt == nil:
			return 1
		}
		return 0
	})
	return out, nil
}
