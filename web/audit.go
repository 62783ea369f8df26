package web

// The audit log page.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
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
	Changes []auditChange
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
		row := auditRow{AuditEvent: ev}
		for _, c := range ev.Changes() {
			row.Changes = append(row.Changes, auditChange{Field: c.Field, Before: readableValue(c.Before), After: readableValue(c.After)})
		}
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

// auditChange is a change as the page shows it: each side as lines a person reads.
type auditChange struct {
	Field         string
	Before, After []string
}

// readableValue writes a change's value as lines: a list of records (a schema change's column
// changes) one record a line, "added email (string)"-like; a list of plain values as one line
// "a, b"; a record as "key: value" lines. Anything else is shown as it is. IDs are left out of a
// record's line when it has other fields: they are on the record's own page.
func readableValue(v string) []string {
	if v == "" {
		return nil
	}
	var x any
	if (v[0] != '[' && v[0] != '{') || json.Unmarshal([]byte(v), &x) != nil {
		return []string{v}
	}
	switch t := x.(type) {
	case []any:
		var plain []string
		var lines []string
		for _, e := range t {
			if m, ok := e.(map[string]any); ok {
				lines = append(lines, recordLine(m))
			} else {
				plain = append(plain, scalar(e))
			}
		}
		if len(plain) > 0 {
			lines = append(lines, strings.Join(plain, ", "))
		}
		return lines
	case map[string]any:
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(t)) {
			lines = append(lines, strings.ReplaceAll(k, "_", " ")+": "+scalar(t[k]))
		}
		return lines
	}
	return []string{v}
}

// recordLine says one record of a list: its op (what happened) first, then its path or name,
// then its other fields as "key value".
func recordLine(m map[string]any) string {
	var parts []string
	for _, k := range []string{"op", "path", "name"} {
		if v, ok := m[k]; ok {
			parts = append(parts, scalar(v))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "op" || k == "path" || k == "name" || k == "id" || strings.HasSuffix(k, "_id") && k != "field_id" {
			continue
		}
		parts = append(parts, strings.ReplaceAll(k, "_", " ")+" "+scalar(m[k]))
	}
	if len(parts) == 0 { // only IDs: show them
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, k+" "+scalar(m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// scalar writes a JSON value without quotes; a nested value stays compact JSON.
func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return "none"
	case float64, bool:
		return fmt.Sprint(t)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
