package web

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

var funcs = template.FuncMap{
	"ago": func(t any) string {
		var tt time.Time
		switch v := t.(type) {
		case time.Time:
			tt = v
		case *time.Time:
			if v == nil {
				return "never"
			}
			tt = *v
		default:
			return ""
		}
		if tt.IsZero() {
			return ""
		}
		return tt.UTC().Format("2006-01-02 15:04 UTC")
	},
	"bytes": cleanup.BytesText,
	"json": func(v any) (template.JS, error) {
		b, err := json.Marshal(v)
		return template.JS(b), err
	},
	"short":     short,
	"hasPrefix": strings.HasPrefix,
	"list":      func(xs ...int) []int { return xs },
	"list2":     func(xs ...string) []string { return xs },
	"usd":       func(f float64) string { return fmt.Sprintf("$%.2f", f) },
	"pct":       func(f float64) float64 { return 100 * f },
	"add": func(xs ...int) int {
		n := 0
		for _, x := range xs {
			n += x
		}
		return n
	},
}

// short is an ID cut to its last 8 hex digits: a UUIDv7 starts with its creation time, so IDs
// made the same minute share their first characters, while the tail is random.
func short(id uuid.UUID) string { s := id.String(); return s[len(s)-8:] }

// --- home: search and browse ------------------------------------------------------------------

type homeData struct {
	Query     string
	Namespace string
	Kind      string
	Search    *searchView // see search.go
	Assets    []catalog.Asset
	Kinds     []catalog.Kind
	Searched  bool
	// Waiting are the names usage records wait under until an asset takes them.
	Waiting        []usage.Waiting
	WaitingRecords int64
	// Browsing: Total assets match, this page shows From to From+len(Assets)-1, Next continues.
	Total int
	From  int
	Next  string
}

// homePage is how many assets the browse list shows at once.
const homePage = 100

func (u *UI) home(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := homeData{Query: q, Namespace: r.URL.Query().Get("ns"), Kind: r.URL.Query().Get("kind"), Kinds: catalog.Kinds}
	ctx := r.Context()
	var err error
	if searching(r.URL.Query()) {
		d.Searched = true
		d.Search, err = u.search(ctx, r.URL.Query())
	} else {
		f := catalog.ListFilter{NamespaceContains: strings.TrimSpace(d.Namespace), Kind: catalog.Kind(d.Kind), Limit: homePage}
		f.After, _ = uuid.Parse(r.URL.Query().Get("after"))
		d.From = 1
		if n, _ := strconv.Atoi(r.URL.Query().Get("from")); n > 1 && f.After != uuid.Nil {
			d.From = n
		}
		var more bool
		d.Assets, more, err = u.cfg.Catalog.List(ctx, f)
		if err == nil {
			d.Total, err = u.cfg.Catalog.Count(ctx, f)
		}
		if err == nil && more {
			q := url.Values{"after": {d.Assets[len(d.Assets)-1].ID.String()}, "from": {strconv.Itoa(d.From + len(d.Assets))}}
			if d.Namespace != "" {
				q.Set("ns", d.Namespace)
			}
			if d.Kind != "" {
				q.Set("kind", d.Kind)
			}
			d.Next = "/?" + q.Encode()
		}
		if err == nil && u.cfg.Usage != nil {
			d.Waiting, d.WaitingRecords, err = u.cfg.Usage.Unresolved(ctx, 10)
		}
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "home", "Search", d)
}

// --- the asset page ---------------------------------------------------------------------------

type chartData struct {
	// From and To bound the x axis to the window asked for: with one day of data, the chart
	// library would otherwise stretch the axis over years.
	From   int64   `json:"from"`
	To     int64   `json:"to"`
	X      []int64 `json:"x"`
	Reads  []int64 `json:"reads"`
	Writes []int64 `json:"writes"`
}

type assetData struct {
	Asset     catalog.Asset
	Names     []catalog.Name
	Owners    []catalog.Owner
	Usage     *usage.Series
	Chart     chartData
	Depth     int
	Direction lineage.Direction
	Dirs      []dirLink // the direction switch
	Graph     graphData // also the node list: every node the graph may draw
	Truncated bool
	Field     string
	Fields    []string // this asset's columns with column lineage
	Columns   []columnRow
	Runs      []lineage.RunInfo
	Table     *tables.Table
	Health    *tables.Health
	Commits   *tables.CommitHealth // for a table served over the Iceberg REST protocol
	Proposals []cleanup.Proposal
	// Dangling is the table's open dangling-reference finding: the health summary leads with it
	// (queries fail), whatever the layout figures say.
	Dangling *cleanup.Proposal
	Schema   []schemaField
	// Shares are names this asset held that another asset held before or after it; CreatedBy
	// is who created this asset (for the warning on a name taken again).
	Shares    []catalog.NameShare
	CreatedBy string
	// Migrations this asset is the old or the new side of, with both sides' names.
	Migrations     []reconcile.Migration
	MigrationNames map[uuid.UUID]string
	// Missing names the parts of the page that could not be read (logged with the cause): the
	// page says so instead of looking complete.
	Missing []string
	// Cur is the curation part (curation.go); Edit an edit the page refused.
	Cur  curationData
	Edit editState
	Sub  *subscriptionView // nil without subscriptions (no notify service)
}

// partial records that part of the asset page could not be read: logged, and listed on the page.
// A part that does not exist (not a table, no schema) is not missing.
func (u *UI) partial(r *http.Request, d *assetData, part string, err error) bool {
	if err == nil || errors.Is(err, catalog.ErrNotFound) {
		return false
	}
	u.cfg.Logger.WarnContext(r.Context(), "web: part of the asset page could not be read", "asset_id", d.Asset.ID, "part", part, "err", err)
	d.Missing = append(d.Missing, part)
	return true
}

type schemaField struct {
	Name, Type, Description string
}

func (u *UI) asset(w http.ResponseWriter, r *http.Request) {
	u.assetPage(w, r, http.StatusOK, editState{})
}

// assetPage renders the asset page with status; edit, when set, is an edit the page refused.
func (u *UI) assetPage(w http.ResponseWriter, r *http.Request, status int, edit editState) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID"})
		return
	}
	ctx := r.Context()
	a, err := u.cfg.Catalog.Get(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := assetData{Asset: a, Depth: 2, Direction: lineage.Both, Field: r.URL.Query().Get("field"), Edit: edit}
	if n, err := strconv.Atoi(r.URL.Query().Get("depth")); err == nil && n >= 1 && n <= 10 {
		d.Depth = n
	}
	if dir, err := lineage.ParseDirection(r.URL.Query().Get("direction")); err == nil {
		d.Direction = dir
	}
	d.Dirs = dirLinks(d)
	if d.Names, err = u.cfg.Catalog.Names(ctx, id); err != nil {
		u.fail(w, r, err)
		return
	}
	slices.Reverse(d.Names) // newest first on the timeline
	if d.Owners, err = u.cfg.Catalog.Owners(ctx, id); err != nil {
		u.fail(w, r, err)
		return
	}
	// The parts are independent reads: they run at once, so the page waits for the slowest
	// part, not for the sum of them.
	var mu sync.Mutex // guards d.Missing (partial)
	miss := func(part string, err error) bool {
		mu.Lock()
		defer mu.Unlock()
		return u.partial(r, &d, part, err)
	}
	var g errgroup.Group
	u.usageParts(&g, r, &d)
	if u.cfg.Lineage != nil {
		u.lineageParts(&g, r, &d, miss)
	}
	u.curationParts(&g, r, &d, miss)
	u.nameShareParts(&g, r, &d, miss)
	u.subscriptionParts(&g, r, &d, miss)
	u.tableParts(&g, r, &d, miss)
	u.cleanupParts(&g, r, &d, miss)
	if err := g.Wait(); err != nil {
		u.fail(w, r, err)
		return
	}
	slices.Sort(d.Missing) // in one order whichever part failed first
	d.Graph = withMigrations(d.Graph, d.Migrations, d.MigrationNames)
	d.Graph = withColumns(d.Graph, d.Columns)
	d.Edit.current(&d)
	u.render(w, r, status, "asset", a.Name, d)
}

// usageParts reads the asset page's usage chart: 90 days, a point a day.
func (u *UI) usageParts(g *errgroup.Group, r *http.Request, d *assetData) {
	ctx, id := r.Context(), d.Asset.ID
	if u.cfg.Usage != nil {
		g.Go(func() error {
			now := u.cfg.Now().UTC()
			s, err := u.cfg.Usage.Series(ctx, id, now.Add(-89*24*time.Hour), now, usage.Daily)
			if err != nil {
				return err // the usage chart is the page's heart: fail the page
			}
			d.Usage = &s
			d.Chart.From, d.Chart.To = now.Add(-89*24*time.Hour).Truncate(24*time.Hour).Unix(), now.Unix()
			for _, p := range s.Points {
				d.Chart.X = append(d.Chart.X, p.Start.Unix())
				d.Chart.Reads = append(d.Chart.Reads, p.Reads)
				d.Chart.Writes = append(d.Chart.Writes, p.Writes)
			}
			return nil
		})
	}
}

// tableParts reads the Iceberg table behind the asset, its health and, when Tidemark serves
// it, its commit health.
func (u *UI) tableParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	ctx, id := r.Context(), d.Asset.ID
	if u.cfg.Tables != nil {
		g.Go(func() error {
			t, err := u.cfg.Tables.Get(ctx, id)
			if err == nil {
				d.Table = &t
				h, err := u.cfg.Tables.Health(ctx, id)
				if t.Warehouse != "" && errors.Is(err, catalog.ErrNotFound) && t.RefreshedAt == nil {
					err = nil // served and just created: inspected after its first commits
				} else if !miss("the table's health", err) {
					d.Health = &h
				}
				if t.Warehouse != "" {
					ch, err := u.cfg.Tables.CommitHealth(ctx, id, tables.DefaultCommitWindow)
					if !miss("the table's commit health", err) {
						d.Commits = &ch
					}
				}
			} else {
				miss("the Iceberg table", err)
			}
			return nil
		})
	}
}

// cleanupParts reads the proposals touching the asset (and an open dangling reference, which
// leads the health section) and the migrations it is a side of.
func (u *UI) cleanupParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	ctx, id := r.Context(), d.Asset.ID
	if u.cfg.Cleanup != nil {
		g.Go(func() error {
			var err error
			d.Proposals, err = u.cfg.Cleanup.Proposals(ctx, cleanup.ProposalFilter{AssetID: id, Limit: 20})
			if miss("the cleanup proposals", err) {
				return nil
			}
			// Asked apart: an open finding may be older than the newest 20 proposals.
			open, err := u.cfg.Cleanup.Proposals(ctx, cleanup.ProposalFilter{AssetID: id, Kind: cleanup.KindDangling, State: "open", Limit: 1})
			if !miss("the cleanup proposals", err) && len(open) > 0 {
				d.Dangling = &open[0]
			}
			return nil
		})
	}
	if u.cfg.Reconcile != nil {
		g.Go(func() error {
			ms, err := u.cfg.Reconcile.List(ctx, id, 20)
			if miss("the migrations", err) {
				return nil
			}
			var ids []uuid.UUID
			for _, m := range ms {
				ids = append(ids, m.OldAssetID, m.NewAssetID)
			}
			names, err := u.names(r, ids, false)
			if !miss("the migrations", err) {
				d.Migrations, d.MigrationNames = ms, names
			}
			return nil
		})
	}
}

// nameShareParts reads the names of the asset other assets held before or after it and, when
// there are some, who created the asset (for the warning on a name taken again).
func (u *UI) nameShareParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	ctx, id := r.Context(), d.Asset.ID
	g.Go(func() error {
		shares, err := u.cfg.Catalog.NameShares(ctx, id)
		if miss("the names other assets held", err) || len(shares) == 0 {
			return nil
		}
		d.Shares = shares
		evs, _, err := u.cfg.Catalog.Audit(ctx, id, uuid.Nil, 1) // oldest first: the creation
		if !miss("who created this asset", err) && len(evs) == 1 && evs[0].Action == catalog.ActionCreate {
			d.CreatedBy = evs[0].Actor
		}
		return nil
	})
}

// schema reads the asset's OpenLineage schema facet, when lineage stored one.
func (u *UI) schema(r *http.Request, id uuid.UUID) ([]schemaField, error) {
	raw, err := u.cfg.Lineage.Facet(r.Context(), id, "schema")
	if err != nil || raw == nil {
		return nil, err
	}
	var f struct {
		Fields []struct {
			Name        string `json:"name"`
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"fields"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("the stored schema facet is not a schema: %w", err)
	}
	out := make([]schemaField, 0, len(f.Fields))
	for _, x := range f.Fields {
		out = append(out, schemaField{x.Name, x.Type, x.Description})
	}
	return out, nil
}

// --- proposals --------------------------------------------------------------------------------

type proposalsData struct {
	State, Kind string
	Items       []cleanup.Proposal
	Names       map[uuid.UUID]string
}

func (u *UI) proposals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := proposalsData{State: q.Get("state"), Kind: q.Get("kind")}
	if _, ok := q["state"]; !ok {
		d.State = "open"
	}
	var err error
	if d.Items, err = u.cfg.Cleanup.Proposals(r.Context(), cleanup.ProposalFilter{State: d.State, Kind: d.Kind, Limit: 100}); err != nil {
		u.fail(w, r, err)
		return
	}
	ids := make([]uuid.UUID, len(d.Items))
	for i, p := range d.Items {
		ids[i] = p.AssetID
	}
	if d.Names, err = u.names(r, ids, true); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "proposals", "Cleanup proposals", d)
}

type proposalData struct {
	P     cleanup.Proposal
	Asset catalog.Asset
	// Files is a page of the proposal's file list (its journal once executed); Next continues it.
	Files []cleanup.ProposalFile
	Next  string // empty on the last page
	After string // empty on the first page
	// StopWindow is how long an approval waits before execution (a person may cancel it then).
	StopWindow time.Duration
	Now        time.Time
	// Remedy is what fixes a dangling_reference finding, named for this table (nil for others).
	Remedy *danglingRemedy
}

// danglingRemedy names the snapshots a dangling reference's remedies act on: the earliest
// snapshot that references a missing file, and the newest retained one before it (nil when none
// predates it: then only restoring the files helps).
type danglingRemedy struct {
	First      tables.Snapshot
	RollbackTo *tables.Snapshot
}

// remedyOf reads the table's snapshots for a dangling_reference finding's remedies; a table not
// inspected (or not found) leaves the generic remedies of the evidence.
func (u *UI) remedyOf(ctx context.Context, p cleanup.Proposal) *danglingRemedy {
	if p.Kind != cleanup.KindDangling || u.cfg.Tables == nil || len(p.Evidence.Dangling) == 0 {
		return nil
	}
	in, err := u.cfg.Tables.Inspection(ctx, p.AssetID)
	if err != nil {
		return nil
	}
	refs := map[int64]bool{}
	for _, f := range p.Evidence.Dangling {
		refs[f.SnapshotID] = true
	}
	var r *danglingRemedy
	for _, sn := range in.Snapshots {
		if refs[sn.ID] && (r == nil || sn.At.Before(r.First.At)) {
			r = &danglingRemedy{First: sn}
		}
	}
	if r == nil {
		return nil
	}
	for _, sn := range in.Snapshots {
		if sn.At.Before(r.First.At) && (r.RollbackTo == nil || sn.At.After(r.RollbackTo.At)) {
			r.RollbackTo = &sn
		}
	}
	return r
}

// filesPerPage is how many files a proposal page lists at once.
const filesPerPage = 100

func (u *UI) proposal(w http.ResponseWriter, r *http.Request) {
	d, ok := u.proposalPage(w, r)
	if ok {
		u.render(w, r, http.StatusOK, "proposal", "Proposal "+short(d.P.ID), d)
	}
}

// proposalPage reads what the proposal page and its confirm step show.
func (u *UI) proposalPage(w http.ResponseWriter, r *http.Request) (proposalData, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a proposal ID"})
		return proposalData{}, false
	}
	after, _ := uuid.Parse(r.URL.Query().Get("after"))
	d := proposalData{StopWindow: u.cfg.Cleanup.StopWindow(), Now: u.cfg.Now().UTC()}
	if d.P, err = u.cfg.Cleanup.GetProposal(r.Context(), id); err == nil {
		d.Files, err = u.cfg.Cleanup.ProposalFiles(r.Context(), id, cleanup.FileFilter{After: after, Limit: filesPerPage + 1})
	}
	if err != nil {
		u.fail(w, r, err)
		return d, false
	}
	if len(d.Files) > filesPerPage {
		d.Files = d.Files[:filesPerPage]
		d.Next = d.Files[filesPerPage-1].ID.String()
	}
	if after != uuid.Nil {
		d.After = after.String()
	}
	d.Asset, _ = u.cfg.Catalog.Get(r.Context(), d.P.AssetID)
	d.Remedy = u.remedyOf(r.Context(), d.P)
	return d, true
}

// approveForm is the confirm step of an approval: what it deletes, and the stop window after it.
func (u *UI) approveForm(w http.ResponseWriter, r *http.Request) {
	s := u.sessions.get(r)
	if s == nil || !s.Admin {
		http.Error(w, "forbidden: approving needs a session signed in with an admin token", http.StatusForbidden)
		return
	}
	d, ok := u.proposalPage(w, r)
	if ok {
		u.render(w, r, http.StatusOK, "approve", "Approve proposal "+short(d.P.ID), approveData{proposalData: d})
	}
}

type approveData struct {
	proposalData
	Error string
	Typed string
}

// filesDownload serves a proposal's whole file list as CSV or JSON.
func (u *UI) filesDownload(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a proposal ID"})
		return
	}
	format := r.URL.Query().Get("format")
	if format != "csv" && format != "json" {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "download the files as format=csv or format=json"})
		return
	}
	ctx := r.Context()
	if _, err := u.cfg.Cleanup.ProposalFiles(ctx, id, cleanup.FileFilter{Limit: 1}); err != nil {
		u.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"proposal-%s-files.%s\"", id, format))
	if format == "csv" {
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	cw := csv.NewWriter(w)
	if format == "csv" {
		_ = cw.Write([]string{"path", "size", "modified_at", "state", "detail", "done_at"})
	} else {
		_, _ = io.WriteString(w, `{"items":[`)
	}
	enc := json.NewEncoder(w)
	first, after := true, uuid.Nil
	for {
		fs, err := u.cfg.Cleanup.ProposalFiles(ctx, id, cleanup.FileFilter{After: after, Limit: 1000})
		if err != nil {
			u.cfg.Logger.Error("proposal files download cut short", "proposal_id", id, "err", err)
			return
		}
		if len(fs) == 0 {
			break
		}
		for _, f := range fs {
			if format == "csv" {
				_ = cw.Write([]string{f.Path, strconv.FormatInt(f.Size, 10), stamp(f.ModifiedAt), f.State, f.Detail, stamp(f.DoneAt)})
				continue
			}
			if !first {
				_, _ = io.WriteString(w, ",")
			}
			first = false
			_ = enc.Encode(fileRow{f.Path, f.Size, f.ModifiedAt, f.State, f.Detail, f.DoneAt})
		}
		cw.Flush()
		after = fs[len(fs)-1].ID
	}
	if format == "json" {
		_, _ = io.WriteString(w, "]}\n")
	}
	cw.Flush()
}

// fileRow is a file as the JSON download writes it.
type fileRow struct {
	Path       string     `json:"path"`
	Size       int64      `json:"size"`
	ModifiedAt *time.Time `json:"modified_at,omitempty"`
	State      string     `json:"state"`
	Detail     string     `json:"detail,omitempty"`
	DoneAt     *time.Time `json:"done_at,omitempty"`
}

func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// decide approves, rejects or cancels: a signed-in admin, with the form's CSRF token. An
// approval comes from the confirm step, with the file count typed and the bytes it showed.
func (u *UI) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	s := u.sessions.get(r)
	if s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden: sign in, and use the page's own form", http.StatusForbidden)
		return
	}
	if !s.Admin {
		http.Error(w, "forbidden: deciding on proposals needs a token with the admin scope", http.StatusForbidden)
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a proposal ID"})
		return
	}
	ctx := catalog.WithActor(r.Context(), s.actor())
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	flash := "decided"
	switch r.PathValue("decision") {
	case "approve":
		err = u.approve(ctx, w, r, id, reason)
		if errors.Is(err, errShown) {
			return
		}
	case "reject":
		_, err = u.cfg.Cleanup.Reject(ctx, id, reason)
	case "cancel":
		_, err = u.cfg.Cleanup.Cancel(ctx, id, reason)
		flash = "cancelled"
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/proposals/"+id.String()+"?flash="+flash, http.StatusSeeOther)
}

// errShown: the answer is already written.
var errShown = errors.New("web: answered")

// approve checks the confirm step's form and approves; a confirmation that does not match shows
// the confirm step again, saying what to fix.
func (u *UI) approve(ctx context.Context, w http.ResponseWriter, r *http.Request, id uuid.UUID, note string) error {
	p, err := u.cfg.Cleanup.GetProposal(ctx, id)
	if err != nil {
		return err
	}
	typed := strings.TrimSpace(r.PostFormValue("confirm_files"))
	a := cleanup.Approval{Note: note}
	var problem string
	if p.ConfirmsFiles() {
		files, ferr := strconv.ParseInt(typed, 10, 64)
		bytes, berr := strconv.ParseInt(r.PostFormValue("confirm_bytes"), 10, 64)
		switch {
		case ferr != nil || berr != nil:
			problem = fmt.Sprintf("Type the number of files, %d, to confirm.", p.FileCount)
		default:
			a.Files, a.Bytes = &files, &bytes
		}
	} else if r.PostFormValue("confirm") != "yes" {
		problem = "Tick the box to confirm that you reviewed what this approval does."
	}
	if problem == "" {
		_, err = u.cfg.Cleanup.ApproveConfirmed(ctx, id, a)
		var de *catalog.Error
		if !errors.As(err, &de) || !errors.Is(err, catalog.ErrInvalid) || de.Field != "confirm_files" {
			return err
		}
		problem = de.Message
	}
	d, ok := u.proposalPage(w, r)
	if ok {
		u.render(w, r, http.StatusBadRequest, "approve", "Approve proposal "+short(id), approveData{proposalData: d, Error: problem, Typed: typed})
	}
	return errShown
}

// --- scans and the audit log ------------------------------------------------------------------

type scansData struct {
	Items []cleanup.Report
	Names map[uuid.UUID]string

	scanRequests // the pending requests and "Scan now" (tables.go)
}

func (u *UI) scans(w http.ResponseWriter, r *http.Request) {
	reps, err := u.cfg.Cleanup.Scans(r.Context(), cleanup.ScanFilter{Limit: 100})
	if err != nil {
		u.fail(w, r, err)
		return
	}
	ids := make([]uuid.UUID, len(reps))
	for i, s := range reps {
		ids[i] = s.AssetID
	}
	d := scansData{Items: reps}
	if d.scanRequests, err = u.scanRequests(r); err != nil {
		u.fail(w, r, err)
		return
	}
	for _, p := range d.Requested {
		ids = append(ids, p.AssetID)
	}
	if d.Names, err = u.names(r, ids, false); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "scans", "Scan reports", d)
}

func (u *UI) scan(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a scan ID"})
		return
	}
	rep, err := u.cfg.Cleanup.GetScan(r.Context(), id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "scan", "Scan "+short(id), rep)
}

// names labels a page's assets in a few queries (not one per row).
func (u *UI) names(r *http.Request, ids []uuid.UUID, withNamespace bool) (map[uuid.UUID]string, error) {
	sums, err := u.cfg.Catalog.Summaries(r.Context(), ids)
	if err != nil {
		return nil, err
	}
	out := make(map[uuid.UUID]string, len(sums))
	for id, s := range sums {
		out[id] = s.Name
		if withNamespace {
			out[id] = s.Namespace + " / " + s.Name
		}
	}
	return out, nil
}

type auditData struct {
	Actor, Action, Asset string
	AssetName            string // the filtered asset's name
	Items                []auditRow
	Next                 string // the ID the next (older) page starts before; empty on the last
}

type auditRow struct {
	catalog.AuditEvent
	Changes []catalog.AuditChange
	// Asset and AssetName: the asset's ID and its name (the random tail of the ID if it has none).
	Asset, AssetName string
}

// auditPage is how many events the audit page lists at once.
const auditPage = 100

// audit lists the audit log newest first, each change as a diff, filtered by actor, action and
// asset.
func (u *UI) audit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := auditData{Actor: strings.TrimSpace(q.Get("actor")), Action: strings.TrimSpace(q.Get("action")), Asset: strings.TrimSpace(q.Get("asset"))}
	f := catalog.AuditFilter{Actor: d.Actor, Action: d.Action, Limit: auditPage + 1}
	f.Before, _ = uuid.Parse(q.Get("before"))
	if d.Asset != "" {
		var err error
		if f.AssetID, err = uuid.Parse(d.Asset); err != nil {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "asset", Message: "the asset filter takes an asset ID (follow an asset's link in the list)"})
			return
		}
	}
	evs, err := u.cfg.Catalog.AuditEvents(r.Context(), f)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if len(evs) > auditPage {
		evs = evs[:auditPage]
		d.Next = evs[auditPage-1].ID.String()
	}
	var ids []uuid.UUID
	for _, ev := range evs {
		if ev.AssetID != nil {
			ids = append(ids, *ev.AssetID)
		}
	}
	if f.AssetID != uuid.Nil {
		ids = append(ids, f.AssetID)
	}
	names, err := u.names(r, ids, true)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.AssetName = names[f.AssetID]
	for _, ev := range evs {
		row := auditRow{AuditEvent: ev, Changes: ev.Changes()}
		if ev.AssetID != nil {
			row.Asset, row.AssetName = ev.AssetID.String(), names[*ev.AssetID]
			if row.AssetName == "" {
				row.AssetName = short(*ev.AssetID)
			}
		}
		d.Items = append(d.Items, row)
	}
	u.render(w, r, http.StatusOK, "audit", "Audit log", d)
}
