package cleanup

// Reading reference checks back: the reports people and the proposer read.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuprefcheck"
)

// RefCheckFilter selects reference checks, newest first.
type RefCheckFilter struct {
	AssetID uuid.UUID
	Before  uuid.UUID
	Limit   int
}

// RefChecks lists reference checks' reports, newest first.
func (s *Service) RefChecks(ctx context.Context, f RefCheckFilter) ([]RefCheckReport, error) {
	q := s.db.CleanupRefCheck.Query().Order(ent.Desc(cleanuprefcheck.FieldID)).Limit(f.Limit)
	if f.AssetID != uuid.Nil {
		q.Where(cleanuprefcheck.AssetID(f.AssetID))
	}
	if f.Before != uuid.Nil {
		q.Where(cleanuprefcheck.IDLT(f.Before))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: list reference checks: %w", err)
	}
	out := make([]RefCheckReport, 0, len(rows))
	for _, r := range rows {
		rep, err := toRefCheckReport(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	return out, nil
}

// GetRefCheck returns one reference check's report.
func (s *Service) GetRefCheck(ctx context.Context, id uuid.UUID) (RefCheckReport, error) {
	r, err := s.db.CleanupRefCheck.Get(ctx, id)
	if ent.IsNotFound(err) {
		return RefCheckReport{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no reference check %s", id)}
	}
	if err != nil {
		return RefCheckReport{}, fmt.Errorf("cleanup: read reference check %s: %w", id, err)
	}
	return toRefCheckReport(r)
}

// lastRefCheck is the table's newest reference check that ran its second check (complete, or
// stopped after it), or nil.
func (s *Service) lastRefCheck(ctx context.Context, asset uuid.UUID) (*RefCheckReport, error) {
	rows, err := s.db.CleanupRefCheck.Query().Where(cleanuprefcheck.AssetID(asset), cleanuprefcheck.StateNEQ(cleanuprefcheck.StateRunning)).
		Order(ent.Desc(cleanuprefcheck.FieldID)).Limit(10).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read the reference checks of table %s: %w", asset, err)
	}
	for _, r := range rows {
		rep, err := toRefCheckReport(r)
		if err != nil {
			return nil, err
		}
		if rep.Rechecked {
			return &rep, nil
		}
	}
	return nil, nil
}

// toRefCheckReport is the stored report, or for a check still running what its row says.
func toRefCheckReport(r *ent.CleanupRefCheck) (RefCheckReport, error) {
	if r.Report != "" && r.State != cleanuprefcheck.StateRunning {
		var rep RefCheckReport
		if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
			return RefCheckReport{}, fmt.Errorf("cleanup: reference check %s: stored report: %w", r.ID, err)
		}
		return rep, nil
	}
	return RefCheckReport{CheckID: r.ID, AssetID: r.AssetID, State: string(r.State), StartedAt: r.StartedAt, Runs: r.Runs,
		MetadataLocation: r.MetadataLocation, Dangling: []DanglingRef{}, Snapshots: []SnapshotCoverage{}, Refs: []RefCoverage{},
		Summary: "The reference check is running (or its worker stopped before writing the report; the next run resumes it)."}, nil
}
