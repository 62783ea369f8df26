package cleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuprefcheck"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/proposal"
)

// TableOverview is what the cleanup bot last did and found for one table, for a list of tables.
type TableOverview struct {
	LastScan     *ScanBrief
	LastRefCheck *RefCheckBrief
	// HighSeverity are the table's open proposals of high severity (dangling references: the
	// table's metadata points to missing files), newest first.
	HighSeverity []ProposalBrief
	Pending      []ScanRequest // scan requests no scan has answered yet, oldest first
}

// ScanBrief is a scan without its report.
type ScanBrief struct {
	ID         uuid.UUID
	Kind       string // walk, confirming pass, inventory pass
	State      string
	StartedAt  time.Time
	FinishedAt *time.Time
	Error      string
}

// RefCheckBrief is a reference check's outcome without its coverage.
type RefCheckBrief struct {
	ID         uuid.UUID
	State      string
	StartedAt  time.Time
	FinishedAt *time.Time
	Dangling   int64
	Rechecked  bool
	Error      string
}

// ProposalBrief names a proposal.
type ProposalBrief struct {
	ID      uuid.UUID
	Kind    string
	Summary string
}

// TablesOverview returns each table's overview: a few small queries per table (a page of the
// tables list holds at most a hundred), never a report's shard list.
func (s *Service) TablesOverview(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]TableOverview, error) {
	out := make(map[uuid.UUID]TableOverview, len(ids))
	pending, err := s.pendingRequests(ctx, ids)
	if err != nil {
		return nil, err
	}
	props, err := s.db.Proposal.Query().Where(proposal.AssetIDIn(ids...), proposal.StateEQ(proposal.StateOpen),
		proposal.SeverityEQ(proposal.SeverityHigh)).Order(ent.Desc(proposal.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read open high-severity proposals: %w", err)
	}
	for _, id := range ids {
		o := TableOverview{Pending: pending[id]}
		scan, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(id)).Order(ent.Desc(cleanupscan.FieldID)).
			Select(cleanupscan.FieldID, cleanupscan.FieldState, cleanupscan.FieldStartedAt, cleanupscan.FieldFinishedAt,
				cleanupscan.FieldConfirmOnly, cleanupscan.FieldFromInventory, cleanupscan.FieldError).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return nil, fmt.Errorf("cleanup: read the last scan of table %s: %w", id, err)
		}
		if scan != nil {
			kind := "walk"
			switch {
			case scan.FromInventory:
				kind = "inventory pass"
			case scan.ConfirmOnly:
				kind = "confirming pass"
			}
			o.LastScan = &ScanBrief{ID: scan.ID, Kind: kind, State: string(scan.State), StartedAt: scan.StartedAt, FinishedAt: scan.FinishedAt, Error: scan.Error}
		}
		check, err := s.db.CleanupRefCheck.Query().Where(cleanuprefcheck.AssetID(id)).Order(ent.Desc(cleanuprefcheck.FieldID)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return nil, fmt.Errorf("cleanup: read the last reference check of table %s: %w", id, err)
		}
		if check != nil {
			rep, err := toRefCheckReport(check)
			if err != nil {
				return nil, err
			}
			o.LastRefCheck = &RefCheckBrief{ID: rep.CheckID, State: rep.State, StartedAt: rep.StartedAt, FinishedAt: rep.FinishedAt,
				Dangling: rep.DanglingCount, Rechecked: rep.Rechecked, Error: rep.Error}
		}
		out[id] = o
	}
	for _, p := range props {
		o := out[p.AssetID]
		brief := ProposalBrief{ID: p.ID, Kind: string(p.Kind)}
		var ev Evidence
		if json.Unmarshal([]byte(p.Evidence), &ev) == nil {
			brief.Summary = ev.Summary
		}
		o.HighSeverity = append(o.HighSeverity, brief)
		out[p.AssetID] = o
	}
	return out, nil
}

// MaintenanceWindow says when scheduled and requested scans may run ("any time" without one).
func (s *Service) MaintenanceWindow() string { return s.window.String() }
