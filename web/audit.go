package web

// The audit log page.

import (
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

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
