package web

// Runs and jobs as pages: a run (its job, state changes, inputs and outputs with the versions
// they read and wrote, facets, error), a job (its runs a page at a time, datasets, owners,
// durations, failures), and the asset page's list of runs.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/usage"
)

func init() {
	funcs["runHref"] = runHref
	funcs["usersText"] = usersText
}

// runsPerPage is how many runs a page of runs shows.
const runsPerPage = 20

// topJobs is how many of the jobs that read an asset its page names.
const topJobs = 10

// maxFacetBytes bounds a facet's value shown on the run page (a Spark plan facet can be
// megabytes): past it the page shows the start and says so.
const maxFacetBytes = 64 << 10

func (u *UI) runRoutes() {
	if u.cfg.Lineage == nil {
		return
	}
	u.handleFunc("GET /runs/{id}", u.runPage)
	u.handleFunc("GET /jobs/{id}", u.jobPage)
}

func runHref(id string) string { return "/runs/" + url.PathEscape(id) }

// assetLink is an asset named and linked.
type assetLink struct {
	ID              uuid.UUID
	Namespace, Name string
	Kind            string
	Deleted         bool
}

func linkOf(s catalog.Summary) assetLink {
	name := s.Name
	if name == "" {
		name = "asset " + short(s.ID) // gone from the catalog: its ID still names it
	}
	return assetLink{ID: s.ID, Namespace: s.Namespace, Name: name, Kind: string(s.Kind), Deleted: s.Status == catalog.StatusDeleted}
}

// runRow is a run in a list.
type runRow struct {
	ID, Href string
	Job      assetLink
	State    string
	Start    *time.Time
	Duration string
	Error    string
}

// runDuration says how long a run took in words, how long it has been running, or why it is
// not known.
func runDuration(start, end *time.Time, state string, events int, now time.Time) string {
	switch {
	case events <= 1 && start != nil && end != nil && start.Equal(*end):
		return "not known (one event)" // a run sent only its end: lineage dates its start then too
	case start != nil && end != nil:
		return words.Duration(end.Sub(*start))
	case start != nil && (state == "START" || state == "RUNNING"):
		return "running for " + words.Duration(now.Sub(*start))
	case start == nil:
		return "unknown (no START event)"
	}
	return "unknown (no end event)"
}

func (u *UI) runRows(rows []lineage.RunRow) []runRow {
	now := u.cfg.Now()
	out := make([]runRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, runRow{ID: r.ID, Href: runHref(r.ID), Job: linkOf(r.Job), State: r.State, Start: r.StartedAt,
			Duration: runDuration(r.StartedAt, r.EndedAt, r.State, r.EventCount, now), Error: r.Error})
	}
	return out
}

// runsView is a page of runs with the links to the next and the first page.
type runsView struct {
	Rows   []runRow
	Total  int
	Older  string // the next page of older runs, "" on the last
	Newest string // back to the first page, when this is not it
}

// runsPage reads a page of an asset's runs from the cursor in the query parameter param; the
// links keep the rest of the query.
func (u *UI) runsPage(r *http.Request, id uuid.UUID, param, anchor string) (runsView, error) {
	q := r.URL.Query()
	p, err := u.cfg.Lineage.RunsOfPage(r.Context(), id, q.Get(param), runsPerPage)
	if err != nil {
		return runsView{}, err
	}
	v := runsView{Rows: u.runRows(p.Runs), Total: p.Total}
	q.Del("flash")
	if p.Next != "" {
		q.Set(param, p.Next)
		v.Older = r.URL.Path + "?" + q.Encode() + anchor
	}
	if r.URL.Query().Get(param) != "" {
		q.Del(param)
		v.Newest = r.URL.Path
		if len(q) > 0 {
			v.Newest += "?" + q.Encode()
		}
		v.Newest += anchor
	}
	return v, nil
}

type stateView struct {
	State string
	At    time.Time
	After string // time since the first event, in words
}

type runDatasetView struct {
	Asset                assetLink
	Version, VersionHref string
	Label, Basis         string
	Flagged              bool
}

type runFacet struct {
	Name, JSON string
	Cut        bool // longer than maxFacetBytes: the start is shown
}

type runData struct {
	ID, ParentID, ParentHref string
	Job                      assetLink
	State                    string
	StateTime                time.Time
	Start, End               *time.Time
	NominalStart, NominalEnd *time.Time
	Duration                 string
	EventCount               int
	States                   []stateView
	MoreStates               int
	Inputs, Outputs          []runDatasetView
	MoreInputs, MoreOutputs  int
	Facets                   []runFacet
	Error                    *lineage.RunError
}

func (u *UI) runPage(w http.ResponseWriter, r *http.Request) {
	v, err := u.cfg.Lineage.Run(r.Context(), r.PathValue("id"))
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := runData{ID: v.ID, ParentID: v.ParentRunID, Job: linkOf(v.Job), State: v.State, StateTime: v.StateTime, Start: v.StartedAt, End: v.EndedAt,
		NominalStart: v.NominalStart, NominalEnd: v.NominalEnd, Duration: runDuration(v.StartedAt, v.EndedAt, v.State, v.EventCount, u.cfg.Now()),
		EventCount: v.EventCount, MoreStates: v.MoreStates, MoreInputs: v.MoreInputs, MoreOutputs: v.MoreOutputs, Error: v.Error}
	if v.ParentKnown {
		d.ParentHref = runHref(v.ParentRunID)
	}
	for _, s := range v.States {
		sv := stateView{State: s.State, At: s.At}
		if len(d.States) > 0 {
			sv.After = words.Duration(s.At.Sub(d.States[0].At)) + " later"
		}
		if sv.State == "" {
			sv.State = "(no event type)"
		}
		d.States = append(d.States, sv)
	}
	d.Inputs, d.Outputs = datasetViews(v.Inputs), datasetViews(v.Outputs)
	d.Facets = facetViews(v.Facets)
	title := "Run " + truncateText(v.ID, 40)
	if v.Job.Name != "" {
		title = v.Job.Name + ", run " + truncateText(v.ID, 40)
	}
	u.render(w, r, http.StatusOK, "run", title, d)
}

func datasetViews(ds []lineage.RunDataset) []runDatasetView {
	out := make([]runDatasetView, 0, len(ds))
	for _, x := range ds {
		v := runDatasetView{Asset: linkOf(x.Asset), Version: x.Version, Label: x.Label, Basis: x.Basis, Flagged: x.Flagged}
		if x.Version != "" {
			v.VersionHref = versionHref(x.Asset.ID, x.Version)
		}
		out = append(out, v)
	}
	return out
}

// facetViews pretty-prints each facet, by name.
func facetViews(facets map[string]json.RawMessage) []runFacet {
	out := make([]runFacet, 0, len(facets))
	for name, raw := range facets {
		var buf bytes.Buffer
		f := runFacet{Name: name}
		if json.Indent(&buf, raw, "", "  ") == nil {
			f.JSON = buf.String()
		} else {
			f.JSON = string(raw)
		}
		if len(f.JSON) > maxFacetBytes {
			f.JSON, f.Cut = strings.ToValidUTF8(f.JSON[:maxFacetBytes], ""), true
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b runFacet) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// truncateText cuts s to n bytes (on a character boundary), marking the cut.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// durationChart is the inline SVG of a job's latest run durations: one bar a run, oldest left.
type durationChart struct {
	Width, Height int
	Bars          []durationBar
	Longest       string
}

type durationBar struct {
	X, Y, W, H int
	Href       string
	Title      string
	Failed     bool
}

func chartOf(rows []lineage.RunRow) *durationChart {
	if len(rows) == 0 {
		return nil
	}
	const width, height, gap = 600, 120, 2
	var longest time.Duration
	for _, r := range rows {
		longest = max(longest, r.EndedAt.Sub(*r.StartedAt))
	}
	c := &durationChart{Width: width, Height: height, Longest: words.Duration(longest)}
	bw := width / lineage.DurationRuns
	for i, r := range rows {
		d := r.EndedAt.Sub(*r.StartedAt)
		h := height
		if longest > 0 {
			h = max(int(int64(height)*int64(d)/int64(longest)), 1)
		}
		c.Bars = append(c.Bars, durationBar{X: i * bw, Y: height - h, W: bw - gap, H: h, Href: runHref(r.ID), Failed: r.State == "FAIL" || r.State == "ABORT",
			Title: fmt.Sprintf("%s, %s, started %s", words.Duration(d), strings.ToLower(r.State), when(*r.StartedAt))})
	}
	return c
}

type jobData struct {
	Job                     assetLink
	Owners                  []catalog.Owner
	Runs                    runsView
	Inputs, Outputs         []assetLink
	MoreInputs, MoreOutputs int
	Failures                int
	LatestFailures          []runRow
	Chart                   *durationChart
	Durations               []runRow // the chart's runs as a table, newest first
}

func (u *UI) jobPage(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a job's asset ID"})
		return
	}
	ctx := r.Context()
	v, err := u.cfg.Lineage.JobDetail(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := jobData{Job: linkOf(v.Job), MoreInputs: v.MoreInputs, MoreOutputs: v.MoreOutputs, Failures: v.Failures,
		LatestFailures: u.runRows(v.LatestFailures), Chart: chartOf(v.Durations)}
	d.Durations = u.runRows(v.Durations)
	slices.Reverse(d.Durations)
	for _, x := range v.Inputs {
		d.Inputs = append(d.Inputs, linkOf(x))
	}
	for _, x := range v.Outputs {
		d.Outputs = append(d.Outputs, linkOf(x))
	}
	if d.Owners, err = u.cfg.Catalog.Owners(ctx, id); err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Runs, err = u.runsPage(r, id, "runs", "#runs-h"); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "job", v.Job.Name, d)
}

// runParts reads the asset page's page of runs (the cursor in ?runs=).
func (u *UI) runParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	g.Go(func() error {
		v, err := u.runsPage(r, d.Asset.ID, "runs", "#runs-h")
		var de *catalog.Error
		if errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid) {
			return err // a cursor mangled by hand: the error page says to start again
		}
		if !miss("the runs", err) {
			d.RunList = &v
		}
		return nil
	})
}

// jobReaders is the asset page's jobs that read or wrote the asset through OpenLineage runs.
type jobReaders struct {
	Jobs    []jobUse // the readers among the top jobs
	Total   int      // jobs that read or wrote it, in all
	Readers int      // jobs that read it, in all
	More    int      // readers not listed
}

type jobUse struct {
	Job           assetLink
	Reads, Writes int64
}

func jobReadersOf(j usage.JobReaders) *jobReaders {
	v := &jobReaders{Total: j.Total, Readers: j.Readers}
	for _, x := range j.Jobs {
		if x.Reads > 0 {
			v.Jobs = append(v.Jobs, jobUse{Job: linkOf(x.Job), Reads: x.Reads, Writes: x.Writes})
		}
	}
	v.More = max(v.Readers-len(v.Jobs), 0)
	return v
}

// usersText says who used an asset: "by 150 jobs and 2 other actors"; "" when nobody is known.
func usersText(actors int, j *jobReaders) string {
	var parts []string
	if j != nil && j.Total > 0 {
		parts = append(parts, plural(j.Total, "job"))
	}
	if actors > 0 {
		noun := "actor"
		if len(parts) > 0 {
			noun = "other actor"
		}
		parts = append(parts, plural(actors, noun))
	}
	if len(parts) == 0 {
		return ""
	}
	return "by " + strings.Join(parts, " and ")
}
