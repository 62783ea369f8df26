package web

// The tables page: every Iceberg table Tidemark knows (registered, synced from a catalog, or
// served by its own warehouse) with its health, its last scan and reference check and the scans
// people asked for; the catalog syncs; and "Scan now", which records a request the scheduler's
// scan loop answers on its next round (never a scan inside the request).

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/tables"
)

func init() {
	flashes["scan-requested"] = "Scan requested: the scheduler runs it on its next round; it shows as pending until it starts"
	flashes["scan-already-requested"] = "A scan of this table was already requested and is still pending: it runs once"
}

// tablesPage is how many tables the list shows at once.
const tablesPage = 50

type tablesData struct {
	Query string
	Rows  []tableRow
	Total int
	From  int // the first row's position, 1-based
	Prev  string
	Next  string
	Syncs []syncView
	// CanScan: the session may ask for scans (write scope).
	CanScan bool
	Window  string // the maintenance window requested scans wait for
}

type tableRow struct {
	tables.Table
	Name      string
	Source    string
	Health    *tables.Health
	HealthErr string
	cleanup.TableOverview
}

// syncView is the last sync of one configured catalog.
type syncView struct {
	Name     string
	SyncID   uuid.UUID
	At       *time.Time // when that sync finished; nil: no stored sync has listed this catalog
	Outcome  string     // ok, partial, failed
	Error    string
	Tables   int
	Added    int
	Renamed  int
	Deleted  int
	Problems []string // unreachable namespaces and tables that failed, "name: error"
}

func (u *UI) tablesRoutes() {
	u.handleFunc("GET /tables", u.tablesList)
	u.handleFunc("POST /tables/{id}/scans", u.requestScan)
	u.writePathRoutes()
}

func (u *UI) tablesList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	d := tablesData{Query: strings.TrimSpace(q.Get("q")), From: 1, Window: u.cfg.Cleanup.MaintenanceWindow()}
	if n, err := strconv.Atoi(q.Get("from")); err == nil && n > 1 {
		d.From = n
	}
	if s := u.sessions.get(r); s != nil && s.Write {
		d.CanScan = true
	}
	ts, total, err := u.cfg.Tables.Browse(ctx, tables.BrowseFilter{Contains: d.Query, Offset: d.From - 1, Limit: tablesPage})
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d.Total = total
	ids := make([]uuid.UUID, len(ts))
	for i, t := range ts {
		ids[i] = t.AssetID
	}
	names, err := u.names(r, ids, true)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	over, err := u.cfg.Cleanup.TablesOverview(ctx, ids)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	for _, t := range ts {
		row := tableRow{Table: t, Name: names[t.AssetID], Source: source(t), TableOverview: over[t.AssetID]}
		if row.Name == "" {
			row.Name = short(t.AssetID)
		}
		h, err := u.cfg.Tables.Health(ctx, t.AssetID)
		var de *catalog.Error
		switch {
		case err == nil:
			row.Health = &h
		case errors.As(err, &de) && errors.Is(err, catalog.ErrNotFound):
			row.HealthErr = de.Message // not inspected yet, and why
		default:
			u.fail(w, r, err)
			return
		}
		d.Rows = append(d.Rows, row)
	}
	page := func(from int) string {
		v := url.Values{"from": {strconv.Itoa(from)}}
		if d.Query != "" {
			v.Set("q", d.Query)
		}
		return "/tables?" + v.Encode()
	}
	if d.From > 1 {
		d.Prev = page(max(1, d.From-tablesPage))
	}
	if d.From-1+len(ts) < total {
		d.Next = page(d.From + len(ts))
	}
	if d.Syncs, err = u.syncViews(r); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "tables", "Iceberg tables", d)
}

// source says where a table comes from, as a person would.
func source(t tables.Table) string {
	switch {
	case t.Warehouse != "":
		return "served by Tidemark (warehouse " + t.Warehouse + ")"
	case t.Connection != "":
		return "synced from catalog " + t.Connection + " as " + t.Identifier
	}
	return "registered by metadata location"
}

// syncHistory is how many stored sync reports the page looks back through for each catalog's
// last sync (every report lists every catalog that was configured when it ran).
const syncHistory = 20

// syncViews is each configured catalog's last sync, from the stored sync reports.
func (u *UI) syncViews(r *http.Request) ([]syncView, error) {
	conns := u.cfg.Tables.Connections()
	if len(conns) == 0 {
		return nil, nil
	}
	reps, err := u.cfg.Tables.Syncs(r.Context(), syncHistory)
	if err != nil {
		return nil, err
	}
	out := make([]syncView, 0, len(conns))
	for _, c := range conns {
		v := syncView{Name: c.Name, Outcome: "not synced yet"}
	find:
		for _, rep := range reps {
			for _, cr := range rep.Connections {
				if cr.Name != c.Name {
					continue
				}
				at := rep.FinishedAt
				v.SyncID, v.At, v.Tables = rep.ID, &at, cr.Tables
				v.Added, v.Renamed, v.Deleted = len(cr.Added), len(cr.Renamed), len(cr.Deleted)
				for _, n := range cr.Unreachable {
					v.Problems = append(v.Problems, "namespace "+n.Namespace+": "+n.Error)
				}
				for _, f := range cr.Failed {
					v.Problems = append(v.Problems, "table "+f.Identifier+": "+f.Error)
				}
				switch {
				case cr.Error != "":
					v.Outcome, v.Error = "failed", cr.Error
				case len(v.Problems) > 0:
					v.Outcome = fmt.Sprintf("partial: %d problem(s)", len(v.Problems))
				default:
					v.Outcome = "ok"
				}
				break find
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// requestScan records a person's request for a scan of a table (write scope, the page's CSRF
// token) and goes back to the page the form was on.
func (u *UI) requestScan(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	s := u.sessions.get(r)
	if s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden: sign in, and use the page's own form", http.StatusForbidden)
		return
	}
	if !s.Write {
		http.Error(w, "forbidden: asking for a scan needs a token with the write scope", http.StatusForbidden)
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not a table's asset ID"})
		return
	}
	ctx := catalog.WithActor(r.Context(), s.actor())
	_, created, err := u.cfg.Cleanup.RequestScan(ctx, id, r.PostFormValue("inventory") == "1")
	if err != nil {
		u.fail(w, r, err)
		return
	}
	flash := "scan-requested"
	if !created {
		flash = "scan-already-requested"
	}
	// Back to the page the form was on (this site's paths only), with the flash replacing any
	// earlier one.
	back, err := url.Parse(localPath(r.PostFormValue("back")))
	if err != nil || back.Path == "/" {
		back = &url.URL{Path: "/tables"}
	}
	v := back.Query()
	v.Set("flash", flash)
	back.RawQuery, back.Fragment = v.Encode(), "table-"+id.String()
	if strings.HasPrefix(back.Path, "/scans") {
		back.Fragment = "requested"
	}
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// scanRequests is the scans page's part: the pending requests, and whether the session may ask.
type scanRequests struct {
	Requested []cleanup.ScanRequest
	CanScan   bool
}

func (u *UI) scanRequests(r *http.Request) (scanRequests, error) {
	var d scanRequests
	if s := u.sessions.get(r); s != nil && s.Write {
		d.CanScan = true
	}
	pending, err := u.cfg.Cleanup.PendingScanRequests(r.Context(), nil)
	if err != nil {
		return d, err
	}
	for _, rs := range pending {
		d.Requested = append(d.Requested, rs...)
	}
	slices.SortFunc(d.Requested, func(a, b cleanup.ScanRequest) int { return a.RequestedAt.Compare(b.RequestedAt) })
	return d, nil
}
