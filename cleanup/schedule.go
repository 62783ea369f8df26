package cleanup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanuprefcheck"
	"github.com/tidemark/tidemark/ent/cleanupscan"

	"github.com/tidemark/tidemark/internal/loop"
)

// PropertyScanInterval is the Iceberg table property that sets a table's own scan cadence (a
// Go duration such as "168h", or "off").
const PropertyScanInterval = "tidemark.cleanup.scan-interval"

// tableLease is the shard name of the whole-table lease a scheduled scan holds, so replicas do
// not start the same table's scan together.
const tableLease = "*table*"

// abandon marks the table's running scans whose heartbeat is older than two lease periods as
// abandoned: their worker was killed or lost its lease. It returns how many it marked.
func (s *Service) abandon(ctx context.Context, asset uuid.UUID) (int, error) {
	now := s.clock()
	cutoff := now.Add(-2 * s.leaseTTL)
	return s.db.CleanupScan.Update().Where(cleanupscan.AssetID(asset), cleanupscan.StateEQ(cleanupscan.StateRunning),
		cleanupscan.Or(cleanupscan.HeartbeatAtLT(cutoff), cleanupscan.And(cleanupscan.HeartbeatAtIsNil(), cleanupscan.StartedAtLT(cutoff)))).
		SetState(cleanupscan.StateAbandoned).SetFinishedAt(now).
		SetError(fmt.Sprintf("abandoned: its worker stopped renewing its heartbeat for over %s (killed, or it lost its lease); another worker restarts the table's scan", 2*s.leaseTTL)).
		Save(ctx)
}

// Run scans due tables every tick until ctx ends. def is the cadence of tables that do not set
// their own (0 turns scheduled scans off for them).
func (s *Service) Run(ctx context.Context, tick, def time.Duration, opt ScanOptions) {
	loop.Every(ctx, tick, true, func(ctx context.Context) {
		if n, err := s.ScanDue(ctx, def, opt); err != nil && ctx.Err() == nil {
			s.log.Warn("scheduled cleanup scans failed; will retry", "err", err)
		} else if n > 0 {
			s.log.Info("scheduled cleanup scans done", "tables", n)
		}
	})
}

// ScanDue scans every known table whose last scan started longer ago than its cadence, runs a
// confirming pass (ScanOptions.ConfirmOnly) on tables whose last walks left files to confirm and
// whose last scan started at least the minimum gap ago, and returns how many scans it ran. A
// table another replica is scanning is skipped.
func (s *Service) ScanDue(ctx context.Context, def time.Duration, opt ScanOptions) (int, error) {
	n := 0
	if !s.InWindow() {
		return 0, nil // outside the maintenance window: the next tick inside it catches up
	}
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
			cadence := def
			if in, err := s.tables.Inspection(ctx, t.AssetID); err == nil {
				if v, ok := in.Properties[PropertyScanInterval]; ok {
					if v == "off" {
						cadence = 0
					} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
						cadence = d
					} else {
						s.log.Warn("ignoring a bad table property", "asset_id", t.AssetID, "property", PropertyScanInterval, "value", v)
					}
				}
			}
			if cadence <= 0 {
				continue
			}
			// A scan whose worker stopped (killed, or lost its lease) is restarted now, whatever
			// the cadence says.
			abandoned, err := s.abandon(ctx, t.AssetID)
			if err != nil {
				return n, err
			}
			// The cadence counts from the last scan that ran to its end (finished, or failed and
			// reported why); one stopped (SIGTERM) or abandoned (kill -9) is taken over at once.
			// Confirming passes do not count: they walk only some shards.
			lastFull, err := s.lastScan(ctx, t.AssetID, true)
			if err != nil {
				return n, err
			}
			topt := opt
			if abandoned == 0 && lastFull != nil && s.clock().Sub(lastFull.StartedAt) < cadence {
				// Not due for a full walk. A confirming pass is, once the minimum gap has passed
				// since any walk, when the last walks left files to confirm: it walks only those
				// shards, so a candidate is confirmed an hour later instead of a cadence later.
				last, err := s.lastScan(ctx, t.AssetID, false)
				if err != nil {
					return n, err
				}
				if s.clock().Sub(last.StartedAt) < minGap(opt) {
					continue
				}
				pending, _, err := s.pendingShards(ctx, t.AssetID)
				if err != nil {
					return n, err
				}
				if len(pending) == 0 {
					continue
				}
				topt.ConfirmOnly = true
			}
			held, err := s.claim(ctx, t.AssetID, tableLease, s.leaseTTL)
			if err != nil {
				return n, err
			}
			if held == nil {
				continue // another replica is scanning it
			}
			// The table lease is short and renewed while the scan runs; losing it stops the scan.
			sctx, cancel := context.WithCancelCause(ctx)
			stop := s.keepRenewing(sctx, held, s.leaseTTL, cancel)
			_, err = s.Scan(sctx, t.AssetID, topt)
			stop()
			cancel(nil)
			s.release(ctx, held)
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			n++
			if err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("scheduled cleanup scan failed; its report says why", "asset_id", t.AssetID, "err", err)
			}
		}
		if !more {
			return n, nil
		}
	}
}

// minGap is the gap two walks need to confirm, as Scan applies it.
func minGap(opt ScanOptions) time.Duration {
	if opt.MinGap > 0 {
		return opt.MinGap
	}
	return DefaultMinGap
}

// lastScan returns the table's newest scan that ran to its end or is running (full walks only,
// with full), or nil.
func (s *Service) lastScan(ctx context.Context, asset uuid.UUID, full bool) (*ent.CleanupScan, error) {
	q := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(asset),
		cleanupscan.StateIn(cleanupscan.StateFinished, cleanupscan.StateFailed, cleanupscan.StateRunning))
	if full {
		q.Where(cleanupscan.ConfirmOnly(false))
	}
	last, err := q.Order(ent.Desc(cleanupscan.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return last, err
}

// RunRefChecks runs the due reference checks every tick until ctx ends; cadence is how often
// each table's references are checked in full (0 turns scheduled checks off).
func (s *Service) RunRefChecks(ctx context.Context, tick, cadence time.Duration, opt RefCheckOptions) {
	loop.Every(ctx, tick, true, func(ctx context.Context) {
		if n, err := s.CheckRefsDue(ctx, cadence, opt); err != nil && ctx.Err() == nil {
			s.log.Warn("scheduled reference checks failed; will retry", "err", err)
		} else if n > 0 {
			s.log.Info("scheduled reference checks done", "tables", n)
		}
	})
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
