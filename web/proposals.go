package web

// Cleanup proposals: the list, one proposal with its files (a page at a time, or all of them
// as CSV or JSON), and deciding on it (an approval through its confirm step).

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/tables"
)

// queuePerPage is how many proposals the queue shows at once.
const queuePerPage = 100

type proposalsData struct {
	State, Kind, Sort, Order string
	Rows                     []queueRow
	Totals                   cleanup.QueueTotals
	// Page is the page shown (from 1); Prev and Next link the neighbours ("" when none).
	Page       int
	Prev, Next string
	PerGB      float64 // the storage price the costs use
	Max        int     // how many proposals one decision over a selection may cover
	Selectable bool    // an admin is signed in: open rows have a checkbox
}

// proposals is the queue: the proposals a filter matches, sorted by a column and paged, with
// the totals over every match (not just the page), and for an admin a selection to decide.
func (u *UI) proposals(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := proposalsData{State: q.Get("state"), Kind: q.Get("kind"), Sort: q.Get("sort"), Order: q.Get("order"), Page: 1,
		PerGB: u.cfg.Cleanup.StorageGBMonth(), Max: cleanup.MaxSelection}
	if _, ok := q["state"]; !ok {
		d.State = "open"
	}
	if err := cleanup.CheckQueueSort(d.Sort, d.Order); err != nil {
		u.fail(w, r, err)
		return
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "page", Message: fmt.Sprintf("page %q is not a page number (1, 2, ...)", v)})
			return
		}
		d.Page = n
	}
	ctx := r.Context()
	rows, more, err := u.cfg.Cleanup.Queue(ctx, cleanup.QueueQuery{State: d.State, Kind: d.Kind, Sort: d.Sort, Order: d.Order,
		Offset: (d.Page - 1) * queuePerPage, Limit: queuePerPage})
	if err == nil {
		d.Totals, err = u.cfg.Cleanup.QueueTotals(ctx, d.State, d.Kind)
	}
	if err == nil {
		d.Rows, err = u.queueRows(r, rows)
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	page := func(n int) string {
		v := url.Values{"state": {d.State}, "kind": {d.Kind}, "page": {strconv.Itoa(n)}}
		if d.Sort != "" {
			v.Set("sort", d.Sort)
		}
		if d.Order != "" {
			v.Set("order", d.Order)
		}
		return "/proposals?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = page(d.Page - 1)
	}
	if more {
		d.Next = page(d.Page + 1)
	}
	if s := u.sessions.get(r); s != nil && s.Admin {
		d.Selectable = true
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
