package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/reconciliationfinding"
	"github.com/tidemark/tidemark/ent/reconciliationrun"
	"github.com/tidemark/tidemark/ent/reconciliationwindow"
	"github.com/tidemark/tidemark/ent/webhook"
	"github.com/tidemark/tidemark/internal/chunk"
)

// Bounds on what a run keeps and answers, so no run and no answer grows with the data: a run's
// windows are rows read a page at a time, its summary quotes a bounded number of causes, and a
// quoted value is clipped.
const (
	// MaxWindows is the most windows a migration's span (since to now) may hold.
	MaxWindows = 10_000
	// MaxWindowPage is the largest page of a run's windows.
	MaxWindowPage = 500
	// maxCauses is how many causes a run's summary quotes; the rest are counted.
	maxCauses = 50
)

// Summary counts a run's windows: what a list of runs carries instead of the windows.
type Summary struct {
	Windows int `json:"windows"`
	// Unclean windows hold a class other than lag; Differing ones any class, lag included.
	Unclean   int           `json:"unclean"`
	Differing int           `json:"differing"`
	Classes   map[Class]int `json:"classes"` // windows per class
	// CausesTotal counts every cause; the run quotes the first maxCauses.
	CausesTotal int `json:"causes_total"`
	// Rows are the records each side holds over the run's windows, so a summary can say when one
	// side is empty (absent on runs recorded before it was kept).
	Rows *SideRows `json:"rows,omitempty"`
}

// SideRows are the records of each side over a run's windows.
type SideRows struct {
	Old int64 `json:"old"`
	New int64 `json:"new"`
}

// storedSummary is a run's summary column.
type storedSummary struct {
	Summary
	Causes []string `json:"causes"`
	Cost   Cost     `json:"cost"`
	// Hashing is the hash scheme and plan of the run's checksums (hashing.go); empty before them.
	Hashing string `json:"hashing,omitempty"`
	// Logs are the snapshots a PostgreSQL side's change log was read at (old, new; "" for none):
	// the next run reads that side's windows changed since.
	Logs [2]string `json:"change_log_snapshots"`
}

func summarize(windows []WindowResult, causes []string) (Summary, []string) {
	sum := Summary{Windows: len(windows), Classes: map[Class]int{}, CausesTotal: len(causes), Rows: &SideRows{}}
	for _, w := range windows {
		sum.Rows.Old += w.Old.Rows
		sum.Rows.New += w.New.Rows
		if !w.Clean() {
			sum.Unclean++
		}
		if len(w.Classes) > 0 {
			sum.Differing++
		}
		for _, c := range w.Classes {
			sum.Classes[c]++
		}
	}
	if len(causes) > maxCauses {
		causes = causes[:maxCauses]
	}
	return sum, causes
}

// finish stores the run, its windows, and opens or closes findings, in one transaction.
func (s *Service) finish(ctx context.Context, m Migration, run *Run, causes []string) error {
	run.Summary, run.Causes = summarize(run.Windows, causes)
	body, err := json.Marshal(storedSummary{Summary: run.Summary, Causes: run.Causes, Cost: run.Cost, Hashing: run.hashing, Logs: run.logs})
	if err != nil {
		return err
	}
	fin := s.clock()
	run.FinishedAt = &fin
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("reconcile: store the run: %w", err)
	}
	err = func() error {
		if err := tx.ReconciliationRun.UpdateOneID(run.ID).SetFinishedAt(fin).SetClean(run.Clean).SetSummary(string(body)).
			SetError(run.Error).Exec(ctx); err != nil {
			return err
		}
		err := chunk.Each(run.Windows, func(part []WindowResult) error {
			rows := make([]*ent.ReconciliationWindowCreate, len(part))
			for i, w := range part {
				b, err := json.Marshal(w)
				if err != nil {
					return err
				}
				rows[i] = tx.ReconciliationWindow.Create().SetRunID(run.ID).SetStart(w.Start).SetClean(w.Clean()).
					SetDiffers(len(w.Classes) > 0).SetBody(string(b))
			}
			return tx.ReconciliationWindow.CreateBulk(rows...).Exec(ctx)
		})
		if err != nil {
			return err
		}
		if run.Error != "" {
			return nil // a failed read proves nothing either way about the findings
		}
		return s.findings(ctx, tx, m, run)
	}()
	if err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("reconcile: store the run: %w", err)
	}
	return tx.Commit()
}

type findingKey struct {
	kind   reconciliationfinding.Kind
	side   reconciliationfinding.Side
	window int64
}

// findings opens a finding for each defect of the run not already open, and closes the open
// ones the run no longer shows. The caller holds the migration's run claim, so no other run
// reads and writes the findings meanwhile.
func (s *Service) findings(ctx context.Context, tx *ent.Tx, m Migration, run *Run) error {
	seen := map[findingKey]string{}
	for _, w := range run.Windows {
		st := w.Start.Unix()
		if w.Old.DuplicateKeys > 0 {
			seen[findingKey{reconciliationfinding.KindDuplication, reconciliationfinding.SideOld, st}] = fmt.Sprintf("%d keys twice or more on the old side", w.Old.DuplicateKeys)
		}
		if w.New.DuplicateKeys > 0 {
			seen[findingKey{reconciliationfinding.KindDuplication, reconciliationfinding.SideNew, st}] = fmt.Sprintf("%d keys twice or more on the new side", w.New.DuplicateKeys)
		}
		if slices.Contains(w.Classes, Moved) {
			seen[findingKey{reconciliationfinding.KindMoved, reconciliationfinding.SideNew, st}] = fmt.Sprintf(
				"%d records of this window carry another time on the new side, %d moved in from another window", w.Moved, w.MovedIn)
		}
		if slices.Contains(w.Classes, Divergence) {
			seen[findingKey{reconciliationfinding.KindDivergence, reconciliationfinding.SideBoth, st}] = fmt.Sprintf(
				"%d differing, %d missing on the new side, %d only on the new side", w.Differing, w.Missing, w.Extra)
		}
	}
	open, err := tx.ReconciliationFinding.Query().Where(reconciliationfinding.MigrationID(m.ID), reconciliationfinding.ClosedAtIsNil()).All(ctx)
	if err != nil {
		return err
	}
	for _, f := range open {
		k := findingKey{f.Kind, f.Side, f.WindowStart.Unix()}
		if _, still := seen[k]; still {
			delete(seen, k)
			continue
		}
		if err := f.Update().SetClosedRunID(run.ID).SetClosedAt(*run.FinishedAt).Exec(ctx); err != nil {
			return err
		}
	}
	hook, err := tx.Webhook.Query().Where(webhook.Principal(m.Owner)).Only(ctx)
	if err != nil && !ent.IsNotFound(err) {
		return err
	}
	keys := slices.SortedFunc(maps.Keys(seen), func(a, b findingKey) int { // one order: the notifications' too
		return cmp.Or(cmp.Compare(a.window, b.window), cmp.Compare(a.kind, b.kind), cmp.Compare(a.side, b.side))
	})
	for _, k := range keys {
		f, err := tx.ReconciliationFinding.Create().SetMigrationID(m.ID).SetKind(k.kind).SetSide(k.side).
			SetWindowStart(time.Unix(k.window, 0).UTC()).SetOwner(m.Owner).SetDetail(seen[k]).
			SetOpenedRunID(run.ID).SetOpenedAt(*run.FinishedAt).Save(ctx)
		if err != nil {
			return err
		}
		if hook != nil {
			if err := notifyFinding(ctx, tx, hook, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// FindingNotification is what the migration owner's webhook receives when a run opens a
// finding. ID is also the Idempotency-Key header (delivery is at least once).
type FindingNotification struct {
	ID        uuid.UUID      `json:"id"`
	Event     string         `json:"event"` // finding.opened
	Recipient string         `json:"recipient"`
	At        time.Time      `json:"at"`
	Finding   FindingSummary `json:"finding"`
}

// FindingSummary is the part of a finding a notification carries.
type FindingSummary struct {
	ID          uuid.UUID `json:"id"`
	MigrationID uuid.UUID `json:"migration_id"`
	Kind        string    `json:"kind"`
	Side        string    `json:"side"`
	WindowStart time.Time `json:"window_start"`
	Detail      string    `json:"detail"`
	OpenedRunID uuid.UUID `json:"opened_run_id"`
	Page        string    `json:"page"` // the migration's page, relative to Tidemark's address
}

// notifyFinding writes the owner's notification of a new finding into the outbox, in the run's
// transaction: it is sent (by the outbox's dispatcher) exactly when the finding is kept.
func notifyFinding(ctx context.Context, tx *ent.Tx, hook *ent.Webhook, f *ent.ReconciliationFinding) error {
	id := uuid.Must(uuid.NewV7())
	n := FindingNotification{ID: id, Event: "finding.opened", Recipient: hook.Principal, At: f.OpenedAt.UTC(), Finding: FindingSummary{
		ID: f.ID, MigrationID: f.MigrationID, Kind: string(f.Kind), Side: string(f.Side), WindowStart: f.WindowStart.UTC(), Detail: f.Detail,
		OpenedRunID: f.OpenedRunID, Page: "/migrations/" + f.MigrationID.String()}}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return tx.OutboxMessage.Create().SetID(id).SetEvent(n.Event).SetFindingID(f.ID).SetRecipient(hook.Principal).SetURL(hook.URL).
		SetPayload(string(body)).SetNextAttemptAt(f.OpenedAt).SetCreatedAt(f.OpenedAt).Exec(ctx)
}

// runFields are a run's columns but the legacy result, which can be large: lists read these.
var runFields = []string{reconciliationrun.FieldMigrationID, reconciliationrun.FieldStartedAt, reconciliationrun.FieldFinishedAt,
	reconciliationrun.FieldOrigin, reconciliationrun.FieldAgainst, reconciliationrun.FieldClean, reconciliationrun.FieldSummary, reconciliationrun.FieldError}

// Runs returns a migration's runs, newest first, with their summaries (no windows: read those
// with Windows).
func (s *Service) Runs(ctx context.Context, id uuid.UUID, limit int) ([]Run, error) {
	rows, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.MigrationID(id)).
		Order(ent.Desc(reconciliationrun.FieldStartedAt), ent.Desc(reconciliationrun.FieldID)).Limit(limit).Select(runFields...).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read runs: %w", err)
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		if out[i], err = s.toRun(ctx, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RunOf returns one run of a migration with its summary.
func (s *Service) RunOf(ctx context.Context, migrationID, runID uuid.UUID) (Run, error) {
	r, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.ID(runID), reconciliationrun.MigrationID(migrationID)).
		Select(runFields...).Only(ctx)
	if ent.IsNotFound(err) {
		return Run{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("migration %s has no run %s", migrationID, runID)}
	}
	if err != nil {
		return Run{}, fmt.Errorf("reconcile: read run %s: %w", runID, err)
	}
	return s.toRun(ctx, r)
}

// toRun decodes a stored run's summary. A run stored before windows were rows has no summary
// column: its result is read, alone, and summarised.
func (s *Service) toRun(ctx context.Context, r *ent.ReconciliationRun) (Run, error) {
	out := Run{ID: r.ID, MigrationID: r.MigrationID, StartedAt: r.StartedAt.UTC(), FinishedAt: r.FinishedAt, Origin: string(r.Origin), Against: string(r.Against),
		Clean: r.Clean, Error: r.Error, Causes: []string{}, Summary: Summary{Classes: map[Class]int{}}}
	if r.Summary != "" {
		var sum storedSummary
		if err := json.Unmarshal([]byte(r.Summary), &sum); err != nil {
			return out, fmt.Errorf("reconcile: run %s: %w", r.ID, err)
		}
		out.Summary, out.Causes, out.Cost = sum.Summary, sum.Causes, sum.Cost
		if out.Summary.Classes == nil {
			out.Summary.Classes = map[Class]int{}
		}
		return out, nil
	}
	res, err := s.legacyResult(ctx, r.ID)
	if err != nil || res == nil {
		return out, err
	}
	out.legacy = true
	out.Summary, out.Causes = summarize(res.Windows, res.Causes)
	out.Cost = res.Cost
	return out, nil
}

// legacyResult is the result document of a run stored before windows were rows (nil for others).
type legacyResult struct {
	Windows []WindowResult `json:"windows"`
	Causes  []string       `json:"causes"`
	Cost    Cost           `json:"cost"`
}

func (s *Service) legacyResult(ctx context.Context, runID uuid.UUID) (*legacyResult, error) {
	rows, err := s.db.ReconciliationRun.Query().Where(reconciliationrun.ID(runID)).Select(reconciliationrun.FieldResult).Strings(ctx)
	if err != nil {
		return nil, fmt.Errorf("reconcile: read run %s: %w", runID, err)
	}
	if len(rows) == 0 || rows[0] == "" {
		return nil, nil
	}
	var res legacyResult
	if err := json.Unmarshal([]byte(rows[0]), &res); err != nil {
		return nil, fmt.Errorf("reconcile: run %s: %w", runID, err)
	}
	return &res, nil
}

// WindowQuery selects a page of a run's windows, by start.
type WindowQuery struct {
	After     *time.Time // windows starting after this one
	Limit     int        // 1 to MaxWindowPage
	Differing bool       // only windows with a class (lag included)
}

// Windows returns a page of a run's windows in start order and whether more follow.
func (s *Service) Windows(ctx context.Context, migrationID, runID uuid.UUID, q WindowQuery) ([]WindowResult, bool, error) {
	if q.Limit < 1 || q.Limit > MaxWindowPage {
		return nil, false, invalid("limit", "a page holds 1 to %d windows, not %d", MaxWindowPage, q.Limit)
	}
	run, err := s.RunOf(ctx, migrationID, runID)
	if err != nil {
		return nil, false, err
	}
	if run.legacy {
		res, err := s.legacyResult(ctx, runID)
		if err != nil || res == nil {
			return nil, false, err
		}
		return pageOf(res.Windows, q)
	}
	w := s.db.ReconciliationWindow.Query().Where(reconciliationwindow.RunID(runID))
	if q.After != nil {
		w = w.Where(reconciliationwindow.StartGT(*q.After))
	}
	if q.Differing {
		w = w.Where(reconciliationwindow.Differs(true))
	}
	bodies, err := w.Order(ent.Asc(reconciliationwindow.FieldStart)).Limit(q.Limit + 1).Select(reconciliationwindow.FieldBody).Strings(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("reconcile: read the windows of run %s: %w", runID, err)
	}
	more := len(bodies) > q.Limit
	if more {
		bodies = bodies[:q.Limit]
	}
	out := make([]WindowResult, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal([]byte(b), &out[i]); err != nil {
			return nil, false, fmt.Errorf("reconcile: a window of run %s: %w", runID, err)
		}
	}
	return out, more, nil
}

// pageOf pages a legacy run's windows in memory, as Windows pages stored ones.
func pageOf(all []WindowResult, q WindowQuery) ([]WindowResult, bool, error) {
	var out []WindowResult
	for _, w := range all {
		if (q.After != nil && !w.Start.After(*q.After)) || (q.Differing && len(w.Classes) == 0) {
			continue
		}
		if len(out) == q.Limit {
			return out, true, nil
		}
		out = append(out, w)
	}
	return out, false, nil
}
