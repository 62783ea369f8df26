package cleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupscan"
)

// ScanFilter selects scans, newest first.
type ScanFilter struct {
	AssetID uuid.UUID // uuid.Nil: every table
	Before  uuid.UUID // a cursor: scans older than this one
	Limit   int
}

// Scans lists scan reports, newest first.
func (s *Service) Scans(ctx context.Context, f ScanFilter) ([]Report, error) {
	q := s.db.CleanupScan.Query().Order(ent.Desc(cleanupscan.FieldID)).Limit(f.Limit)
	if f.AssetID != uuid.Nil {
		q.Where(cleanupscan.AssetID(f.AssetID))
	}
	if f.Before != uuid.Nil {
		q.Where(cleanupscan.IDLT(f.Before))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Report, 0, len(rows))
	for _, r := range rows {
		rep, err := toReport(r)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	return out, nil
}

// GetScan returns one scan's report.
func (s *Service) GetScan(ctx context.Context, id uuid.UUID) (Report, error) {
	r, err := s.db.CleanupScan.Get(ctx, id)
	if ent.IsNotFound(err) {
		return Report{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no scan %s", id)}
	}
	if err != nil {
		return Report{}, err
	}
	return toReport(r)
}

// toReport is the stored report, or for a scan still running what its row says.
func toReport(r *ent.CleanupScan) (Report, error) {
	if r.Report != "" {
		var rep Report
		if err := json.Unmarshal([]byte(r.Report), &rep); err != nil {
			return Report{}, fmt.Errorf("cleanup: scan %s: stored report: %w", r.ID, err)
		}
		return rep, nil
	}
	d := time.Duration(r.AgeThresholdSeconds) * time.Second
	return Report{ScanID: r.ID, AssetID: r.AssetID, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, State: string(r.State),
		Error: r.Error, AgeThreshold: d.String(), ThresholdOverride: r.ThresholdOverride, Shards: []ShardReport{}, Holes: []Hole{},
		ConfirmedSample: []string{},
		Summary:         "The scan is still running (or its worker stopped before writing the report)."}, nil
}

// lastFinishedScan is the table's newest finished scan, or nil.
func (s *Service) lastFinishedScan(ctx context.Context, asset uuid.UUID) (*ent.CleanupScan, error) {
	last, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(asset), cleanupscan.StateEQ(cleanupscan.StateFinished)).
		Order(ent.Desc(cleanupscan.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return last, err
}
