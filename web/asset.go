package web

// The asset page: the asset and the parts of the page read alongside it, all at once (a part
// that cannot be read is listed on the page as missing).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
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
	"github.com/tidemark/tidemark/warehouse"
)

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
	// held is the lineage budget the page's graph holds until the page is written.
	held      *lineage.Reservation
	Asset     catalog.Asset
	Names     []catalog.Name
	Owners    []catalog.Owner
	Usage     *usage.Series
	Chart     chartData
	Depth     int
	Direction lineage.Direction
	Dirs      []dirLink // the direction switch
	Graph     graphData // also the node list: every node the graph may draw
	Truncated bool      // the lineage walk stopped at its limit
	Fit       graphFit  // what the graph grouped and left out
	Field     string
	Fields    []string // this asset's columns with column lineage
	Columns   []columnRow
	// RunList is a page of the asset's runs (runs.go), nil without lineage; JobUse the jobs that
	// read or wrote it through OpenLineage runs, nil without usage.
	RunList   *runsView
	JobUse    *jobReaders
	Table     *tables.Table
	Health    *tables.Health
	Commits   *warehouse.CommitHealth // for a table served over the Iceberg REST protocol
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
	// At is the time the lineage graph is drawn at (nil: now); AtInput the datetime field's
	// value for it; NowHref the link back to the graph now.
	At      *time.Time
	AtInput string
	NowHref string
	// Versions is the versions section (nil without a versions service, or for a job).
	Versions *versionsView
	// View is the served Iceberg view's versions (nil unless the asset is one; icebergview.go).
	View *viewData
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
	defer func() { d.held.Release() }()
	if n, err := strconv.Atoi(r.URL.Query().Get("depth")); err == nil && n >= 1 && n <= 10 {
		d.Depth = n
	}
	if dir, err := lineage.ParseDirection(r.URL.Query().Get("direction")); err == nil {
		d.Direction = dir
	}
	if s := r.URL.Query().Get("at"); s != "" && u.cfg.Lineage != nil {
		// A bad time is the person's to fix: the error page says how, rather than a graph of now
		// that looks like the one asked for.
		at, err := parseAt(s)
		if err == nil {
			err = u.cfg.Lineage.CheckAt(at)
		}
		if err != nil {
			u.fail(w, r, err)
			return
		}
		d.At, d.AtInput = &at, at.Format("2006-01-02T15:04:05")
		q := r.URL.Query()
		q.Del("at")
		q.Del("flash")
		d.NowHref = "?" + q.Encode() + "#lineage-h"
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
	u.usageParts(&g, r, &d, miss)
	if u.cfg.Lineage != nil {
		u.lineageParts(&g, r, &d, miss)
		u.runParts(&g, r, &d, miss)
	}
	u.curationParts(&g, r, &d, miss)
	u.nameShareParts(&g, r, &d, miss)
	u.subscriptionParts(&g, r, &d, miss)
	u.tableParts(&g, r, &d, miss)
	u.viewParts(&g, r, &d, miss)
	u.cleanupParts(&g, r, &d, miss)
	u.versionsParts(&g, r, &d, miss)
	if err := g.Wait(); err != nil {
		u.fail(w, r, err)
		return
	}
	slices.Sort(d.Missing) // in one order whichever part failed first
	// Migrations and column lineage keep no history: a graph of a past time is drawn without them.
	if d.At == nil {
		d.Graph = withMigrations(d.Graph, d.Migrations, d.MigrationNames)
		d.Graph = withColumns(d.Graph, d.Columns)
	}
	if u.cfg.Lineage != nil {
		u.fitLineage(r, &d)
	}
	d.Edit.current(&d)
	u.render(w, r, status, "asset", a.Name, d)
}

// usageParts reads the asset page's usage chart: 90 days, a point a day; and the jobs that used
// the asset through OpenLineage runs over the same days.
func (u *UI) usageParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
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
		g.Go(func() error {
			now := u.cfg.Now().UTC()
			j, err := u.cfg.Usage.JobReaders(ctx, id, now.Add(-89*24*time.Hour), now, topJobs)
			if !miss("the jobs that read it", err) {
				d.JobUse = jobReadersOf(j)
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
				if t.Warehouse != "" && u.cfg.Warehouse != nil {
					ch, err := u.cfg.Warehouse.CommitHealth(ctx, id, warehouse.DefaultCommitWindow)
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
