package web

// The proposal queue's decision over a selection: the confirm step that lists the selected
// proposals with their totals, and the decision, which needs those totals typed.

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/internal/words"
)

func init() {
	for k, v := range queueFuncs {
		funcs[k] = v
	}
	flashes["selection-decided"] = "Decision recorded for every selected proposal"
}

var queueFuncs = template.FuncMap{
	"sortLink": sortLink,
	"sortMark": sortMark,
	// price is a unit price with the digits it has ("$0.023"), not rounded to cents.
	"price": func(f float64) string { return "$" + strconv.FormatFloat(f, 'f', -1, 64) },
	// cost is an amount in dollars; a positive one under a cent says so rather than "$0.00".
	"cost": func(f float64) string {
		if f > 0 && f < 0.005 {
			return "under $0.01"
		}
		return fmt.Sprintf("$%.2f", f)
	},
}

// queueRoutes registers the decision over a selection. Both are POSTs of two segments, so
// neither collides with a single proposal's "POST /proposals/{id}/{decision}".
func (u *UI) queueRoutes() {
	u.handleFunc("POST /proposals/selection", u.selection)
	u.handleFunc("POST /proposals/decisions", u.decideSelection)
}

// queueRow is a row of the queue as the page shows it.
type queueRow struct {
	cleanup.QueueRow
	Name   string
	Oldest string // the oldest listed file's age in words; "" without a list
	Brief  string // the evidence in one line; the proposal's page has all of it
}

// brief says a proposal's evidence in one line.
func brief(r cleanup.QueueRow, now time.Time) string {
	ev := r.Evidence
	switch r.Kind {
	case cleanup.KindOrphanFiles:
		s := words.Count(r.Files, "file") + " referenced by no snapshot"
		if len(ev.Scans) > 0 {
			s += ", confirmed by " + words.Count(int64(len(ev.Scans)), "scan")
		}
		if r.OldestFile != nil {
			s += ", the oldest unchanged for " + age(now, *r.OldestFile)
		}
		return s
	case cleanup.KindPurge:
		return words.Count(r.Files, "file") + " of a table dropped with purge requested"
	case cleanup.KindExpireSnapshots:
		return words.Count(int64(len(ev.Snapshots)), "snapshot") + " to expire, " + words.Count(r.Files, "file") + " only they reference"
	case cleanup.KindUnusedAsset:
		s := "no reads"
		if ev.Window != "" {
			s += " for " + durationText(ev.Window)
		}
		if ev.LastRead != nil {
			return s + ", last read " + age(now, *ev.LastRead) + " ago"
		}
		return s + ", never read"
	case cleanup.KindDangling:
		return words.Count(ev.DanglingCount, "referenced file") + " missing from storage"
	case cleanup.KindSharedLocation:
		return words.Count(int64(len(ev.Foreign)), "other table") + " in the same location"
	}
	return ev.Summary
}

// age says how long ago t was in words, to the hour past a day and to the minute below: a
// queue compares ages, and seconds are noise there.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d >= 24*time.Hour:
		d = d.Truncate(time.Hour)
	case d >= time.Minute:
		d = d.Truncate(time.Minute)
	}
	return words.Duration(d)
}

// durationText says a Go duration string in words (as it is when it does not parse).
func durationText(d string) string {
	if v, err := time.ParseDuration(d); err == nil {
		return words.Duration(v)
	}
	return d
}

// queueRows labels rows for the page: the asset's name, the oldest file's age, the brief.
func (u *UI) queueRows(r *http.Request, rows []cleanup.QueueRow) ([]queueRow, error) {
	ids := make([]uuid.UUID, len(rows))
	for i, p := range rows {
		ids[i] = p.AssetID
	}
	names, err := u.names(r, ids, true)
	if err != nil {
		return nil, err
	}
	now := u.cfg.Now()
	out := make([]queueRow, len(rows))
	for i, p := range rows {
		out[i] = queueRow{QueueRow: p, Name: names[p.AssetID], Brief: brief(p, now)}
		if p.OldestFile != nil {
			out[i].Oldest = age(now, *p.OldestFile)
		}
	}
	return out, nil
}

type selectionData struct {
	Rows   []queueRow
	Totals cleanup.QueueTotals
	// Decidable: every selected proposal is still open, so the form is shown.
	Decidable  bool
	Max        int
	StopWindow time.Duration
	PerGB      float64
	Error      string
	// What the person typed, shown again with the error.
	Files, Bytes, Reason string
}

// adminPost is the session of a signed-in admin posting the page's own form, or nil after
// answering 403.
func (u *UI) adminPost(w http.ResponseWriter, r *http.Request) *session {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	s := u.sessions.get(r)
	if s == nil || !u.checkCSRF(r, s) {
		http.Error(w, "forbidden: sign in, and use the page's own form", http.StatusForbidden)
		return nil
	}
	if !s.Admin {
		http.Error(w, "forbidden: deciding on proposals needs a token with the admin scope", http.StatusForbidden)
		return nil
	}
	return s
}

// selectedIDs are the form's selected proposals, in the order the page listed them.
func selectedIDs(form url.Values) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	for _, v := range form["id"] {
		id, err := uuid.Parse(v)
		if err != nil {
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "id", Message: "that is not a proposal ID"}
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// selection is the confirm step: the selected proposals, read afresh, with their totals.
func (u *UI) selection(w http.ResponseWriter, r *http.Request) {
	if u.adminPost(w, r) == nil {
		return
	}
	ids, err := selectedIDs(r.PostForm)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	u.renderSelection(w, r, http.StatusOK, ids, selectionData{})
}

// renderSelection reads the selection afresh and shows the confirm step with d's error and
// typed values.
func (u *UI) renderSelection(w http.ResponseWriter, r *http.Request, status int, ids []uuid.UUID, d selectionData) {
	rows, totals, err := u.cfg.Cleanup.Selected(r.Context(), ids)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	if d.Rows, err = u.queueRows(r, rows); err != nil {
		u.fail(w, r, err)
		return
	}
	d.Totals, d.Max, d.StopWindow, d.PerGB = totals, cleanup.MaxSelection, u.cfg.Cleanup.StopWindow(), u.cfg.Cleanup.StorageGBMonth()
	d.Decidable = true
	for _, row := range rows {
		d.Decidable = d.Decidable && row.State == "open"
	}
	u.render(w, r, status, "bulkdecide", "Decide "+words.Count(totals.Proposals, "selected proposal"), d)
}

// decideSelection decides every selected proposal, approve or reject, when the typed totals are
// the selection's as read now; otherwise the confirm step again, saying what to fix.
func (u *UI) decideSelection(w http.ResponseWriter, r *http.Request) {
	s := u.adminPost(w, r)
	if s == nil {
		return
	}
	ids, err := selectedIDs(r.PostForm)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	typed := selectionData{Files: strings.TrimSpace(r.PostFormValue("confirm_files")), Bytes: strings.TrimSpace(r.PostFormValue("confirm_bytes")),
		Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	d := cleanup.SelectionDecision{IDs: ids, Reason: typed.Reason}
	switch r.PostFormValue("decision") {
	case "approve":
		d.Approve = true
	case "reject":
	default:
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "decision", Message: "decide with approve or reject"})
		return
	}
	for _, v := range r.PostForm["version"] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "version", Message: "that is not a proposal version"})
			return
		}
		d.Versions = append(d.Versions, n)
	}
	var ferr, berr error
	d.Files, ferr = strconv.ParseInt(digits(typed.Files), 10, 64)
	d.Bytes, berr = strconv.ParseInt(digits(typed.Bytes), 10, 64)
	if ferr != nil || berr != nil {
		typed.Error = "Type the total number of files and the total bytes of the selection, as shown, to confirm: nothing was decided."
		u.renderSelection(w, r, http.StatusBadRequest, ids, typed)
		return
	}
	_, err = u.cfg.Cleanup.DecideSelection(catalog.WithActor(r.Context(), s.actor()), d)
	var de *catalog.Error
	if errors.As(err, &de) && errors.Is(err, catalog.ErrInvalid) {
		typed.Error = de.Message
		u.renderSelection(w, r, http.StatusBadRequest, ids, typed)
		return
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/proposals?flash=selection-decided", http.StatusSeeOther)
}

// digits drops the separators a person may type in a large number ("3,003" or "3 003").
func digits(s string) string {
	return strings.NewReplacer(",", "", " ", "", "_", "", "\u00a0", "").Replace(s)
}

// sortLink is a sortable column's header link: the same filter, sorted by the column, the other
// way round when it already sorts by it.
func sortLink(state, kind, by, curSort, curOrder string) string {
	order := "desc"
	if by == curSort && curOrder != "asc" {
		order = "asc"
	}
	return "/proposals?" + url.Values{"state": {state}, "kind": {kind}, "sort": {by}, "order": {order}}.Encode()
}

// sortMark says which way a column sorts now ("" when it does not).
func sortMark(by, curSort, curOrder string) string {
	switch {
	case by != curSort:
		return ""
	case curOrder == "asc":
		return " ▲"
	}
	return " ▼"
}
