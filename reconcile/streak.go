package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetmigration"
	"github.com/tidemark/tidemark/ent/migrationevent"
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
	// Rule is the rule the streak is held to: the migration's, raised to the floor when it is
	// weaker and states no reason (a migration stored before the floor).
	Rule CutoverRule
	// Weekend: the streak spans a weekend day (WeekendDay), compared after the day ended.
	Weekend    bool
	WeekendDay *time.Time
	// BusiestDay is the day of the last PeakPeriod the new asset saw the most writes (nil when
	// its usage has none); SpansBusiest says the streak spans it, compared after it ended.
	BusiestDay   *time.Time
	SpansBusiest bool
	// Deploys are the recorded deploys; SpansDeploy says the streak spans one (DeployAt),
	// compared after its day ended.
	Deploys     int
	DeployAt    *time.Time
	SpansDeploy bool
	// Ready: the cutover rule holds. Missing says what it still lacks.
	Ready   bool
	Missing []string
	// After the cutover, reads of the old asset are flagged: someone still reads what is
	// being retired (counted from the cutover's day, under any of the old asset's names).
	OldReadsSinceCutover int64
	OldLastRead          *time.Time
}

// PeakPeriod is how far back the new asset's usage is searched for its busiest write day: a
// recent period, so a peak before a streak break cannot lock the gate for good.
const PeakPeriod = 28 * 24 * time.Hour

const day = 24 * time.Hour

// spans reports whether a streak from..to spans the day holding t: the streak began before the
// day ended, and a clean run of it started after the day ended (it compared the whole day).
func spans(from, to time.Time, t time.Time) bool {
	end := t.UTC().Truncate(day).Add(day)
	return from.Before(end) && !to.Before(end)
}

// Status reads the runs and evaluates the cutover rule.
func (s *Service) Status(ctx context.Context, id uuid.UUID) (Status, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Status{}, err
	}
	st := Status{Migration: m, Rule: m.Spec.Cutover}
	if st.Rule.weaker() && st.Rule.WeakerReason == "" {
		st.Rule.MinCleanRuns, st.Rule.MinDays = max(st.Rule.MinCleanRuns, FloorCleanRuns), max(st.Rule.MinDays, FloorDays)
	}
	// The streak needs each run's time and verdict only; the results (windows) of the run that
	// broke it are read alone. Runs against the archive come after the cutover: not the streak.
	runs, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(id), reconciliationrun.FinishedAtNotNil(),
		reconciliationrun.AgainstEQ(reconciliationrun.AgainstLive)).
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
	}
	if err := s.spanned(ctx, m, &st); err != nil {
		return st, err
	}
	st.Missing = missing(st)
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

// spanned finds the weekend day, the busiest write day and the deploy the streak spans.
func (s *Service) spanned(ctx context.Context, m Migration, st *Status) error {
	if st.From != nil {
		// The first weekend day that ended inside the streak (and after the first window began).
		for d := st.From.Truncate(day); d.Add(day).Compare(*st.To) <= 0; d = d.Add(day) {
			if wd := d.Weekday(); (wd == time.Saturday || wd == time.Sunday) && d.Add(day).After(m.Spec.Since) && spans(*st.From, *st.To, d) {
				wday := d
				st.Weekend, st.WeekendDay = true, &wday
				break
			}
		}
	}
	now := s.clock()
	if s.usage != nil && m.Spec.Cutover.IncludeBusiestDay {
		series, err := s.usage.Series(ctx, m.NewAssetID, now.Add(-PeakPeriod), now, usage.Daily)
		if err != nil {
			return err
		}
		var most int64
		for _, p := range series.Points {
			if p.Writes > most {
				most, st.BusiestDay = p.Writes, &p.Start
			}
		}
		st.SpansBusiest = st.BusiestDay != nil && st.From != nil && spans(*st.From, *st.To, *st.BusiestDay)
	}
	evs, err := s.db.MigrationEvent.Query().Where(migrationevent.MigrationID(m.ID), migrationevent.KindEQ(migrationevent.KindDeploy)).
		Order(ent.Desc(migrationevent.FieldAt)).All(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: read events: %w", err)
	}
	st.Deploys = len(evs)
	for _, e := range evs {
		if st.From != nil && e.At.After(*st.From) && spans(*st.From, *st.To, e.At) {
			at := e.At.UTC()
			st.DeployAt, st.SpansDeploy = &at, true
			break
		}
	}
	return nil
}

// missing says what the streak still lacks under the status's rule.
func missing(st Status) []string {
	rule := st.Rule
	var out []string
	if st.Streak < rule.MinCleanRuns {
		out = append(out, fmt.Sprintf("%d consecutive clean runs (has %d)", rule.MinCleanRuns, st.Streak))
	}
	var days float64
	if st.From != nil {
		days = st.To.Sub(*st.From).Hours() / 24
	}
	if days < float64(rule.MinDays) {
		out = append(out, fmt.Sprintf("a streak over at least %d days (has %.1f)", rule.MinDays, days))
	}
	if rule.IncludeWeekend && !st.Weekend {
		out = append(out, "a weekend day inside the streak, compared by a clean run after the day ended")
	}
	if rule.IncludeBusiestDay && !st.SpansBusiest {
		if st.BusiestDay == nil {
			out = append(out, "the new asset's busiest write day of the last 28 days (its usage shows no writes in them)")
		} else {
			out = append(out, fmt.Sprintf("a streak spanning the new asset's busiest write day of the last 28 days, %s, compared by a clean run after it ended",
				st.BusiestDay.Format("2006-01-02")))
		}
	}
	if rule.IncludeDeploy && !st.SpansDeploy {
		if st.Deploys == 0 {
			out = append(out, "a deploy of the new side's writer inside the streak (none is recorded: POST it to the migration's events)")
		} else {
			out = append(out, "a recorded deploy inside the streak, compared by a clean run after its day ended")
		}
	}
	return out
}

// CutOver records that the move was cut over, naming the archive of the old side that the
// final reconciliation will read; refused unless the cutover rule holds.
func (s *Service) CutOver(ctx context.Context, id uuid.UUID, archive SourceSpec) (Migration, error) {
	st, err := s.Status(ctx, id)
	if err != nil {
		return Migration{}, err
	}
	if st.Migration.State != string(datasetmigration.StateActive) {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s is %s already", id, st.Migration.State)}
	}
	body, err := s.checkArchive(ctx, st.Migration, archive)
	if err != nil {
		return Migration{}, err
	}
	if !st.Ready {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s is not ready to cut over: it still needs %v", id, st.Missing)}
	}
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		n, err := tx.DatasetMigration.Update().Where(datasetmigration.ID(id), datasetmigration.Version(st.Migration.Version)).
			SetState(datasetmigration.StateCutOver).SetCutOverAt(now).SetArchive(body).SetUpdatedAt(now).AddVersion(1).Save(ctx)
		if err != nil {
			return fmt.Errorf("reconcile: cut over %s: %w", id, err)
		}
		if n == 0 {
			return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s changed meanwhile; read it again", id)}
		}
		return s.audit(ctx, tx, "migration.cutover", id, st.Migration.OldAssetID, map[string]any{"state": st.Migration.State},
			map[string]any{"state": string(datasetmigration.StateCutOver), "archive": archive.describe()})
	})
	if err != nil {
		return Migration{}, err
	}
	return s.Get(ctx, id)
}

// SetArchive names (or renames) the archive of a cut-over migration's old side: for a migration
// cut over before archives were named, or an archive that moved.
func (s *Service) SetArchive(ctx context.Context, id uuid.UUID, archive SourceSpec) (Migration, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Migration{}, err
	}
	if m.State != string(datasetmigration.StateCutOver) {
		return Migration{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
			"migration %s is %s: an archive is named at the cutover (POST its cutover with the archive)", id, m.State)}
	}
	body, err := s.checkArchive(ctx, m, archive)
	if err != nil {
		return Migration{}, err
	}
	err = s.tx(ctx, func(tx *ent.Tx) error {
		n, err := tx.DatasetMigration.Update().Where(datasetmigration.ID(id), datasetmigration.Version(m.Version)).
			SetArchive(body).SetUpdatedAt(s.clock()).AddVersion(1).Save(ctx)
		if err != nil {
			return fmt.Errorf("reconcile: name the archive of %s: %w", id, err)
		}
		if n == 0 {
			return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("migration %s changed meanwhile; read it again", id)}
		}
		before := map[string]any{}
		if m.Archive != nil {
			before["archive"] = m.Archive.describe()
		}
		return s.audit(ctx, tx, "migration.archive", id, m.OldAssetID, before, map[string]any{"archive": archive.describe()})
	})
	if err != nil {
		return Migration{}, err
	}
	return s.Get(ctx, id)
}

// checkArchive refuses an archive a final reconciliation could not read, and returns it as kept.
// An archive is a PostgreSQL table over a configured connection or a registered Iceberg table
// (at a snapshot, or its current one) that is neither side; or, for a migration whose checker
// posts the figures, one the checker reads (external).
func (s *Service) checkArchive(ctx context.Context, m Migration, a SourceSpec) (string, error) {
	if a.Keys == "" {
		a.Keys = m.Spec.Old.Keys
	}
	external := m.Spec.Old.Kind == SourceExternal || m.Spec.New.Kind == SourceExternal
	switch {
	case m.Spec.New.Kind == SourceExternal && a.Kind != SourceExternal:
		return "", invalid("archive", "the new side is read by the external checker, so it reads the archive too: name an archive of kind external")
	case a.Kind == SourceExternal && !external:
		return "", invalid("archive", "Tidemark reads both sides itself: name an archive it can read (postgres or iceberg)")
	}
	switch a.Kind {
	case SourceExternal:
		if a.Connection != "" || a.Table != "" || a.AssetID != nil || a.SnapshotID != nil {
			return "", invalid("archive", "an external archive is read by the checker: it takes no connection, table, asset_id or snapshot_id")
		}
	case SourcePostgres:
		if a.Connection == "" || a.Table == "" {
			return "", invalid("archive", "a postgres archive needs a connection name and a schema.table")
		}
		db := s.conns[a.Connection]
		if db == nil {
			return "", invalid("archive", "no PostgreSQL connection named %q is configured", a.Connection)
		}
		// The final run must be able to read it: a misspelt table is refused now, not at retirement.
		rows, err := db.QueryContext(ctx, "SELECT * FROM "+quoteTable(a.Table)+" LIMIT 0")
		if err != nil {
			return "", invalid("archive", "the archive table %s cannot be read over connection %q: %v", a.Table, a.Connection, err)
		}
		rows.Close()
		if a.AssetID != nil || a.SnapshotID != nil {
			return "", invalid("archive", "asset_id and snapshot_id name an Iceberg archive, not a postgres one")
		}
	case SourceIceberg:
		if a.AssetID == nil {
			return "", invalid("archive", "an Iceberg archive needs the asset_id of a registered table")
		}
		if *a.AssetID == m.NewAssetID || *a.AssetID == m.OldAssetID && a.SnapshotID == nil {
			return "", invalid("archive", "the archive must be kept apart from both sides (another table, or a snapshot of the old one)")
		}
		if s.tables == nil {
			return "", invalid("archive", "this process reads no Iceberg tables")
		}
		live, err := s.tables.Open(ctx, *a.AssetID)
		if err != nil {
			return "", err
		}
		if a.SnapshotID != nil && live.Table.Metadata().SnapshotByID(*a.SnapshotID) == nil {
			return "", invalid("archive", "the archive table has no snapshot %d", *a.SnapshotID)
		}
	default:
		return "", invalid("archive", "name the archive of the old side: kind postgres (connection, table), iceberg (asset_id, snapshot_id) or external, not %q", a.Kind)
	}
	if a.Keys != UniqueKeys && a.Keys != HistoryKeys {
		return "", invalid("archive", "the archive's keys must be unique or history, not %q", a.Keys)
	}
	b, err := json.Marshal(a)
	return string(b), err
}

// RetirementGate says whether an asset may be retired (cleanup.MigrationGate): an asset that is
// the old side of a migration only after the cutover and a clean final reconciliation against
// the archive named at the cutover (the newest run since the cutover), which it returns.
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
		if r.Archive == "" {
			return false, uuid.Nil, fmt.Sprintf("migration %s names no archive of the old side: name it, then run the final reconciliation against it", r.ID), nil
		}
		last, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(r.ID), reconciliationrun.FinishedAtNotNil(),
			reconciliationrun.StartedAtGT(*r.CutOverAt)).Order(ent.Desc(reconciliationrun.FieldStartedAt), ent.Desc(reconciliationrun.FieldID)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return false, uuid.Nil, "", fmt.Errorf("reconcile: runs of migration %s: %w", r.ID, err)
		}
		switch {
		case last == nil:
			return false, uuid.Nil, fmt.Sprintf("migration %s was cut over at %s, but no reconciliation has run since: run the final one against the archive first",
				r.ID, r.CutOverAt.UTC().Format(time.RFC3339)), nil
		case last.Against != reconciliationrun.AgainstArchive:
			return false, uuid.Nil, fmt.Sprintf("the newest reconciliation of migration %s, run %s, read the live old side, not the archive: run the final one against the archive", r.ID, last.ID), nil
		case !last.Clean:
			return false, uuid.Nil, fmt.Sprintf("the final reconciliation of migration %s against the archive, run %s, was not clean", r.ID, last.ID), nil
		}
		final = last.ID
	}
	return true, final, "", nil
}
