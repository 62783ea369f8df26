package web

// Scan reports: the list, with the scans people asked for, and one report.

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
)

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
