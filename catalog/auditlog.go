package catalog

// The audit log across assets: filters, and each change as a diff a person can read.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/auditevent"
)

// AuditFilter selects audit events, newest first.
type AuditFilter struct {
	Actor string // exact, e.g. "web:alice" or "token:ci"
	// Action is exact ("asset.rename"), or without a dot the family ("proposal" matches
	// proposal.approve, proposal.cancel, ...).
	Action  string
	AssetID uuid.UUID // uuid.Nil: any
	Before  uuid.UUID // a cursor: events older than this one
	Limit   int
}

// AuditEvents lists audit events across assets, newest first, filtered.
func (c *Catalog) AuditEvents(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	q := c.client(ctx).AuditEvent.Query().Order(ent.Desc(auditevent.FieldID))
	if f.Limit > 0 {
		q = q.Limit(f.Limit)
	}
	if f.Before != uuid.Nil {
		q = q.Where(auditevent.IDLT(f.Before))
	}
	if f.Actor != "" {
		q = q.Where(auditevent.Actor(f.Actor))
	}
	switch {
	case f.Action == "":
	case strings.Contains(f.Action, "."):
		q = q.Where(auditevent.Action(f.Action))
	default:
		q = q.Where(auditevent.ActionHasPrefix(f.Action + "."))
	}
	if f.AssetID != uuid.Nil {
		q = q.Where(auditevent.AssetID(f.AssetID))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: audit log: %w", err)
	}
	out := make([]AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = AuditEvent{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, AssetID: r.AssetID,
			Before: r.Before, After: r.After, RequestID: r.RequestID}
	}
	return out, nil
}

// AuditLog returns the whole audit trail, newest first, before the event ID before (zero for
// the newest).
func (c *Catalog) AuditLog(ctx context.Context, before uuid.UUID, limit int) ([]AuditEvent, error) {
	return c.AuditEvents(ctx, AuditFilter{Before: before, Limit: limit})
}

// AuditChange is one field an audited change touched: its value before and after, as compact
// JSON ("" when the field was absent on that side).
type AuditChange struct {
	Field  string `json:"field"`
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Changes is the event as a diff: the fields (nested objects as dotted paths) whose values
// differ between before and after, sorted by field. A field the same on both sides is left
// out, and so is an empty one; an event with only an after (a creation, a decision) lists what
// it recorded.
func (e AuditEvent) Changes() []AuditChange {
	before, after := map[string]string{}, map[string]string{}
	flatten("", e.Before, before)
	flatten("", e.After, after)
	var out []AuditChange
	// An empty value reads as no value: a created asset's empty description is no change.
	for k, a := range after {
		if before[k] != a {
			out = append(out, AuditChange{Field: k, Before: before[k], After: a})
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok && b != "" {
			out = append(out, AuditChange{Field: k, Before: b})
		}
	}
	slices.SortFunc(out, func(x, y AuditChange) int { return strings.Compare(x.Field, y.Field) })
	return out
}

// flatten writes a JSON document's leaves into out under dotted paths; arrays and scalars are
// leaves (compact JSON), so a changed list reads as one before -> after.
func flatten(prefix string, raw json.RawMessage, out map[string]string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	var obj map[string]json.RawMessage
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		for k, v := range obj {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, v, out)
		}
		return
	}
	if prefix == "" {
		prefix = "value"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		out[prefix] = string(raw)
		return
	}
	s := buf.String()
	var str string
	if raw[0] == '"' && json.Unmarshal(raw, &str) == nil {
		s = str // strings read better without their quotes
	}
	out[prefix] = s
}
