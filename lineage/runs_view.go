package lineage

// Runs as pages show them: one run with its job, its state changes, its inputs and outputs with
// the versions they read and wrote; a job with its runs, datasets and failures; an asset's runs
// a page at a time. Every list is bounded and says how much it left out.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/lineageedge"
	"github.com/tidemark/tidemark/ent/lineageevent"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
)

// Bounds of the run views.
const (
	// MaxRunIDBytes bounds a run ID asked for: a producer's runId is a UUID, so a longer string
	// names no run and is not sent to the database.
	MaxRunIDBytes = 256
	// MaxStateChanges is the most state changes a run view lists (a streaming job's RUNNING
	// events can run to thousands).
	MaxStateChanges = 100
	// MaxRunDatasets is the most inputs (and outputs) a run or job view lists.
	MaxRunDatasets = 100
	// MaxRunsPage is the most runs one page of runs holds.
	MaxRunsPage = 100
	// RecentFailures is how many of a job's latest failed runs its view lists.
	RecentFailures = 5
	// DurationRuns is how many of a job's latest ended runs its duration history holds.
	DurationRuns = 30
)

// StateChange is one event of a run, in event time.
type StateChange struct {
	State string // the event's eventType ("" when the event had none)
	At    time.Time
}

// RunDataset is a run's input or output with the version the run read or wrote, when the
// versions record knows it.
type RunDataset struct {
	Asset catalog.Summary
	// Version is the version read or written ("" when unknown); Label how it is known (stated,
	// reported, inferred, unknown; "" when no edge was recorded).
	Version, Label, Basis string
	Flagged               bool
}

// RunError is the errorMessage run facet of a failed run.
type RunError struct {
	Message, Language, StackTrace string
}

// RunView is one run and what its page shows.
type RunView struct {
	RunInfo
	Job catalog.Summary
	// ParentKnown says the parent run is recorded here (the page links it).
	ParentKnown     bool
	States          []StateChange
	MoreStates      int
	Inputs, Outputs []RunDataset
	MoreInputs      int
	MoreOutputs     int
	Error           *RunError
}

// RunRow is a run in a list: its job named.
type RunRow struct {
	ID         string
	Job        catalog.Summary
	State      string
	StateTime  time.Time
	StartedAt  *time.Time
	EndedAt    *time.Time
	Error      string // the errorMessage facet's message, for a failed run
	EventCount int
}

// RunsPage is a page of runs, newest first, and the cursor of the next (older) page ("" on the
// last page).
type RunsPage struct {
	Runs  []RunRow
	Total int // runs in all
	Next  string
}

// JobView is a job and what its page shows.
type JobView struct {
	Job             catalog.Summary
	Inputs, Outputs []catalog.Summary
	MoreInputs      int
	MoreOutputs     int
	Failures        int      // runs that ended in FAIL
	LatestFailures  []RunRow // the newest RecentFailures of them
	// Durations are the newest DurationRuns runs that started and ended, oldest first (a run
	// that sent one event has no duration to show).
	Durations []RunRow
}

func unknownRun(id string) error {
	return &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("run %q is not known", truncate(id, 128))}
}

// Run returns a run as its page shows it.
func (s *Service) Run(ctx context.Context, id string) (RunView, error) {
	if id == "" || len(id) > MaxRunIDBytes {
		return RunView{}, unknownRun(id)
	}
	r, err := s.db.Run.Get(ctx, id)
	if ent.IsNotFound(err) {
		return RunView{}, unknownRun(id)
	}
	if err != nil {
		return RunView{}, fmt.Errorf("lineage: read run: %w", err)
	}
	// withIO would read every input and output: a run can name thousands.
	info := RunInfo{ID: r.ID, JobAssetID: r.JobAssetID, State: string(r.State), StateTime: r.StateTime.UTC(),
		StartedAt: utc(r.StartedAt), EndedAt: utc(r.EndedAt), NominalStart: utc(r.NominalStart), NominalEnd: utc(r.NominalEnd),
		ParentRunID: r.ParentRunID, Facets: r.Facets, EventCount: r.EventCount, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
	v := RunView{Error: runError(info.Facets)}
	if info.Inputs, v.MoreInputs, err = s.runIOs(ctx, id, runio.RoleInput); err != nil {
		return RunView{}, err
	}
	if info.Outputs, v.MoreOutputs, err = s.runIOs(ctx, id, runio.RoleOutput); err != nil {
		return RunView{}, err
	}
	v.RunInfo = info
	evs, err := s.db.LineageEvent.Query().Where(lineageevent.RunID(id), lineageevent.KindEQ(lineageevent.KindRun)).
		Order(ent.Asc(lineageevent.FieldEventTime), ent.Asc(lineageevent.FieldID)).Limit(MaxStateChanges+1).
		Select(lineageevent.FieldEventType, lineageevent.FieldEventTime).All(ctx)
	if err != nil {
		return RunView{}, fmt.Errorf("lineage: events of run: %w", err)
	}
	if len(evs) > MaxStateChanges {
		n, err := s.db.LineageEvent.Query().Where(lineageevent.RunID(id), lineageevent.KindEQ(lineageevent.KindRun)).Count(ctx)
		if err != nil {
			return RunView{}, fmt.Errorf("lineage: events of run: %w", err)
		}
		evs, v.MoreStates = evs[:MaxStateChanges], n-MaxStateChanges
	}
	for _, e := range evs {
		v.States = append(v.States, StateChange{State: e.EventType, At: e.EventTime.UTC()})
	}
	if info.ParentRunID != "" && len(info.ParentRunID) <= MaxRunIDBytes {
		n, err := s.db.Run.Query().Where(run.ID(info.ParentRunID)).Count(ctx)
		if err != nil {
			return RunView{}, fmt.Errorf("lineage: parent run: %w", err)
		}
		v.ParentKnown = n > 0
	}
	ins, outs := info.Inputs, info.Outputs
	edges, err := s.db.RunVersion.Query().Where(runversion.RunID(id), runversion.AssetIDIn(append(slices.Clone(ins), outs...)...)).All(ctx)
	if err != nil {
		return RunView{}, fmt.Errorf("lineage: versions of run: %w", err)
	}
	sums, err := s.cat.Summaries(ctx, append(append([]uuid.UUID{info.JobAssetID}, ins...), outs...))
	if err != nil {
		return RunView{}, err
	}
	v.Job = summaryOf(sums, info.JobAssetID)
	v.Inputs = runDatasets(ins, sums, edges, runversion.RoleInput)
	v.Outputs = runDatasets(outs, sums, edges, runversion.RoleOutput)
	return v, nil
}

// runIOs lists up to MaxRunDatasets of a run's inputs (or outputs), in the order first named,
// and how many more it has.
func (s *Service) runIOs(ctx context.Context, id string, role runio.Role) ([]uuid.UUID, int, error) {
	rows, err := s.db.RunIO.Query().Where(runio.RunID(id), runio.RoleEQ(role)).Order(ent.Asc(runio.FieldID)).Limit(MaxRunDatasets + 1).All(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("lineage: %ss of run: %w", role, err)
	}
	more := 0
	if len(rows) > MaxRunDatasets {
		n, err := s.db.RunIO.Query().Where(runio.RunID(id), runio.RoleEQ(role)).Count(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("lineage: %ss of run: %w", role, err)
		}
		rows, more = rows[:MaxRunDatasets], n-MaxRunDatasets
	}
	ids := make([]uuid.UUID, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.AssetID)
	}
	return ids, more, nil
}

// summaryOf is the asset's summary, or one that holds only its ID when it is gone.
func summaryOf(sums map[uuid.UUID]catalog.Summary, id uuid.UUID) catalog.Summary {
	if sum, ok := sums[id]; ok {
		return sum
	}
	return catalog.Summary{ID: id}
}

// runDatasets pairs each dataset with the version edge of the run that names it, in name order.
func runDatasets(ids []uuid.UUID, sums map[uuid.UUID]catalog.Summary, edges []*ent.RunVersion, role runversion.Role) []RunDataset {
	out := make([]RunDataset, 0, len(ids))
	for _, id := range ids {
		d := RunDataset{Asset: summaryOf(sums, id)}
		if i := slices.IndexFunc(edges, func(e *ent.RunVersion) bool { return e.AssetID == id && e.Role == role }); i >= 0 {
			e := edges[i]
			d.Version, d.Label, d.Basis, d.Flagged = e.Version, string(e.Kind), e.Basis, e.Flagged
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b RunDataset) int {
		return cmp.Or(strings.Compare(a.Asset.Namespace, b.Asset.Namespace), strings.Compare(a.Asset.Name, b.Asset.Name))
	})
	return out
}

// runError reads the errorMessage run facet; nil without one.
func runError(facets map[string]json.RawMessage) *RunError {
	raw, ok := facets["errorMessage"]
	if !ok {
		return nil
	}
	var f struct {
		Message    string `json:"message"`
		Language   string `json:"programmingLanguage"`
		StackTrace string `json:"stackTrace"`
	}
	if json.Unmarshal(raw, &f) != nil || (f.Message == "" && f.StackTrace == "") {
		return nil
	}
	return &RunError{Message: f.Message, Language: f.Language, StackTrace: f.StackTrace}
}

// runCursor is a position in a list of runs, newest first: a time and a tie-breaking key.
func runCursor(at time.Time, key string) string {
	return strconv.FormatInt(at.UnixNano(), 10) + "~" + key
}

func parseRunCursor(c string) (time.Time, string, error) {
	n, key, ok := strings.Cut(c, "~")
	ns, err := strconv.ParseInt(n, 10, 64)
	if !ok || err != nil || key == "" || len(key) > MaxRunIDBytes {
		return time.Time{}, "", invalid("that is not a position in a list of runs; start again from the first page")
	}
	return time.Unix(0, ns).UTC(), key, nil
}

// RunsOfPage returns a page of the runs of a job, or of a dataset the runs that read or wrote
// it, newest first (a job's by when Tidemark first heard of the run, a dataset's by when a run
// first named it), from the cursor a previous page returned ("" for the first page).
func (s *Service) RunsOfPage(ctx context.Context, assetID uuid.UUID, cursor string, limit int) (RunsPage, error) {
	if limit < 1 || limit > MaxRunsPage {
		return RunsPage{}, invalid("limit must be from 1 to %d, not %d", MaxRunsPage, limit)
	}
	a, err := s.cat.Get(ctx, assetID)
	if err != nil {
		return RunsPage{}, err
	}
	var at time.Time
	var key string
	if cursor != "" {
		if at, key, err = parseRunCursor(cursor); err != nil {
			return RunsPage{}, err
		}
	}
	if a.Kind == catalog.KindJob {
		return s.jobRunsPage(ctx, assetID, at, key, limit)
	}
	return s.datasetRunsPage(ctx, assetID, at, key, limit)
}

func (s *Service) jobRunsPage(ctx context.Context, job uuid.UUID, at time.Time, key string, limit int) (RunsPage, error) {
	var p RunsPage
	var err error
	if p.Total, err = s.db.Run.Query().Where(run.JobAssetID(job)).Count(ctx); err != nil {
		return RunsPage{}, fmt.Errorf("lineage: runs of %s: %w", job, err)
	}
	q := s.db.Run.Query().Where(run.JobAssetID(job))
	if key != "" {
		q = q.Where(run.Or(run.CreatedAtLT(at), run.And(run.CreatedAt(at), run.IDLT(key))))
	}
	rows, err := q.Order(ent.Desc(run.FieldCreatedAt), ent.Desc(run.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return RunsPage{}, fmt.Errorf("lineage: runs of %s: %w", job, err)
	}
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		p.Next = runCursor(last.CreatedAt, last.ID)
	}
	p.Runs, err = s.runRows(ctx, rows)
	return p, err
}

func (s *Service) datasetRunsPage(ctx context.Context, asset uuid.UUID, at time.Time, key string, limit int) (RunsPage, error) {
	var p RunsPage
	var err error
	// A run that read and wrote the asset has two records: count it once.
	if p.Total, err = s.db.RunIO.Query().Where(runio.AssetID(asset)).Unique(true).Select(runio.FieldRunID).Count(ctx); err != nil {
		return RunsPage{}, fmt.Errorf("lineage: runs of %s: %w", asset, err)
	}
	q := s.db.RunIO.Query().Where(runio.AssetID(asset))
	if key != "" {
		id, err := strconv.Atoi(key)
		if err != nil {
			return RunsPage{}, invalid("that is not a position in a list of runs; start again from the first page")
		}
		q = q.Where(runio.Or(runio.FirstSeenLT(at), runio.And(runio.FirstSeen(at), runio.IDLT(id))))
	}
	ios, err := q.Order(ent.Desc(runio.FieldFirstSeen), ent.Desc(runio.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return RunsPage{}, fmt.Errorf("lineage: runs of %s: %w", asset, err)
	}
	if len(ios) > limit {
		ios = ios[:limit]
		last := ios[limit-1]
		p.Next = runCursor(last.FirstSeen, strconv.Itoa(last.ID))
	}
	var ids []string
	for _, io := range ios {
		if !slices.Contains(ids, io.RunID) {
			ids = append(ids, io.RunID)
		}
	}
	rows, err := s.db.Run.Query().Where(run.IDIn(ids...)).All(ctx)
	if err != nil {
		return RunsPage{}, fmt.Errorf("lineage: runs of %s: %w", asset, err)
	}
	// In the records' order, not the database's.
	slices.SortFunc(rows, func(a, b *ent.Run) int { return slices.Index(ids, a.ID) - slices.Index(ids, b.ID) })
	p.Runs, err = s.runRows(ctx, rows)
	return p, err
}

// runRows names the runs' jobs.
func (s *Service) runRows(ctx context.Context, rows []*ent.Run) ([]RunRow, error) {
	var jobs []uuid.UUID
	for _, r := range rows {
		if !slices.Contains(jobs, r.JobAssetID) {
			jobs = append(jobs, r.JobAssetID)
		}
	}
	sums, err := s.cat.Summaries(ctx, jobs)
	if err != nil {
		return nil, err
	}
	out := make([]RunRow, 0, len(rows))
	for _, r := range rows {
		row := RunRow{ID: r.ID, Job: summaryOf(sums, r.JobAssetID), State: string(r.State), StateTime: r.StateTime.UTC(),
			StartedAt: utc(r.StartedAt), EndedAt: utc(r.EndedAt), EventCount: r.EventCount}
		if e := runError(r.Facets); e != nil {
			row.Error = e.Message
		}
		out = append(out, row)
	}
	return out, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// JobDetail returns a job as its page shows it: the datasets it reads and writes (from the graph's
// edges), its failures and its latest durations. Its runs are RunsOfPage's.
func (s *Service) JobDetail(ctx context.Context, id uuid.UUID) (JobView, error) {
	a, err := s.cat.Get(ctx, id)
	if err != nil {
		return JobView{}, err
	}
	if a.Kind != catalog.KindJob {
		return JobView{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("asset %s is a %s, not a job", id, a.Kind)}
	}
	v := JobView{Job: catalog.Summary{ID: a.ID, Kind: a.Kind, Status: a.Status, Namespace: a.Namespace, Name: a.Name}}
	var ins, outs []uuid.UUID
	if ins, v.MoreInputs, err = s.jobEdges(ctx, lineageedge.ToID(id), true); err != nil {
		return JobView{}, err
	}
	if outs, v.MoreOutputs, err = s.jobEdges(ctx, lineageedge.FromID(id), false); err != nil {
		return JobView{}, err
	}
	sums, err := s.cat.Summaries(ctx, append(slices.Clone(ins), outs...))
	if err != nil {
		return JobView{}, err
	}
	for _, x := range ins {
		v.Inputs = append(v.Inputs, summaryOf(sums, x))
	}
	for _, x := range outs {
		v.Outputs = append(v.Outputs, summaryOf(sums, x))
	}
	failed := []*ent.Run{}
	if v.Failures, err = s.db.Run.Query().Where(run.JobAssetID(id), run.StateEQ(run.StateFAIL)).Count(ctx); err == nil && v.Failures > 0 {
		failed, err = s.db.Run.Query().Where(run.JobAssetID(id), run.StateEQ(run.StateFAIL)).
			Order(ent.Desc(run.FieldStateTime), ent.Desc(run.FieldID)).Limit(RecentFailures).All(ctx)
	}
	if err != nil {
		return JobView{}, fmt.Errorf("lineage: failures of %s: %w", id, err)
	}
	if v.LatestFailures, err = s.runRows(ctx, failed); err != nil {
		return JobView{}, err
	}
	ended, err := s.db.Run.Query().Where(run.JobAssetID(id), run.StartedAtNotNil(), run.EndedAtNotNil(), run.EventCountGT(1)).
		Order(ent.Desc(run.FieldEndedAt), ent.Desc(run.FieldID)).Limit(DurationRuns).All(ctx)
	if err != nil {
		return JobView{}, fmt.Errorf("lineage: durations of %s: %w", id, err)
	}
	slices.Reverse(ended)
	if v.Durations, err = s.runRows(ctx, ended); err != nil {
		return JobView{}, err
	}
	return v, nil
}

// jobEdges lists up to MaxRunDatasets assets at the other end of a job's edges, oldest edge
// first, and how many more there are.
func (s *Service) jobEdges(ctx context.Context, where predicate.LineageEdge, from bool) ([]uuid.UUID, int, error) {
	n, err := s.db.LineageEdge.Query().Where(where).Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("lineage: datasets of a job: %w", err)
	}
	rows, err := s.db.LineageEdge.Query().Where(where).Order(ent.Asc(lineageedge.FieldFirstSeen), ent.Asc(lineageedge.FieldID)).
		Limit(MaxRunDatasets).All(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("lineage: datasets of a job: %w", err)
	}
	ids := make([]uuid.UUID, 0, len(rows))
	for _, r := range rows {
		if from {
			ids = append(ids, r.FromID)
		} else {
			ids = append(ids, r.ToID)
		}
	}
	return ids, max(n-len(ids), 0), nil
}
