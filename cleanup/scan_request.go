package cleanup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/cleanupscanrequest"
	"github.com/tidemark/tidemark/internal/words"
)

// ScanRequest is a person's request for a table's scan now. The request never runs the scan:
// the scheduler's scan loop picks pending requests up first on its next round (inside the
// maintenance window, if one is set).
type ScanRequest struct {
	ID            uuid.UUID  `json:"id"`
	AssetID       uuid.UUID  `json:"asset_id"`
	RequestedAt   time.Time  `json:"requested_at"`
	Actor         string     `json:"actor"`
	FromInventory bool       `json:"from_inventory"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
	// ScanID is the scan that answered the request: the first of its kind (a full walk, or an
	// inventory pass) that started at or after it. Set even before the scheduler closes the
	// request, as soon as such a scan exists.
	ScanID *uuid.UUID `json:"scan_id,omitempty"`
	Note   string     `json:"note,omitempty"` // why a closed request has no scan
}

// Pending reports whether no scan has answered the request yet.
func (r ScanRequest) Pending() bool { return r.ScanID == nil && r.DoneAt == nil }

// RequestScan records a request for a scan of a table now: a full walk, or with fromInventory
// an inventory pass (tables Tidemark serves only). A pending request of the same kind for the
// table is returned instead of a second one (created false), so a repeated click or retry asks
// once. Unknown table: ErrNotFound; a table dropped from its catalog: ErrConflict.
func (s *Service) RequestScan(ctx context.Context, asset uuid.UUID, fromInventory bool) (ScanRequest, bool, error) {
	t, err := s.tables.Get(ctx, asset)
	if err != nil {
		return ScanRequest{}, false, err
	}
	if t.GoneAt != nil {
		return ScanRequest{}, false, &catalog.Error{Kind: catalog.ErrConflict,
			Message: fmt.Sprintf("table %s was dropped from its catalog on %s: there is nothing to scan", asset, words.Time(*t.GoneAt))}
	}
	if fromInventory && t.Warehouse == "" {
		return ScanRequest{}, false, &catalog.Error{Kind: catalog.ErrInvalid, Field: "from_inventory",
			Message: fmt.Sprintf("table %s is not served by Tidemark, so it has no write-path inventory: ask for a full walk (from_inventory false)", asset)}
	}
	pending, err := s.pendingRequests(ctx, []uuid.UUID{asset})
	if err != nil {
		return ScanRequest{}, false, err
	}
	for _, r := range pending[asset] {
		if r.FromInventory == fromInventory {
			return r, false, nil
		}
	}
	// Two concurrent requests may both get here and both be stored: harmless, the same scan
	// answers both.
	var row *ent.CleanupScanRequest
	err = s.tx(ctx, func(tx *ent.Tx) error {
		row, err = tx.CleanupScanRequest.Create().SetAssetID(asset).SetRequestedAt(s.clock()).SetActor(catalog.ActorFrom(ctx)).
			SetFromInventory(fromInventory).Save(ctx)
		if err != nil {
			return fmt.Errorf("cleanup: request scan: %w", err)
		}
		return s.cat.RecordAudit(ctx, tx, "cleanup.scan_request", asset, nil, map[string]any{"request_id": row.ID, "from_inventory": fromInventory})
	})
	if err != nil {
		return ScanRequest{}, false, err
	}
	return toScanRequest(row), true, nil
}

// PendingScanRequests returns the requests no scan has answered yet, by table; nil assets means
// every table.
func (s *Service) PendingScanRequests(ctx context.Context, assets []uuid.UUID) (map[uuid.UUID][]ScanRequest, error) {
	return s.pendingRequests(ctx, assets)
}

// pendingRequests reads the open requests, oldest first, leaving out those a scan of their
// kind, started at or after them, already answers (the scheduler closes those on its next
// round; until then the page must not say "pending" for a scan that is running or done).
func (s *Service) pendingRequests(ctx context.Context, assets []uuid.UUID) (map[uuid.UUID][]ScanRequest, error) {
	rows, err := s.openRequests(ctx, assets)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID][]ScanRequest{}
	for _, row := range rows {
		r := toScanRequest(row)
		scan, err := s.answering(ctx, r)
		if err != nil {
			return nil, err
		}
		if scan == nil {
			out[r.AssetID] = append(out[r.AssetID], r)
		}
	}
	return out, nil
}

// openRequests reads the requests not yet closed, oldest first (of the given tables, or all).
func (s *Service) openRequests(ctx context.Context, assets []uuid.UUID) ([]*ent.CleanupScanRequest, error) {
	q := s.db.CleanupScanRequest.Query().Where(cleanupscanrequest.DoneAtIsNil()).Order(ent.Asc(cleanupscanrequest.FieldID))
	if assets != nil {
		q.Where(cleanupscanrequest.AssetIDIn(assets...))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read scan requests: %w", err)
	}
	return rows, nil
}

// answering returns the first scan of the request's kind that started at or after it, or nil.
// A full walk answers a walk request (a confirming pass walks only some shards); an inventory
// pass answers an inventory request.
func (s *Service) answering(ctx context.Context, r ScanRequest) (*ent.CleanupScan, error) {
	scan, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(r.AssetID), cleanupscan.StartedAtGTE(r.RequestedAt),
		cleanupscan.FromInventory(r.FromInventory), cleanupscan.ConfirmOnly(false)).Order(ent.Asc(cleanupscan.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cleanup: find the scan answering request %s: %w", r.ID, err)
	}
	return scan, nil
}

// ScanRequested runs a scan for every pending request, oldest first (one scan per table and
// kind, answering all its requests), and closes each request with the scan that answered it.
// A table another replica holds is left for the next round. It returns how many scans it ran.
func (s *Service) ScanRequested(ctx context.Context, opt ScanOptions) (int, error) {
	rows, err := s.openRequests(ctx, nil)
	if err != nil {
		return 0, err
	}
	type kind struct {
		asset     uuid.UUID
		inventory bool
	}
	seen := map[kind]bool{}
	n := 0
	for _, row := range rows {
		r := toScanRequest(row)
		k := kind{r.AssetID, r.FromInventory}
		if seen[k] {
			continue
		}
		seen[k] = true
		ran, err := s.answer(ctx, r, opt)
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if ran {
			n++
		}
		if err != nil {
			s.log.Warn("requested cleanup scan failed; its report says why", "asset_id", r.AssetID, "err", err)
		}
	}
	return n, nil
}

// answer closes a request (and the table's other pending requests of its kind) with the scan
// that answers it, running that scan first when none exists yet. It reports whether it ran one.
func (s *Service) answer(ctx context.Context, r ScanRequest, opt ScanOptions) (bool, error) {
	scan, err := s.answering(ctx, r)
	if err != nil {
		return false, err
	}
	if scan != nil { // a scan started since (from the CLI, or by another replica)
		return false, s.closeRequests(ctx, r, scan, "")
	}
	t, err := s.tables.Get(ctx, r.AssetID)
	switch {
	case errors.Is(err, catalog.ErrNotFound):
		return false, s.closeRequests(ctx, r, nil, "the table is no longer known: nothing was scanned")
	case err != nil:
		return false, err
	case t.GoneAt != nil:
		return false, s.closeRequests(ctx, r, nil, "the table was dropped from its catalog: nothing was scanned")
	}
	opt.FromInventory, opt.ConfirmOnly, opt.Resume, opt.Shards = r.FromInventory, false, uuid.Nil, nil
	rep, ran, err := s.scanLeased(ctx, r.AssetID, opt)
	if !ran || ctx.Err() != nil {
		return false, err // another replica holds the table: the next round looks again
	}
	if rep.ScanID == uuid.Nil {
		// The scan refused to start (bad options, the table unreadable): say why rather than
		// retrying every round.
		note := "the scan could not start"
		if err != nil {
			note += ": " + err.Error()
		}
		return true, errors.Join(err, s.closeRequests(ctx, r, nil, note))
	}
	scan, cerr := s.answering(ctx, r)
	return true, errors.Join(err, cerr, s.closeRequests(ctx, r, scan, ""))
}

// closeRequests closes the table's pending requests of r's kind made no later than the scan
// started (or, without a scan, every one of them), naming the scan or saying why none.
func (s *Service) closeRequests(ctx context.Context, r ScanRequest, scan *ent.CleanupScan, note string) error {
	u := s.db.CleanupScanRequest.Update().Where(cleanupscanrequest.AssetID(r.AssetID), cleanupscanrequest.FromInventory(r.FromInventory),
		cleanupscanrequest.DoneAtIsNil()).SetDoneAt(s.clock())
	if scan != nil {
		u.Where(cleanupscanrequest.RequestedAtLTE(scan.StartedAt)).SetScanID(scan.ID)
	} else {
		u.SetNote(note)
	}
	if _, err := u.Save(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("cleanup: close scan requests of table %s: %w", r.AssetID, err)
	}
	return nil
}

func toScanRequest(r *ent.CleanupScanRequest) ScanRequest {
	return ScanRequest{ID: r.ID, AssetID: r.AssetID, RequestedAt: r.RequestedAt, Actor: r.Actor, FromInventory: r.FromInventory,
		DoneAt: r.DoneAt, ScanID: r.ScanID, Note: r.Note}
}

// ScanRequests returns a table's scan requests, newest first, answered or not.
func (s *Service) ScanRequests(ctx context.Context, asset uuid.UUID, limit int) ([]ScanRequest, error) {
	rows, err := s.db.CleanupScanRequest.Query().Where(cleanupscanrequest.AssetID(asset)).Order(ent.Desc(cleanupscanrequest.FieldID)).
		Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("cleanup: read scan requests of table %s: %w", asset, err)
	}
	out := make([]ScanRequest, len(rows))
	for i, r := range rows {
		out[i] = toScanRequest(r)
	}
	return out, nil
}
