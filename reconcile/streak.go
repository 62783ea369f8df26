package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
	"github.com/tidemark/tidemark/usage"
)

// Status is where a migration stands: its streak of clean runs and whether the cutover rule
// holds.
type Status struct {
	Migration Migration
	// Streak counts the consecutive clean runs up to the newest; From and To are the first and
	// the last of them.
	Streak   int
	From, To *time.Time
	// Broken is the newest run that was not clean, with its causes (nil when none was).
	Broken *Run
	// Weekend: a run of the streak fell on a Saturday or Sunday (UTC).
	Weekend bool
	// BusiestDay is the day the new asset saw the most writes (nil when its usage has none);
	// SpansBusiest says the streak covers it.
	BusiestDay   *time.Time
	SpansBusiest bool
	// Ready: the cutover rule holds. Missing says what it still lacks.
	Ready   bool
	Missing []string
	// After the cutover, reads of the old asset are flagged: someone still reads what is
	// being retired (counted from the cutover's day, under any of the old asset's names).
	OldReadsSinceCutover int64
	OldLastRead          *time.Time
}

// busiestLookback is how far back the new asset's usage is searched for its busiest write day.
const busiestLookback = 400 * 24 * time.Hour

// Status reads the runs and evaluates the cutover rule.
func (s *Service) Status(ctx context.Context, id uuid.UUID) (Status, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Status{}, err
	}
	st := Status{Migration: m}
	// The streak needs each run's time and verdict only; the results (windows) of the run that
	// broke it are read alone.
	runs, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(id), reconciliationrun.FinishedAtNotNil()).
		Order(ent.Desc(reconciliationrun.FieldStartedAt), ent.Desc(reconciliationrun.FieldID)).
		Select(reconciliationrun.FieldStartedAt, reconciliationrun.FieldClean).All(ctx)
	if err != nil {
		return st, fmt.Errorf("reconcile: read runs: %w", err)
	}
	for _, r := range runs {
		if !r.Clean {
			broken, err := s.RunOf(ctx, id, r.ID)
			if err != nil {
				return st, err
			}
			st.Broken = &broken
			break
		}
		st.Streak++
		at := r.StartedAt.UTC()
		if st.To == nil {
			st.To = &at
		}
		st.From = &at
		if wd := at.Weekday(); wd == time.Saturday || wd == time.Sunday {
			st.Weekend = true
		}
	}
	if s.usage != nil && m.Spec.Cutover.IncludeBusiestDay {
		now := s.clock()
		series, err := s.usage.Series(ctx, m.NewAssetID, now.Add(-busiestLookback), now, usage.Daily)
		if err != nil {
			return st, err
		}
		var most int64
		for _, p := range series.Points {
			if p.Writes > most {
				most, st.BusiestDay = p.Writes, &p.Start
			}
		}
		if st.BusiestDay != nil && st.From != nil {
			day := *st.BusiestDay
			st.SpansBusiest = !st.From.Truncate(24*time.Hour).After(day) && !st.To.Before(day)
		}
	}
	rule := m.Spec.Cutover
	if st.Streak < rule.MinCleanRuns {
		st.Missing = append(st.Missing, fmt.Sprintf("%d consecutive clean runs (has %d)", rule.MinCleanRuns, st.Streak))
	}
	var days float64
	if st.From != nil {
		days = st.To.Sub(*st.From).Hours() / 24
	}
	if days < float64(rule.MinDays) {
		st.Missing = append(st.Missing, fmt.Sprintf("a streak over at least %d days (has %.1f)", rule.MinDays, days))
	}
	if rule.IncludeWeekend && !st.Weekend {
		st.Missing = append(st.Missing, "a clean run on a weekend")
	}
	if rule.IncludeBusiestDay && !st.SpansBusiest {
		if st.BusiestDay == nil {
			st.Missing = append(st.Missing, "the new asset's busiest write day (its usage shows no writes yet)")
		} else {
			st.Missing = append(st.Missing, fmt.Sprintf("a streak spanning the new asset's busiest write day, %s", st.BusiestDay.Format("2006-01-02")))
		}
	}
	st.Ready = len(st.Missing) == 0 && m.State == string(datasetmigration.StateActive)
	if m.CutOverAt != nil && s.usage != nil {
		real, err := s.usage.Real(ctx, m.OldAssetID, *m.CutOverAt, s.clock(), nil)
		if err != nil {
			return st, err
		}
		st.OldReadsSinceCutover, st.OldLastRead = real.Reads, real.LastRead
	}
	return st, nil
}

// CutOver records that the move was cut over; refused unless the cutover rule holds.
func (s *Service) CutOver(ctx context.Context, id uuid.UUID) (Migration, error) {
	st, err := s.Status(ctx, id)
	if err != nil {
		return Migration{}, err
	}
	if st.Migration.State != string(datasetmigration.StateActive) {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s is %s already", id, st.Migration.State)}
	}
	if !st.Ready {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s is not ready to cut over: it still needs %v", id, st.Missing)}
	}
	now := s.clock()
	n, err := s.db.DatasetMigration.Update().Where(datasetmigration.ID(id), datasetmigration.Version(st.Migration.Version)).
		SetState(datasetmigration.StateCutOver).SetCutOverAt(now).SetUpdatedAt(now).AddVersion(1).Save(ctx)
	if err != nil {
		return Migration{}, fmt.Errorf("reconcile: cut over %s: %w", id, err)
	}
	if n == 0 {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s changed meanwhile; read it again", id)}
	}
	return s.Get(ctx, id)
}

// RetirementGate says whether an asset may be retired (cleanup.MigrationGate): an asset that is
// the old side of a migration only after the cutover and a clean reconciliation run after it,
// the final one against the archive, which it returns.
func (s *Service) RetirementGate(ctx context.Context, asset uuid.UUID) (bool, uuid.UUID, string, error) {
	rows, err := s.db.DatasetMigration.Query().Where(datasetmigration.OldAssetID(asset)).All(ctx)
	if err != nil {
		return false, uuid.Nil, "", fmt.Errorf("reconcile: migrations of %s: %w", asset, err)
	}
	final := uuid.Nil
	for _, r := range rows {
		if r.State == datasetmigration.StateActive || r.CutOverAt == nil {
			return false, uuid.Nil, fmt.Sprintf("it is the old side of migration %s, which is not cut over yet", r.ID), nil
		}
		// The newest run since the cutover is the final one: it must be clean.
		last, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(r.ID), reconciliationrun.FinishedAtNotNil(),
			reconciliationrun.StartedAtGT(*r.CutOverAt)).Order(ent.Desc(reconciliationrun.FieldStartedAt), ent.Desc(reconciliationrun.FieldID)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return false, uuid.Nil, "", fmt.Errorf("reconcile: runs of migration %s: %w", r.ID, err)
		}
		switch {
		case last == nil:
			return false, uuid.Nil, fmt.Sprintf("migration %s was cut over at %s, but no reconciliation has run since: run the final one against the archive first",
				r.ID, r.CutOverAt.UTC().Format(time.RFC3339)), nil
		case !last.Clean:
			return false, uuid.Nil, fmt.Sprintf("the newest reconciliation of migration %s since its cutover, run %s, was not clean", r.ID, last.ID), nil
		}
		final = last.ID
	}
	return true, final, "", nil
}
