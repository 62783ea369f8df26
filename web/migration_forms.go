package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
)

// Migrations from the browser: creating one (admin: its runs read the named databases and
// answers quote values), running one now (write) and cutting one over (admin, refused by the
// domain unless the cutover rule holds). They call the reconcile functions the API calls; a
// refused form is shown again with what to fix and everything typed kept.

func init() {
	flashes["migration-created"] = "Migration created: run it now, or wait for the scheduled runs"
	flashes["run-recorded"] = "Run recorded: its verdict is below"
	flashes["cut-over"] = "Cut over: the runs from now on read the archive"
}

// migrationForm is the create form as typed: strings, so a refused form shows exactly what the
// person typed.
type migrationForm struct {
	Old, New, Owner                                  string
	KeyColumns, TimeColumn, Columns                  string
	Window, Since, LagBound                          string
	DedupOld, DedupNew                               string
	MinCleanRuns, MinDays, WeakerReason              string
	IncludeWeekend, IncludeBusiestDay, IncludeDeploy bool
	SampleSize, CheckerToken                         string
	QuoteValues                                      bool
	OldKind, OldConnection, OldTable, OldKeys        string
	NewKind, NewConnection, NewTable, NewKeys        string
	OldChangeLog, NewChangeLog                       string
}

// newMigrationForm is the empty form: the rule's floor filled in, every rule still to choose.
func newMigrationForm() migrationForm {
	return migrationForm{MinCleanRuns: strconv.Itoa(reconcile.FloorCleanRuns), MinDays: strconv.Itoa(reconcile.FloorDays),
		IncludeWeekend: true, IncludeBusiestDay: true, OldKeys: "unique", NewKeys: "unique"}
}

func readMigrationForm(r *http.Request) migrationForm {
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	on := func(k string) bool { return r.PostFormValue(k) == "on" }
	return migrationForm{Old: v("old"), New: v("new"), Owner: v("owner"), KeyColumns: v("key_columns"), TimeColumn: v("time_column"),
		Columns: v("columns"), Window: v("window"), Since: v("since"), LagBound: v("lag_bound"), DedupOld: v("dedup_old"), DedupNew: v("dedup_new"),
		MinCleanRuns: v("min_clean_runs"), MinDays: v("min_days"), WeakerReason: v("weaker_reason"), IncludeWeekend: on("include_weekend"),
		IncludeBusiestDay: on("include_busiest_day"), IncludeDeploy: on("include_deploy"), SampleSize: v("sample_size"), CheckerToken: v("checker_token"),
		QuoteValues: on("quote_values"), OldKind: v("old_kind"), OldConnection: v("old_connection"), OldTable: v("old_table"), OldKeys: v("old_keys"),
		NewKind: v("new_kind"), NewConnection: v("new_connection"), NewTable: v("new_table"), NewKeys: v("new_keys"),
		OldChangeLog: v("old_change_log"), NewChangeLog: v("new_change_log")}
}

// formProblem is what a refused form says, and the input it is about (marked on the form).
type formProblem struct {
	Field   string
	Message string
}

// formFields maps the domain's field names to the form's inputs.
var formFields = map[string]string{"old_asset_id": "old", "new_asset_id": "new", "window_seconds": "window", "lag_bound_seconds": "lag_bound",
	"cutover": "min_clean_runs", "spec": "old_connection", "archive": "archive_kind"}

// asProblems turns a refusal of the domain (invalid, not found, conflict) into the form's
// problems, every one the domain found; nil for any other error, which is the page's failure.
func asProblems(err error) []formProblem {
	if !(errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrConflict)) {
		return nil
	}
	var out []formProblem
	for _, de := range catalog.Problems(err) {
		field := de.Field
		if f, ok := formFields[field]; ok {
			field = f
		}
		msg := inWords.Replace(de.Message)
		if l, ok := formLabels[field]; ok {
			msg = l + ": " + msg // the domain's message may not name the side it is about
		}
		out = append(out, formProblem{Field: field, Message: msg})
	}
	return out
}

// asProblem is asProblems for a form that shows one problem.
func asProblem(err error) *formProblem {
	if ps := asProblems(err); len(ps) > 0 {
		return &ps[0]
	}
	return nil
}

// formLabels name the inputs whose domain messages do not say which one they are about.
var formLabels = map[string]string{"dedup_old": "Dedup rule, old side", "dedup_new": "Dedup rule, new side", "old": "Old side", "new": "New side"}

// inWords replaces the API's field names in a domain message with the form's labels: a person
// filling the form never saw the API's names.
var inWords = strings.NewReplacer("(weaker_reason)", "(the reason for fewer runs)", "the weaker_reason", "the reason for fewer runs",
	"checker_token is", "A checker token is", "first_wins, last_wins or merge", "first wins, last wins or merge",
	"since must", "The first window (since) must", "since %s", "the first window")

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// assetRef finds the asset a form names by ID or by name (any namespace; an ambiguous name says
// so).
func (u *UI) assetRef(r *http.Request, field, s string) (uuid.UUID, *formProblem) {
	if s == "" {
		return uuid.Nil, &formProblem{field, fmt.Sprintf("Name the %s asset: its ID (on its page) or its name.", field)}
	}
	if id, err := uuid.Parse(s); err == nil {
		return id, nil
	}
	res, err := u.cfg.Catalog.Resolve(r.Context(), "", s)
	if err != nil {
		if p := asProblem(err); p != nil {
			return uuid.Nil, &formProblem{field, "The " + field + " asset: " + p.Message}
		}
		return uuid.Nil, &formProblem{field, fmt.Sprintf("The %s asset %q could not be looked up; try again.", field, s)}
	}
	return res.Asset.ID, nil
}

// durationInput reads a duration such as 24h; empty leaves the domain to say what is missing.
func durationInput(field, s string) (int64, *formProblem) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, &formProblem{field, fmt.Sprintf("%s must be a duration such as 24h or 90m, not %q.", inputLabels[field], s)}
	}
	return int64(d / time.Second), nil
}

func intInput(field, s string, def int) (int, *formProblem) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, &formProblem{field, fmt.Sprintf("%s must be a whole number, not %q.", inputLabels[field], s)}
	}
	return n, nil
}

// sinceInput reads a day (2026-11-02, UTC) or an RFC 3339 time.
func sinceInput(s string) (time.Time, *formProblem) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, &formProblem{"since", fmt.Sprintf("The first window (since) must be a day such as 2026-11-02 or a time such as 2026-11-02T00:00:00Z, not %q.", s)}
}

// inputLabels name the form's inputs as the form shows them.
var inputLabels = map[string]string{"window": "The window", "lag_bound": "The lag bound", "min_clean_runs": "Clean runs in a row",
	"min_days": "The days the streak spans", "sample_size": "The sample size"}

// migrationInput turns the form into what reconcile.Create takes, with every problem of the
// typing at once; the domain checks the rules (and adds its own problems to these).
func (u *UI) migrationInput(r *http.Request, f migrationForm) (reconcile.CreateInput, []formProblem) {
	in := reconcile.CreateInput{Owner: f.Owner}
	var problems []formProblem
	keep := func(p *formProblem) {
		if p != nil {
			problems = append(problems, *p)
		}
	}
	var p *formProblem
	in.OldAssetID, p = u.assetRef(r, "old", f.Old)
	keep(p)
	in.NewAssetID, p = u.assetRef(r, "new", f.New)
	keep(p)
	sp := reconcile.Spec{KeyColumns: splitList(f.KeyColumns), TimeColumn: f.TimeColumn, Columns: splitList(f.Columns),
		DedupOld: reconcile.DedupRule(f.DedupOld), DedupNew: reconcile.DedupRule(f.DedupNew), QuoteValues: f.QuoteValues, Checker: f.CheckerToken,
		Cutover: reconcile.CutoverRule{IncludeWeekend: f.IncludeWeekend, IncludeBusiestDay: f.IncludeBusiestDay, IncludeDeploy: f.IncludeDeploy, WeakerReason: f.WeakerReason},
		Old: reconcile.SourceSpec{Kind: reconcile.SourceKind(f.OldKind), Connection: f.OldConnection, Table: f.OldTable, ChangeLog: f.OldChangeLog,
			Keys: reconcile.KeyRule(f.OldKeys)},
		New: reconcile.SourceSpec{Kind: reconcile.SourceKind(f.NewKind), Connection: f.NewConnection, Table: f.NewTable, ChangeLog: f.NewChangeLog,
			Keys: reconcile.KeyRule(f.NewKeys)}}
	sp.WindowSeconds, p = durationInput("window", f.Window)
	keep(p)
	sp.LagBoundSeconds, p = durationInput("lag_bound", f.LagBound)
	keep(p)
	sp.Since, p = sinceInput(f.Since)
	keep(p)
	sp.Cutover.MinCleanRuns, p = intInput("min_clean_runs", f.MinCleanRuns, 0)
	keep(p)
	sp.Cutover.MinDays, p = intInput("min_days", f.MinDays, 0)
	keep(p)
	sp.SampleSize, p = intInput("sample_size", f.SampleSize, 0)
	keep(p)
	in.Spec = sp
	return in, problems
}

// sameInput reports whether two problems are about the same input (the cutover rule's two
// numbers are one problem to the domain).
func sameInput(a, b string) bool {
	group := func(f string) string {
		if f == "min_days" {
			return "min_clean_runs"
		}
		return f
	}
	return group(a) == group(b)
}

// writer returns the signed-in session that may act, or answers 403 itself: a session, the
// form's CSRF token, and the scope (admin, or write).
func (u *UI) writer(w http.ResponseWriter, r *http.Request, admin bool, what string) *session {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	s := u.sessions.get(r)
	if s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden: sign in, and use the page's own form", http.StatusForbidden)
		return nil
	}
	if (admin && !s.Admin) || !s.Write {
		scope := "write"
		if admin {
			scope = "admin"
		}
		http.Error(w, fmt.Sprintf("forbidden: %s needs a token with the %s scope", what, scope), http.StatusForbidden)
		return nil
	}
	return s
}

func (u *UI) createMigration(w http.ResponseWriter, r *http.Request) {
	s := u.writer(w, r, true, "creating a migration")
	if s == nil {
		return
	}
	ctx := catalog.WithActor(r.Context(), s.actor())
	f := readMigrationForm(r)
	in, problems := u.migrationInput(r, f)
	if len(problems) == 0 {
		m, err := u.cfg.Reconcile.Create(ctx, in)
		if err == nil {
			http.Redirect(w, r, "/migrations/"+m.ID.String()+"?flash=migration-created", http.StatusSeeOther)
			return
		}
		if problems = asProblems(err); problems == nil {
			u.fail(w, r, err)
			return
		}
	} else if err := u.cfg.Reconcile.Check(ctx, &in); err != nil {
		// The typing was wrong somewhere: the domain still says what else is missing, so the
		// person sees every problem at once. (An input the typing could not read is zero here,
		// and the domain's word on it is left out: the typing's problem already names it.)
		for _, dp := range asProblems(err) {
			if !slices.ContainsFunc(problems, func(p formProblem) bool { return sameInput(p.Field, dp.Field) }) {
				problems = append(problems, dp)
			}
		}
	}
	u.migrationsPage(w, r, http.StatusBadRequest, f, problems)
}

// runMigration reconciles now. A run that could not read a side is recorded (its page says
// why); a run refused before it started (another one running, an external side) is said on
// the page.
func (u *UI) runMigration(w http.ResponseWriter, r *http.Request) {
	s := u.writer(w, r, false, "running a migration")
	if s == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a migration ID"})
		return
	}
	run, err := u.cfg.Reconcile.Reconcile(catalog.WithActor(r.Context(), s.actor()), id)
	if err != nil && run.ID == uuid.Nil {
		var de *catalog.Error
		status := http.StatusConflict
		switch {
		case errors.As(err, &de) && errors.Is(err, catalog.ErrUnavailable):
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", "30")
		case errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid):
			status = http.StatusBadRequest
		case errors.As(err, &de) && errors.Is(err, catalog.ErrConflict):
		default:
			u.fail(w, r, err) // not found, or a failure of ours
			return
		}
		u.migrationPage(w, r, status, migrationActions{RunProblem: de.Message})
		return
	}
	http.Redirect(w, r, "/migrations/"+id.String()+"?flash=run-recorded#windows-h", http.StatusSeeOther)
}

// archiveForm is the cutover form as typed.
type archiveForm struct {
	Kind, Connection, Table, Asset, Snapshot string
}

func (u *UI) cutOver(w http.ResponseWriter, r *http.Request) {
	s := u.writer(w, r, true, "cutting a migration over")
	if s == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a migration ID"})
		return
	}
	v := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	f := archiveForm{Kind: v("archive_kind"), Connection: v("archive_connection"), Table: v("archive_table"), Asset: v("archive_asset"), Snapshot: v("archive_snapshot")}
	a := reconcile.SourceSpec{Kind: reconcile.SourceKind(f.Kind), Connection: f.Connection, Table: f.Table}
	var problem *formProblem
	if f.Kind == "" {
		problem = &formProblem{"archive_kind", "Name the archive of the old side, which the final reconciliation reads: a PostgreSQL table, a registered Iceberg table, or the external checker's."}
	}
	if problem == nil && f.Asset != "" {
		var asset uuid.UUID
		if asset, problem = u.assetRef(r, "archive", f.Asset); problem == nil {
			a.AssetID = &asset
		}
	}
	if problem == nil && f.Snapshot != "" {
		n, err := strconv.ParseInt(f.Snapshot, 10, 64)
		if err != nil {
			problem = &formProblem{"archive_snapshot", fmt.Sprintf("The snapshot is an Iceberg snapshot ID (a whole number), not %q.", f.Snapshot)}
		}
		a.SnapshotID = &n
	}
	if problem == nil {
		_, err = u.cfg.Reconcile.CutOver(catalog.WithActor(r.Context(), s.actor()), id, a)
		if err == nil {
			http.Redirect(w, r, "/migrations/"+id.String()+"?flash=cut-over", http.StatusSeeOther)
			return
		}
		if problem = asProblem(err); problem == nil {
			u.fail(w, r, err)
			return
		}
	}
	status := http.StatusBadRequest
	if errors.Is(err, catalog.ErrConflict) {
		status = http.StatusConflict
	}
	u.migrationPage(w, r, status, migrationActions{Archive: f, CutoverProblem: problem})
}
