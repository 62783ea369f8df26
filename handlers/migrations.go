package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/reconcile"
)

// Request and response types of the migration API.

type sourceBody struct {
	Kind       string `json:"kind"` // postgres, iceberg or external
	Connection string `json:"connection,omitempty"`
	Table      string `json:"table,omitempty"`
	// ChangeLog: the change log installed on a postgres side's table (schema.table; `tidemark
	// reconcile change-log` writes its script): runs then read again only the windows changed.
	ChangeLog string `json:"change_log,omitempty"`
	// Keys: unique (any repeated key is duplication; the default) or history (repeats are
	// versions the dedup rule collapses; the same record twice is still duplication).
	Keys string `json:"keys,omitempty"`
	// AssetID and SnapshotID name an Iceberg archive (in a cutover's archive only).
	AssetID    *uuid.UUID `json:"asset_id,omitempty"`
	SnapshotID *int64     `json:"snapshot_id,omitempty"`
}

func (b sourceBody) spec() reconcile.SourceSpec {
	return reconcile.SourceSpec{Kind: reconcile.SourceKind(b.Kind), Connection: b.Connection, Table: b.Table, ChangeLog: b.ChangeLog,
		Keys: reconcile.KeyRule(b.Keys), AssetID: b.AssetID, SnapshotID: b.SnapshotID}
}

func toSourceBody(s reconcile.SourceSpec) sourceBody {
	return sourceBody{Kind: string(s.Kind), Connection: s.Connection, Table: s.Table, ChangeLog: s.ChangeLog, Keys: string(s.Keys), AssetID: s.AssetID, SnapshotID: s.SnapshotID}
}

type cutoverBody struct {
	MinCleanRuns      int  `json:"min_clean_runs"`
	MinDays           int  `json:"min_days"`
	IncludeWeekend    bool `json:"include_weekend"`
	IncludeBusiestDay bool `json:"include_busiest_day"` // of the last 28 days
	IncludeDeploy     bool `json:"include_deploy"`      // a deploy recorded in the migration's events
	// WeakerReason: why a rule below the floor (3 clean runs over 7 days) is enough here.
	WeakerReason string `json:"weaker_reason,omitempty"`
}

type migrationRequest struct {
	OldAssetID uuid.UUID   `json:"old_asset_id"`
	NewAssetID uuid.UUID   `json:"new_asset_id"`
	Owner      string      `json:"owner"`
	KeyColumns []string    `json:"key_columns"`
	TimeColumn string      `json:"time_column"`
	Columns    []string    `json:"columns"`
	Window     string      `json:"window"` // a duration such as 24h
	Since      time.Time   `json:"since"`
	DedupOld   string      `json:"dedup_old"`
	DedupNew   string      `json:"dedup_new"`
	LagBound   string      `json:"lag_bound"`
	Cutover    cutoverBody `json:"cutover"`
	SampleSize int         `json:"sample_size,omitempty"`
	// QuoteValues keeps sampled differing values in run answers, which anyone who may read the
	// catalog reads; without it samples name the key and the column only.
	QuoteValues bool `json:"quote_values,omitempty"`
	// CheckerToken names the token that posts an external side's figures (admins may too).
	CheckerToken string     `json:"checker_token,omitempty"`
	Old          sourceBody `json:"old"`
	New          sourceBody `json:"new"`
}

type migrationResponse struct {
	ID           uuid.UUID   `json:"id"`
	OldAssetID   uuid.UUID   `json:"old_asset_id"`
	NewAssetID   uuid.UUID   `json:"new_asset_id"`
	Owner        string      `json:"owner"`
	State        string      `json:"state"`
	CutOverAt    *time.Time  `json:"cut_over_at,omitempty"`
	Version      int         `json:"version"`
	KeyColumns   []string    `json:"key_columns"`
	TimeColumn   string      `json:"time_column"`
	Columns      []string    `json:"columns"`
	Window       string      `json:"window"`
	Since        time.Time   `json:"since"`
	DedupOld     string      `json:"dedup_old"`
	DedupNew     string      `json:"dedup_new"`
	LagBound     string      `json:"lag_bound"`
	Cutover      cutoverBody `json:"cutover"`
	SampleSize   int         `json:"sample_size"`
	QuoteValues  bool        `json:"quote_values"`
	CheckerToken string      `json:"checker_token,omitempty"`
	Old          sourceBody  `json:"old"`
	New          sourceBody  `json:"new"`
	Archive      *sourceBody `json:"archive,omitempty"` // named at the cutover
	CreatedAt    time.Time   `json:"created_at"`
}

// streakResponse: a day the streak spans (weekend, busiest write day, deploy) counts only once a
// clean run started after that day ended.
type streakResponse struct {
	Runs         int        `json:"runs"`
	From         *time.Time `json:"from,omitempty"`
	To           *time.Time `json:"to,omitempty"`
	BrokenBy     *uuid.UUID `json:"broken_by,omitempty"` // the newest run that was not clean
	BrokenCauses []string   `json:"broken_causes"`
	Weekend      bool       `json:"weekend"`
	WeekendDay   *time.Time `json:"weekend_day,omitempty"`
	BusiestDay   *time.Time `json:"busiest_write_day,omitempty"` // of the last 28 days
	SpansBusiest bool       `json:"spans_busiest_write_day"`
	Deploys      int        `json:"deploys"` // recorded
	DeployAt     *time.Time `json:"deploy_at,omitempty"`
	SpansDeploy  bool       `json:"spans_deploy"`
}

type migrationStatusResponse struct {
	Migration migrationResponse `json:"migration"`
	Streak    streakResponse    `json:"streak"`
	Ready     bool              `json:"ready_to_cut_over"`
	Missing   []string          `json:"missing"` // what the cutover rule still lacks
	// Rule is the rule the streak is held to: the migration's, raised to the floor when it is
	// weaker and states no reason.
	Rule cutoverBody `json:"rule"`
	// After the cutover: reads of the old asset since the cutover's day (flagged: someone still
	// reads what is being retired).
	OldReadsSinceCutover int64      `json:"old_reads_since_cutover"`
	OldLastRead          *time.Time `json:"old_last_read,omitempty"`
}

type sideFiguresBody struct {
	Rows          int64  `json:"rows"`
	Keys          int64  `json:"keys"`
	DuplicateKeys int64  `json:"duplicate_keys"`
	Versions      int64  `json:"versions"` // history sides: records beyond a key's first
	Checksum      string `json:"checksum"`
}

type windowSnapshotResponse struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Operation string    `json:"operation,omitempty"`
}

type writerResponse struct {
	RunID      string     `json:"run_id"`
	JobAssetID uuid.UUID  `json:"job_asset_id"`
	State      string     `json:"state"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
}

type offsetResponse struct {
	Seconds float64 `json:"seconds"`
	Records int64   `json:"records"`
}

type duplicateResponse struct {
	Key     string      `json:"key"`
	Side    string      `json:"side"`
	Records int         `json:"records"`
	Windows []time.Time `json:"windows"` // every window the key is in on that side
}

type differenceResponse struct {
	Key    string `json:"key"`
	Column string `json:"column"`
	Old    string `json:"old,omitempty"` // with quote_values only
	New    string `json:"new,omitempty"`
}

type windowResponse struct {
	Start            time.Time                `json:"start"`
	Old              sideFiguresBody          `json:"old"`
	New              sideFiguresBody          `json:"new"`
	Missing          int64                    `json:"missing"`
	Extra            int64                    `json:"extra"`
	Differing        int64                    `json:"differing"`
	Moved            int64                    `json:"moved"`    // standing here on the old side, another time on the new
	MovedIn          int64                    `json:"moved_in"` // standing here on the new side, another window on the old
	MovedOffsets     []offsetResponse         `json:"moved_offsets"`
	DifferingColumns []string                 `json:"differing_columns"`
	Sample           []differenceResponse     `json:"sample"`
	Duplicates       []duplicateResponse      `json:"duplicates"` // a sample of the duplicated keys
	Writers          []writerResponse         `json:"writers"`    // runs that wrote the new side here, when it holds duplicates
	Snapshots        []windowSnapshotResponse `json:"snapshots"`  // Iceberg commits that added files holding this window, when duplicated
	Classes          []string                 `json:"classes"`    // lag, duplication, moved, divergence
	Why              []string                 `json:"why"`
}

type runCostResponse struct {
	RowsOld  int64 `json:"rows_old"` // records Tidemark read from the old side
	RowsNew  int64 `json:"rows_new"`
	Counted  int64 `json:"counted"`      // records a side counted and hashed itself (PostgreSQL)
	Compared int64 `json:"compared"`     // records the run's figures cover, both sides
	Deep     int64 `json:"deep_windows"` // windows compared record by record
	// ReusedDeep: windows whose record-by-record comparison is the previous run's (neither side
	// changed in any window that run looked into, and this run would look into the same).
	ReusedDeep int64 `json:"reused_deep_windows"`
	Kept       int64 `json:"kept"` // records of their differing key segments held and compared
	// Reused and ReusedOld: windows whose new- and old-side figures are the previous run's
	// (nothing changed there since, by an Iceberg side's snapshots or a PostgreSQL side's change
	// log); NewSnapshot: the Iceberg snapshot this run read.
	Reused      int64  `json:"reused_windows"`
	ReusedOld   int64  `json:"reused_windows_old"`
	NewSnapshot *int64 `json:"new_snapshot,omitempty"`
	// ChangeLog: per side with a change log, the windows changed and reused, or why it was read
	// in full.
	ChangeLog []string `json:"change_log,omitempty"`
	Bytes     int64    `json:"bytes"`
	Seconds   float64  `json:"seconds"`
}

type runSummaryResponse struct {
	Windows     int            `json:"windows"`
	Unclean     int            `json:"unclean"`   // windows with a class other than lag
	Differing   int            `json:"differing"` // windows with any class, lag included
	Classes     map[string]int `json:"classes"`   // windows per class
	CausesTotal int            `json:"causes_total"`
}

// reconciliationRunResponse is a run's summary: its windows are read a page at a time from
// windows_url.
type reconciliationRunResponse struct {
	ID          uuid.UUID          `json:"id"`
	MigrationID uuid.UUID          `json:"migration_id"`
	StartedAt   time.Time          `json:"started_at"`
	FinishedAt  *time.Time         `json:"finished_at,omitempty"`
	Origin      string             `json:"origin"`
	Against     string             `json:"against"` // live, or archive: the final reconciliation
	Clean       bool               `json:"clean"`
	Causes      []string           `json:"causes"` // the first 50; summary.causes_total counts all
	Summary     runSummaryResponse `json:"summary"`
	WindowsURL  string             `json:"windows_url"`
	Cost        runCostResponse    `json:"cost"`
	Error       string             `json:"error,omitempty"`
}

type windowsPageResponse struct {
	Items []windowResponse `json:"items"`
	// NextAfter is the after= of the next page; absent on the last.
	NextAfter *time.Time `json:"next_after,omitempty"`
}

type reconciliationRunsResponse struct {
	Items []reconciliationRunResponse `json:"items"`
}

type windowFiguresBody struct {
	Start time.Time       `json:"start"`
	Old   sideFiguresBody `json:"old"`
	New   sideFiguresBody `json:"new"`
}

type externalRunRequest struct {
	Windows []windowFiguresBody `json:"windows"`
}

type findingResponse struct {
	ID          uuid.UUID  `json:"id"`
	Kind        string     `json:"kind"`
	Side        string     `json:"side"`
	WindowStart time.Time  `json:"window_start"`
	Owner       string     `json:"owner"`
	Detail      string     `json:"detail"`
	OpenedRunID uuid.UUID  `json:"opened_run_id"`
	OpenedAt    time.Time  `json:"opened_at"`
	ClosedRunID *uuid.UUID `json:"closed_run_id,omitempty"`
	ClosedAt    *time.Time `json:"closed_at,omitempty"`
}

type findingsResponse struct {
	Items []findingResponse `json:"items"`
}

func (a *API) migrationRoutes() {
	if a.cfg.Reconcile == nil {
		return
	}
	const base = "/api/v1/migrations"
	id := []param{{Name: "id", In: "path", Required: true}}
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        base,
		Summary:     "Start tracking the move of a dataset from an old asset to a new one (admin: runs read the named source databases, and their answers quote values)",
		Description: "Every rule is stated, none assumed: key and time columns, window, compared columns, each side's dedup rule, the lag bound, the cutover rule, and how each side is read.",
		Tag:         "migrations",
		Scope:       auth.ScopeAdmin,
		Body:        migrationRequest{},
		Responses:   map[int]any{201: migrationResponse{}},
	}, a.createMigration)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base,
		Summary: "Migrations, newest first, a page at a time",
		Tag:     "migrations",
		Params: []param{{Name: "asset", In: "query", Description: "an asset ID: only the migrations it is the old or the new side of"},
			{Name: "limit", In: "query", Description: "1-100, default 20"}, {Name: "cursor", In: "query", Description: "next_cursor of the previous page"}},
		Responses: map[int]any{200: migrationListResponse{}},
	}, a.listMigrations)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id",
		Summary:   "A migration, its streak of clean runs and whether it is ready to cut over",
		Tag:       "migrations",
		Params:    id,
		Responses: map[int]any{200: migrationStatusResponse{}},
	}, a.getMigration)
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        base + "/:id/runs",
		Summary:     "Reconcile now (no body), or record an external checker's figures ({windows: [...]})",
		Description: "A run that cannot read a side is recorded as failed (it breaks the streak) and answered with its error.",
		Tag:         "migrations",
		Params:      id,
		Body:        externalRunRequest{},
		Responses:   map[int]any{201: reconciliationRunResponse{}},
	}, a.runMigration)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/runs",
		Summary:   "A migration's runs, clean or not, newest first, as summaries",
		Tag:       "migrations",
		Params:    append(id, param{Name: "limit", In: "query", Description: "1-500, default 50"}),
		Responses: map[int]any{200: reconciliationRunsResponse{}},
	}, a.migrationRuns)
	run := append(id, param{Name: "run", In: "path", Required: true})
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/runs/:run",
		Summary:   "One run's summary",
		Tag:       "migrations",
		Params:    run,
		Responses: map[int]any{200: reconciliationRunResponse{}},
	}, a.migrationRun)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/:id/runs/:run/windows",
		Summary: "A page of one run's windows, by start",
		Tag:     "migrations",
		Params: append(run, param{Name: "limit", In: "query", Description: "1-500, default 100"},
			param{Name: "after", In: "query", Description: "an RFC 3339 time: windows starting after it (next_after of the previous page)"},
			param{Name: "differing", In: "query", Description: "true: only windows with a class, lag included"}),
		Responses: map[int]any{200: windowsPageResponse{}},
	}, a.migrationRunWindows)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/findings",
		Summary:   "Duplication, moved-record and divergence findings, open ones first",
		Tag:       "migrations",
		Params:    id,
		Responses: map[int]any{200: findingsResponse{}},
	}, a.migrationFindings)
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        base + "/:id/cutover",
		Summary:     "Record the cutover, naming the archive of the old side; refused (409) until the cutover rule holds",
		Description: "The archive (a PostgreSQL table over a configured connection, or a registered Iceberg table at a snapshot) is what the final reconciliation reads instead of the old side; retirement waits for a clean one.",
		Tag:         "migrations",
		Scope:       auth.ScopeAdmin,
		Params:      id,
		Body:        cutoverRequest{},
		Responses:   map[int]any{200: migrationResponse{}},
	}, a.cutOver)
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      base + "/:id/archive",
		Summary:   "Name (or rename) the archive of a cut-over migration's old side",
		Tag:       "migrations",
		Scope:     auth.ScopeAdmin,
		Params:    id,
		Body:      cutoverRequest{},
		Responses: map[int]any{200: migrationResponse{}},
	}, a.setArchive)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/:id/events",
		Summary:   "Record a deploy of the new side's writer (the cutover streak may have to span one)",
		Tag:       "migrations",
		Params:    id,
		Body:      migrationEventRequest{},
		Responses: map[int]any{201: migrationEventResponse{}},
	}, a.recordMigrationEvent)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/events",
		Summary:   "A migration's recorded events, newest first",
		Tag:       "migrations",
		Params:    append(id, param{Name: "limit", In: "query", Description: "1-500, default 100"}),
		Responses: map[int]any{200: migrationEventsResponse{}},
	}, a.migrationEvents)
}

func (a *API) createMigration(c echo.Context) error {
	var req migrationRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	window, err := durationField("window", req.Window)
	if err != nil {
		return err
	}
	lag, err := durationField("lag_bound", req.LagBound)
	if err != nil {
		return err
	}
	spec := reconcile.Spec{KeyColumns: req.KeyColumns, TimeColumn: req.TimeColumn, Columns: req.Columns, WindowSeconds: int64(window / time.Second),
		Since: req.Since, DedupOld: reconcile.DedupRule(req.DedupOld), DedupNew: reconcile.DedupRule(req.DedupNew), LagBoundSeconds: int64(lag / time.Second),
		Cutover:    reconcile.CutoverRule(req.Cutover),
		SampleSize: req.SampleSize, QuoteValues: req.QuoteValues, Checker: req.CheckerToken, Old: req.Old.spec(), New: req.New.spec()}
	if req.Old.AssetID != nil || req.Old.SnapshotID != nil || req.New.AssetID != nil || req.New.SnapshotID != nil {
		return badRequest("old", "asset_id and snapshot_id name a cutover's archive; a side is the migration's own asset")
	}
	m, err := a.cfg.Reconcile.Create(c.Request().Context(), reconcile.CreateInput{OldAssetID: req.OldAssetID, NewAssetID: req.NewAssetID, Owner: req.Owner, Spec: spec})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toMigrationResponse(m))
}

type migrationListResponse struct {
	Items      []migrationResponse `json:"items"`
	NextCursor string              `json:"next_cursor,omitempty"` // absent on the last page
}

func (a *API) listMigrations(c echo.Context) error {
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	q := reconcile.ListQuery{Limit: limit + 1}
	if s := c.QueryParam("asset"); s != "" {
		if q.Asset, err = uuid.Parse(s); err != nil {
			return badRequest("asset", "asset %q is not an asset ID", truncate(s, 64))
		}
	}
	scope := "migrations|" + q.Asset.String()
	if q.Before, err = decodeCursor(c.QueryParam("cursor"), scope); err != nil {
		return err
	}
	ms, err := a.cfg.Reconcile.Page(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := migrationListResponse{Items: make([]migrationResponse, 0, min(len(ms), limit))}
	for i, m := range ms {
		if i == limit {
			out.NextCursor = encodeCursor(ms[limit-1].ID, scope)
			break
		}
		out.Items = append(out.Items, toMigrationResponse(m))
	}
	return c.JSON(http.StatusOK, out)
}

func durationField(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil // the domain says what is missing
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, badRequest(name, "%s must be a duration such as 24h or 90m, not %q", name, truncate(s, 32))
	}
	return d, nil
}

func toMigrationResponse(m reconcile.Migration) migrationResponse {
	s := m.Spec
	out := migrationResponse{ID: m.ID, OldAssetID: m.OldAssetID, NewAssetID: m.NewAssetID, Owner: m.Owner, State: m.State, CutOverAt: m.CutOverAt,
		Version: m.Version, KeyColumns: s.KeyColumns, TimeColumn: s.TimeColumn, Columns: s.Columns, Window: s.Window().String(), Since: s.Since,
		DedupOld: string(s.DedupOld), DedupNew: string(s.DedupNew), LagBound: s.LagBound().String(), Cutover: cutoverBody(s.Cutover),
		SampleSize: s.SampleSize, QuoteValues: s.QuoteValues, CheckerToken: s.Checker, Old: toSourceBody(s.Old), New: toSourceBody(s.New), CreatedAt: m.CreatedAt}
	if m.Archive != nil {
		a := toSourceBody(*m.Archive)
		out.Archive = &a
	}
	return out
}

func (a *API) getMigration(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	st, err := a.cfg.Reconcile.Status(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := migrationStatusResponse{Migration: toMigrationResponse(st.Migration), Ready: st.Ready, Missing: st.Missing, Rule: cutoverBody(st.Rule),
		OldReadsSinceCutover: st.OldReadsSinceCutover, OldLastRead: st.OldLastRead,
		Streak: streakResponse{Runs: st.Streak, From: st.From, To: st.To, Weekend: st.Weekend, WeekendDay: st.WeekendDay, BusiestDay: st.BusiestDay,
			SpansBusiest: st.SpansBusiest, Deploys: st.Deploys, DeployAt: st.DeployAt, SpansDeploy: st.SpansDeploy, BrokenCauses: []string{}}}
	if out.Missing == nil {
		out.Missing = []string{}
	}
	if st.Broken != nil {
		out.Streak.BrokenBy, out.Streak.BrokenCauses = &st.Broken.ID, st.Broken.Causes
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) runMigration(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	var req externalRunRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	var run reconcile.Run
	if req.Windows != nil {
		m, gerr := a.cfg.Reconcile.Get(ctx, id)
		if gerr != nil {
			return gerr
		}
		if perr := a.mayPostFigures(c, m); perr != nil {
			return perr
		}
		figures := make([]reconcile.WindowFigures, len(req.Windows))
		for i, w := range req.Windows {
			figures[i] = reconcile.WindowFigures{Start: w.Start, Old: reconcile.SideFigures(w.Old), New: reconcile.SideFigures(w.New)}
		}
		run, err = a.cfg.Reconcile.PostRun(ctx, id, figures)
	} else {
		run, err = a.cfg.Reconcile.Reconcile(ctx, id)
	}
	if err != nil && run.ID == uuid.Nil {
		return err
	}
	return c.JSON(http.StatusCreated, toReconRunResponse(run)) // a failed read is a recorded run: its error says why
}

// mayPostFigures lets the checker the migration names, or an admin, post its figures: with a
// mere write token anyone could post clean runs and cut the migration over.
func (a *API) mayPostFigures(c echo.Context, m reconcile.Migration) error {
	if a.allows(c, auth.ScopeAdmin) {
		return nil
	}
	tok, _ := c.Get(tokenKey).(auth.Token)
	if m.Spec.Checker != "" && tok.Name == m.Spec.Checker {
		return nil
	}
	if m.Spec.Checker == "" {
		return newProblem(http.StatusForbidden, fmt.Sprintf("migration %s names no checker_token: only an admin token may post its figures", m.ID))
	}
	return newProblem(http.StatusForbidden, fmt.Sprintf("migration %s takes figures from token %q or an admin token only", m.ID, m.Spec.Checker))
}

func toReconRunResponse(r reconcile.Run) reconciliationRunResponse {
	out := reconciliationRunResponse{ID: r.ID, MigrationID: r.MigrationID, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Origin: r.Origin, Against: r.Against,
		Clean: r.Clean, Causes: r.Causes, Cost: runCostResponse(r.Cost), Error: r.Error,
		WindowsURL: fmt.Sprintf("/api/v1/migrations/%s/runs/%s/windows", r.MigrationID, r.ID),
		Summary: runSummaryResponse{Windows: r.Summary.Windows, Unclean: r.Summary.Unclean, Differing: r.Summary.Differing,
			Classes: map[string]int{}, CausesTotal: r.Summary.CausesTotal}}
	if out.Causes == nil {
		out.Causes = []string{}
	}
	for cl, n := range r.Summary.Classes {
		out.Summary.Classes[string(cl)] = n
	}
	return out
}

func toWindowResponse(w reconcile.WindowResult) windowResponse {
	wr := windowResponse{Start: w.Start, Old: sideFiguresBody(w.Old), New: sideFiguresBody(w.New), Missing: w.Missing, Extra: w.Extra,
		Differing: w.Differing, Moved: w.Moved, MovedIn: w.MovedIn, MovedOffsets: []offsetResponse{}, DifferingColumns: w.DifferingColumns,
		Sample: []differenceResponse{}, Duplicates: []duplicateResponse{}, Writers: []writerResponse{}, Snapshots: []windowSnapshotResponse{},
		Classes: []string{}, Why: w.Why}
	for _, sn := range w.Snapshots {
		wr.Snapshots = append(wr.Snapshots, windowSnapshotResponse(sn))
	}
	for _, r := range w.Writers {
		wr.Writers = append(wr.Writers, writerResponse(r))
	}
	for _, d := range w.Sample {
		wr.Sample = append(wr.Sample, differenceResponse(d))
	}
	for _, o := range w.MovedOffsets {
		wr.MovedOffsets = append(wr.MovedOffsets, offsetResponse(o))
	}
	for _, d := range w.Duplicates {
		wr.Duplicates = append(wr.Duplicates, duplicateResponse(d))
	}
	for _, cl := range w.Classes {
		wr.Classes = append(wr.Classes, string(cl))
	}
	return wr
}

// runParams are a run's path parameters: its migration and its ID.
func runParams(c echo.Context) (uuid.UUID, uuid.UUID, error) {
	id, err := idParam(c, "migration")
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	runID, err := uuid.Parse(c.Param("run"))
	if err != nil {
		return uuid.Nil, uuid.Nil, badRequest("run", "run must be a run ID (a UUID)")
	}
	return id, runID, nil
}

func (a *API) migrationRun(c echo.Context) error {
	id, runID, err := runParams(c)
	if err != nil {
		return err
	}
	r, err := a.cfg.Reconcile.RunOf(c.Request().Context(), id, runID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toReconRunResponse(r))
}

func (a *API) migrationRunWindows(c echo.Context) error {
	id, runID, err := runParams(c)
	if err != nil {
		return err
	}
	q := reconcile.WindowQuery{}
	if q.Limit, err = queryLimit(c, 100, reconcile.MaxWindowPage); err != nil {
		return err
	}
	if s := c.QueryParam("after"); s != "" {
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return badRequest("after", "after must be an RFC 3339 time such as 2026-11-02T00:00:00Z (next_after of the previous page), not %q", truncate(s, 40))
		}
		q.After = &at
	}
	switch c.QueryParam("differing") {
	case "", "false":
	case "true":
		q.Differing = true
	default:
		return badRequest("differing", "differing must be true or false")
	}
	ws, more, err := a.cfg.Reconcile.Windows(c.Request().Context(), id, runID, q)
	if err != nil {
		return err
	}
	out := windowsPageResponse{Items: make([]windowResponse, 0, len(ws))}
	for _, w := range ws {
		out.Items = append(out.Items, toWindowResponse(w))
	}
	if more {
		out.NextAfter = &ws[len(ws)-1].Start
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) migrationRuns(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 50, 500)
	if err != nil {
		return err
	}
	if _, err := a.cfg.Reconcile.Get(c.Request().Context(), id); err != nil {
		return err
	}
	runs, err := a.cfg.Reconcile.Runs(c.Request().Context(), id, limit)
	if err != nil {
		return err
	}
	out := reconciliationRunsResponse{Items: make([]reconciliationRunResponse, 0, len(runs))}
	for _, r := range runs {
		out.Items = append(out.Items, toReconRunResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) migrationFindings(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	if _, err := a.cfg.Reconcile.Get(c.Request().Context(), id); err != nil {
		return err
	}
	fs, err := a.cfg.Reconcile.Findings(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := findingsResponse{Items: make([]findingResponse, 0, len(fs))}
	for _, f := range fs {
		out.Items = append(out.Items, findingResponse(f))
	}
	return c.JSON(http.StatusOK, out)
}

type cutoverRequest struct {
	Archive *sourceBody `json:"archive"`
}

func (a *API) cutOver(c echo.Context) error {
	return a.withArchive(c, a.cfg.Reconcile.CutOver)
}

func (a *API) setArchive(c echo.Context) error {
	return a.withArchive(c, a.cfg.Reconcile.SetArchive)
}

func (a *API) withArchive(c echo.Context, do func(context.Context, uuid.UUID, reconcile.SourceSpec) (reconcile.Migration, error)) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	var req cutoverRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	if req.Archive == nil {
		return badRequest("archive", "name the archive of the old side, which the final reconciliation reads: "+
			`{"archive": {"kind": "postgres", "connection": "...", "table": "schema.table"}} or {"archive": {"kind": "iceberg", "asset_id": "...", "snapshot_id": 123}}`)
	}
	m, err := do(c.Request().Context(), id, req.Archive.spec())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toMigrationResponse(m))
}

type migrationEventRequest struct {
	Kind string     `json:"kind"`         // deploy
	At   *time.Time `json:"at,omitempty"` // default now
	Note string     `json:"note,omitempty"`
}

type migrationEventResponse struct {
	ID          uuid.UUID `json:"id"`
	MigrationID uuid.UUID `json:"migration_id"`
	Kind        string    `json:"kind"`
	At          time.Time `json:"at"`
	Note        string    `json:"note"`
	RecordedBy  string    `json:"recorded_by"`
	CreatedAt   time.Time `json:"created_at"`
}

type migrationEventsResponse struct {
	Items []migrationEventResponse `json:"items"`
}

func toEventResponse(e reconcile.Event) migrationEventResponse {
	return migrationEventResponse{ID: e.ID, MigrationID: e.MigrationID, Kind: string(e.Kind), At: e.At, Note: e.Note, RecordedBy: e.RecordedBy, CreatedAt: e.CreatedAt}
}

func (a *API) recordMigrationEvent(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	var req migrationEventRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	in := reconcile.EventInput{Kind: reconcile.EventKind(req.Kind), Note: req.Note}
	if req.At != nil {
		in.At = *req.At
	}
	if tok, ok := c.Get(tokenKey).(auth.Token); ok {
		in.RecordedBy = tok.Name
	}
	e, err := a.cfg.Reconcile.RecordEvent(c.Request().Context(), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, toEventResponse(e))
}

func (a *API) migrationEvents(c echo.Context) error {
	id, err := idParam(c, "migration")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 100, reconcile.MaxEvents)
	if err != nil {
		return err
	}
	evs, err := a.cfg.Reconcile.Events(c.Request().Context(), id, limit)
	if err != nil {
		return err
	}
	out := migrationEventsResponse{Items: make([]migrationEventResponse, 0, len(evs))}
	for _, e := range evs {
		out.Items = append(out.Items, toEventResponse(e))
	}
	return c.JSON(http.StatusOK, out)
}
