package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/datasetmigration"
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
	runs, err := s.Runs(ctx, id, 10_000)
	if err != nil {
		return st, err
	}
	for i := range runs {
		r := runs[i]
		if r.FinishedAt == nil {
			continue // still running
		}
		if !r.Clean {
			st.Broken = &r
			break
		}
		st.Streak++
		at := r.StartedAt
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
