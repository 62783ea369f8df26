package cleanup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/tables"

	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/internal/words"
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
		SetError(fmt.Sprintf("abandoned: its worker stopped renewing its heartbeat for over %s (killed, or it lost its lease); another worker restarts the table's scan", words.Duration(2*s.leaseTTL))).
		Save(ctx)
}

// ScanJob scans due tables every tick (ScanDue). def is the cadence of tables that do not set
// their own: with 0, scheduled scans are off and the job runs only the scans people ask for
// (ScanRequested), so a request from the UI or the API is still answered.
func (s *Service) ScanJob(tick, def time.Duration, opt ScanOptions) *loop.Job {
	if def <= 0 {
		return &loop.Job{Name: "cleanup: requested scans", Interval: tick, AtStart: true, Log: s.log,
			Step: loop.Counted(s.log, "requested cleanup scans done", "tables", func(ctx context.Context) (int, error) {
				if !s.InWindow() {
					return 0, nil
				}
				return s.ScanRequested(ctx, opt)
			})}
	}
	s.log.Info("cleanup scans scheduled", "interval", def.String())
	return &loop.Job{Name: "cleanup: scheduled scans", Interval: tick, AtStart: true, Log: s.log,
		Step: loop.Counted(s.log, "scheduled cleanup scans done", "tables", func(ctx context.Context) (int, error) {
			return s.ScanDue(ctx, def, opt)
		})}
}

// ScanDue scans every known table that is due and returns how many scans it ran: first the
// tables people asked to scan (ScanRequested), then the rest by their cadence. A table's
// cadence is its property, else def, else (WithAutoCadence) its last scan's break-even cadence
// within the bounds. A table Tidemark serves gets an inventory pass at its cadence and a full
// walk every WalkEvery cadences (only a walk finds files nobody recorded); other tables get a
// full walk at the cadence. Between those, once the minimum gap has passed, a confirming pass
// (an inventory pass, or a walk of just those shards) runs where files wait to be confirmed. A
// table another replica is scanning is skipped.
func (s *Service) ScanDue(ctx context.Context, def time.Duration, opt ScanOptions) (int, error) {
	if !s.InWindow() {
		return 0, nil // outside the maintenance window: the next tick inside it catches up
	}
	n, err := s.ScanRequested(ctx, opt)
	if err != nil {
		return n, err
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
			topt, due, err := s.dueScan(ctx, t, def, opt)
			if err != nil {
				return n, err
			}
			if !due {
				continue
			}
			_, ran, err := s.scanLeased(ctx, t.AssetID, topt)
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			if ran {
				n++
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("scheduled cleanup scan failed; its report says why", "asset_id", t.AssetID, "err", err)
			}
		}
		if !more {
			return n, nil
		}
	}
}

// WalkEvery is how many cadences apart a served table's full walks are: between them, inventory
// passes settle the leftovers the write path recorded.
const WalkEvery = 7

// dueScan says whether a table's scan is due now, and with which options.
func (s *Service) dueScan(ctx context.Context, t tables.Table, def time.Duration, opt ScanOptions) (ScanOptions, bool, error) {
	cadence, err := s.cadenceOf(ctx, t, def)
	if err != nil || cadence <= 0 {
		return opt, false, err
	}
	// A scan whose worker stopped (killed, or lost its lease) is restarted now, whatever the
	// cadence says.
	abandoned, err := s.abandon(ctx, t.AssetID)
	if err != nil {
		return opt, false, err
	}
	now := s.clock()
	// The cadence counts from the last scan that ran to its end (finished, or failed and
	// reported why); one stopped (SIGTERM) or abandoned (kill -9) is taken over at once.
	// Confirming and inventory passes do not count: they walk some shards or none.
	lastFull, err := s.lastScan(ctx, t.AssetID, scanWalk)
	if err != nil {
		return opt, false, err
	}
	walkEvery := cadence
	if t.Warehouse != "" {
		walkEvery = WalkEvery * cadence
	}
	if abandoned > 0 || lastFull == nil || now.Sub(lastFull.StartedAt) >= walkEvery {
		return opt, true, nil
	}
	if t.Warehouse != "" {
		lastInv, err := s.lastScan(ctx, t.AssetID, scanInventory)
		if err != nil {
			return opt, false, err
		}
		pending, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(t.AssetID), cleanupobservation.Shard(inventoryShard),
			cleanupobservation.ConfirmedAtIsNil()).Exist(ctx)
		if err != nil {
			return opt, false, err
		}
		if lastInv == nil || now.Sub(lastInv.StartedAt) >= cadence || (pending && now.Sub(lastInv.StartedAt) >= minGap(opt)) {
			opt.FromInventory = true
			return opt, true, nil
		}
	}
	// A confirming walk is due once the minimum gap has passed since any walk, when the last
	// walks left files to confirm: it walks only those shards, so a candidate is confirmed an
	// hour later instead of a cadence later.
	last, err := s.lastScan(ctx, t.AssetID, scanAnyWalk)
	if err != nil || now.Sub(last.StartedAt) < minGap(opt) {
		return opt, false, err
	}
	pending, _, err := s.pendingShards(ctx, t.AssetID)
	if err != nil || len(pending) == 0 {
		return opt, false, err
	}
	opt.ConfirmOnly = true
	return opt, true, nil
}

// cadenceOf is a table's scan cadence: its property (a duration, or "off"), else with
// WithAutoCadence its last scan's break-even cadence within the bounds, else def.
func (s *Service) cadenceOf(ctx context.Context, t tables.Table, def time.Duration) (time.Duration, error) {
	if in, err := s.tables.Inspection(ctx, t.AssetID); err == nil {
		if v, ok := in.Properties[PropertyScanInterval]; ok {
			if v == "off" {
				return 0, nil
			}
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				return d, nil
			}
			s.log.Warn("ignoring a bad table property", "asset_id", t.AssetID, "property", PropertyScanInterval, "value", v)
		}
	}
	if s.auto == nil || def <= 0 {
		return def, nil
	}
	kind := scanWalk
	if t.Warehouse != "" {
		kind = scanInventory
	}
	last, err := s.lastScan(ctx, t.AssetID, kind)
	if err != nil || last == nil || last.State != cleanupscan.StateFinished {
		return def, err
	}
	rep, err := toReport(last)
	if err != nil || rep.Cadence == nil {
		return def, err
	}
	return s.auto.clamp(rep.Cadence), nil
}

// AutoCadence bounds the break-even cadence the scheduler follows.
type AutoCadence struct{ Min, Max time.Duration }

func (a AutoCadence) clamp(c *CadenceAdvice) time.Duration {
	if c.BreakEvenSeconds <= 0 {
		return a.Max // orphans did not grow
	}
	return min(max(time.Duration(c.BreakEvenSeconds)*time.Second, a.Min), a.Max)
}

// WithAutoCadence makes the scheduler follow each table's break-even cadence (from its last
// scan's report) within [min, max]; a table without one is scanned at the default cadence.
func WithAutoCadence(minimum, maximum time.Duration) Option {
	return func(s *Service) { s.auto = &AutoCadence{Min: minimum, Max: maximum} }
}

// scanLeased runs one scan under the table's lease; false when another replica holds it.
func (s *Service) scanLeased(ctx context.Context, asset uuid.UUID, opt ScanOptions) (Report, bool, error) {
	held, err := s.claim(ctx, asset, tableLease, s.leaseTTL)
	if err != nil || held == nil {
		return Report{}, false, err
	}
	// The table lease is short and renewed while the scan runs; losing it stops the scan.
	sctx, cancel := context.WithCancelCause(ctx)
	stop := s.keepRenewing(sctx, held, s.leaseTTL, cancel)
	rep, err := s.Scan(sctx, asset, opt)
	stop()
	cancel(nil)
	s.release(ctx, held)
	return rep, true, err
}

// minGap is the gap two walks need to confirm, as Scan applies it.
func minGap(opt ScanOptions) time.Duration {
	if opt.MinGap > 0 {
		return opt.MinGap
	}
	return DefaultMinGap
}

// Kinds of scans lastScan looks for.
const (
	scanWalk      = iota // full walks
	scanAnyWalk          // full and confirming walks
	scanInventory        // inventory passes
)

// lastScan returns the table's newest scan of a kind that ran to its end or is running, or nil.
func (s *Service) lastScan(ctx context.Context, asset uuid.UUID, kind int) (*ent.CleanupScan, error) {
	q := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(asset),
		cleanupscan.StateIn(cleanupscan.StateFinished, cleanupscan.StateFailed, cleanupscan.StateRunning))
	switch kind {
	case scanWalk:
		q.Where(cleanupscan.ConfirmOnly(false), cleanupscan.FromInventory(false))
	case scanAnyWalk:
		q.Where(cleanupscan.FromInventory(false))
	case scanInventory:
		q.Where(cleanupscan.FromInventory(true))
	}
	last, err := q.Order(ent.Desc(cleanupscan.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return last, err
}
