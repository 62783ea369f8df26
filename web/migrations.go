package web

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/reconcile"
)

type migrationsData struct {
	Items []reconcile.Migration
	Names map[uuid.UUID]string
	// The create form (for admins): as typed, with what a refused one must fix.
	Form        migrationForm
	Problems    []formProblem // every problem of a refused form, in the form's order
	Connections []string      // configured PostgreSQL databases a side may be read from
}

// Bad reports whether one of the refused form's problems is about the input named field.
func (d migrationsData) Bad(field string) bool {
	return slices.ContainsFunc(d.Problems, func(p formProblem) bool { return p.Field == field })
}

// CutoverBad reports whether the refused cutover's problem is about the input named field.
func (d migrationData) CutoverBad(field string) bool {
	return d.Actions.CutoverProblem != nil && d.Actions.CutoverProblem.Field == field
}

type migrationData struct {
	Status reconcile.Status
	Names  map[uuid.UUID]string
	Newest *reconcile.Run
	// Verdict says what the newest run compared and what it did not.
	Verdict runVerdict
	Differ  []reconcile.WindowResult // the newest run's windows that are not clean, or lag (the first differPage)
	// MoreDiffer: the newest run has more differing windows than the page shows.
	MoreDiffer bool
	Findings   []reconcile.Finding
	Runs       []reconcile.Run
	Events     []reconcile.Event // the newest recorded deploys
	Chart      streakChart
	// Readable: Tidemark reads both sides, so a person may run it now (an external checker's
	// migration takes its runs from the checker).
	Readable    bool
	Connections []string
	Actions     migrationActions
}

// migrationActions are the run and cutover forms' state after a refusal.
type migrationActions struct {
	RunProblem     string
	Archive        archiveForm
	CutoverProblem *formProblem
}

// differPage is how many of the newest run's differing windows the page draws.
const differPage = 100

// streakChart is the streak at each run, oldest first: it grows by one with each clean run and
// falls to zero at a break. From and To bound the x axis to the runs' span: with one run, the
// chart library would otherwise stretch the axis over years.
type streakChart struct {
	From   int64   `json:"from"`
	To     int64   `json:"to"`
	X      []int64 `json:"x"`
	Streak []int   `json:"streak"`
}

// minChartSpan is the narrowest x axis the streak chart draws (one run, or runs minutes apart).
const minChartSpan = time.Hour

func streakOf(runs []reconcile.Run) streakChart {
	var c streakChart
	streak := 0
	for _, run := range slices.Backward(runs) {
		if run.FinishedAt == nil {
			continue
		}
		if run.Clean {
			streak++
		} else {
			streak = 0
		}
		c.X = append(c.X, run.StartedAt.Unix())
		c.Streak = append(c.Streak, streak)
	}
	if len(c.X) == 0 {
		return c
	}
	c.From, c.To = c.X[0], c.X[len(c.X)-1]
	span := max(c.To-c.From, int64(minChartSpan/time.Second))
	pad := span / 20 // room either side, so the first and last points are not on the frame
	if c.To-c.From < span {
		pad += (span - (c.To - c.From)) / 2
	}
	c.From, c.To = c.From-pad, c.To+pad
	return c
}

// runVerdict is the newest run's verdict line: what it compared and what it did not, so the page
// never says the windows agree when the run read nothing.
type runVerdict struct {
	OK   bool
	Text string
	// Causes are the run's causes, each its own item (the first 50; More counts the rest).
	Causes []string
	More   int
}

// oneSideEmpty says what a run compared when one side held no rows at all (empty when both
// held some, or neither): "records compared" would count only the other side's.
func oneSideEmpty(run reconcile.Run) string {
	r := run.Summary.Rows
	if r == nil || (r.Old == 0) == (r.New == 0) {
		return ""
	}
	empty, full, n := "old", "new", r.New
	if r.New == 0 {
		empty, full, n = "new", "old", r.Old
	}
	return fmt.Sprintf("The %s side held no rows over the newest run's %s, the %s side %s: nothing on the %s side was compared with anything, and every one of those records is missing from the %s side.",
		empty, words.Count(int64(run.Summary.Windows), "window"), full, words.Count(n, "record"), full, empty)
}

func verdictOf(run reconcile.Run, differ int) runVerdict {
	v := runVerdict{Causes: run.Causes, More: max(run.Summary.CausesTotal-len(run.Causes), 0)}
	windows := words.Count(int64(run.Summary.Windows), "window")
	switch {
	case run.FinishedAt == nil:
		v.Text = "The newest run has not finished: nothing of it is compared yet."
	case run.Error != "":
		v.Text = "The newest run could not read both sides, so it compared nothing and shows nothing to agree: " + run.Error
		v.Causes, v.More = nil, 0 // the error is the cause
	case run.Cost.Compared == 0:
		v.Text = fmt.Sprintf("The newest run read both sides over %s but found no rows on either: nothing was compared, so nothing is shown to agree.", windows)
		v.Causes, v.More = nil, 0 // the line says it
	case oneSideEmpty(run) != "":
		v.Text = oneSideEmpty(run)
		if differ > 0 {
			v.Causes, v.More = nil, 0 // the table below says why, window by window
			v.Text += " Why each window differs:"
		}
	case differ > 0:
		v.Causes, v.More = nil, 0 // the table below says why, window by window
		how := fmt.Sprintf("%d not clean", run.Summary.Unclean)
		switch lag := run.Summary.Differing - run.Summary.Unclean; {
		case lag > 0 && run.Summary.Unclean == 0:
			how = "all of them only lag within the bound"
		case lag > 0:
			how += fmt.Sprintf(", %d only lag within the bound", lag)
		}
		v.Text = fmt.Sprintf("%d of the newest run's %s differ (%s); %s compared, both sides together.%s Why each differs:",
			run.Summary.Differing, windows, how, words.Count(run.Cost.Compared, "record"), reusedText(run.Cost))
	case !run.Clean:
		v.Text = fmt.Sprintf("No window of the newest run's %s differs, but the run is not clean:", windows)
	default:
		v.OK = true
		all := fmt.Sprintf("All %s of the newest run agree", windows)
		if run.Summary.Windows == 1 {
			all = "The newest run's one window agrees"
		}
		v.Text = fmt.Sprintf("%s: %s compared, both sides together (rows, keys and checksums per window).", all, words.Count(run.Cost.Compared, "record"))
		v.Text += reusedText(run.Cost)
	}
	return v
}

// reusedText says what of a run is the previous run's: a verdict names what it did not read
// again.
func reusedText(c reconcile.Cost) string {
	var out string
	switch {
	case c.ReusedOld > 0 && c.Reused > 0:
		out = fmt.Sprintf(" The figures of %s on the old side and %s on the new side are the previous run's (nothing changed there since).",
			words.Count(c.ReusedOld, "window"), words.Count(c.Reused, "window"))
	case c.ReusedOld > 0:
		out = fmt.Sprintf(" The old-side figures of %s are the previous run's (nothing changed there since).", words.Count(c.ReusedOld, "window"))
	case c.Reused > 0:
		out = fmt.Sprintf(" The new-side figures of %s are the previous run's (nothing changed there since).", words.Count(c.Reused, "window"))
	}
	if c.ReusedDeep > 0 {
		out += fmt.Sprintf(" The record-by-record comparisons of %s are the previous run's (neither side changed in them since).", words.Count(c.ReusedDeep, "differing window"))
	}
	return out
}

func (u *UI) migrations(w http.ResponseWriter, r *http.Request) {
	u.migrationsPage(w, r, http.StatusOK, newMigrationForm(), nil)
}

// migrationsPage renders the list with the create form as given (and what a refused one must fix).
func (u *UI) migrationsPage(w http.ResponseWriter, r *http.Request, status int, f migrationForm, problems []formProblem) {
	ms, err := u.cfg.Reconcile.List(r.Context(), uuid.Nil, 200)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	var ids []uuid.UUID
	for _, m := range ms {
		ids = append(ids, m.OldAssetID, m.NewAssetID)
	}
	d := migrationsData{Items: ms, Form: f, Problems: problems, Connections: u.cfg.Reconcile.Connections()}
	if d.Names, err = u.names(r, ids, false); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, status, "migrations", "Migrations", d)
}

func (u *UI) migration(w http.ResponseWriter, r *http.Request) {
	u.migrationPage(w, r, http.StatusOK, migrationActions{})
}

// migrationPage renders a migration's page, with the run and cutover forms' state.
func (u *UI) migrationPage(w http.ResponseWriter, r *http.Request, status int, act migrationActions) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a migration ID"})
		return
	}
	ctx := r.Context()
	st, err := u.cfg.Reconcile.Status(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := migrationData{Status: st, Actions: act, Readable: st.Migration.Readable(), Connections: u.cfg.Reconcile.Connections()}
	if d.Actions.Archive.Kind == "" && st.Migration.Spec.Old.Kind == reconcile.SourcePostgres {
		d.Actions.Archive = archiveForm{Kind: string(reconcile.SourcePostgres), Connection: st.Migration.Spec.Old.Connection}
	}
	if d.Runs, err = u.cfg.Reconcile.Runs(ctx, id, 500); err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Findings, err = u.cfg.Reconcile.Findings(ctx, id); err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Events, err = u.cfg.Reconcile.Events(ctx, id, 20); err != nil {
		u.fail(w, r, err)
		return
	}
	ids := []uuid.UUID{st.Migration.OldAssetID, st.Migration.NewAssetID}
	if a := st.Migration.Archive; a != nil && a.AssetID != nil {
		ids = append(ids, *a.AssetID)
	}
	if d.Names, err = u.names(r, ids, false); err != nil {
		u.fail(w, r, err)
		return
	}
	if len(d.Runs) > 0 {
		// The page draws the newest run's differing windows, a page of them; the rest are an API
		// page away (windows_url).
		d.Newest = &d.Runs[0]
		if d.Differ, d.MoreDiffer, err = u.cfg.Reconcile.Windows(ctx, id, d.Newest.ID, reconcile.WindowQuery{Limit: differPage, Differing: true}); err != nil {
			u.fail(w, r, err)
			return
		}
		d.Verdict = verdictOf(*d.Newest, len(d.Differ))
	}
	d.Chart = streakOf(d.Runs)
	if len(d.Runs) > 50 {
		d.Runs = d.Runs[:50]
	}
	u.render(w, r, status, "migration", "Migration "+short(id), d)
}
