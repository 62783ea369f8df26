package catalog

// Per-field conflicts. Every change to an asset bumps its one version, so an edit made against
// version N would be refused by any change since, even of an unrelated column. Instead, an edit
// names what it depends on (fields), and when the asset has moved past N the audit log (every
// asset change records the version it produced) says what the changes since N touched: the edit
// is refused only when one of them touched something it depends on, and otherwise goes ahead at
// the current version.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/auditevent"
)

// maxFieldCheck bounds how many versions behind an edit may be and still be checked field by
// field (each version is one or two audit events to read); further behind, it is refused whole.
const maxFieldCheck = 200

// field is one thing an edit depends on and a change touches.
type field struct {
	What   string // description, status, name, owner, label, column, column-description, suggestion; "*" anything
	Column string // a column's path; "" for the asset itself; "*" any column
	Value  string // an owner's principal; a label's kind:value; a suggestion's tag
}

// covers reports whether a change touching f touches what an edit depending on g read.
func (f field) covers(g field) bool {
	return f.What == "*" || f.What == g.What && (f.Column == g.Column || f.Column == "*") && f.Value == g.Value
}

// String names the field for a person.
func (f field) String() string {
	of := ""
	if f.Column != "" && f.Column != "*" {
		of = " of column " + f.Column
	}
	switch f.What {
	case "description", "status", "name":
		return "its " + f.What
	case "owner":
		return "owner " + f.Value
	case "label":
		return strings.Replace(f.Value, ":", " ", 1) + of
	case "column":
		return "column " + f.Column
	case "column-description":
		return "the description" + of
	case "suggestion":
		return "the suggestion " + f.Value + of
	}
	return "it"
}

// dependsOn returns what an edit depends on, read in its transaction. A nil dependsOn means the
// whole asset: any change since the version the caller saw refuses the edit.
type dependsOn func(ctx context.Context, client *ent.Client) ([]field, error)

func fields(fs ...field) dependsOn {
	return func(context.Context, *ent.Client) ([]field, error) { return fs, nil }
}

// columnFields is what an edit of one of the asset's current columns depends on: the column
// itself (renamed or dropped since), and the fields of it that fs name.
func columnFields(id, columnID uuid.UUID, fs ...field) dependsOn {
	if columnID == uuid.Nil {
		return fields(fs...)
	}
	return func(ctx context.Context, client *ent.Client) ([]field, error) {
		col, err := currentColumn(ctx, client, id, columnID)
		if err != nil {
			return nil, err
		}
		out := []field{{What: "column", Column: col.Path}}
		for _, f := range fs {
			f.Column = col.Path
			out = append(out, f)
		}
		return out, nil
	}
}

func labelField(kind LabelKind, value string) field {
	return field{What: "label", Value: string(kind) + ":" + value}
}

// change is what one audited change since a version touched.
type change struct {
	Version int64
	Actor   string
	At      time.Time
	Fields  []field
}

// checkSince lets an edit made at version seen go ahead on the asset now at cur, or refuses it
// (ErrStaleVersion) naming the change that touched what it depends on.
func checkSince(ctx context.Context, client *ent.Client, cur Asset, seen int64, deps dependsOn) error {
	if deps == nil || seen > cur.Version || cur.Version-seen > maxFieldCheck {
		return staleVersion(cur.ID, seen, cur.Version)
	}
	want, err := deps(ctx, client)
	if err != nil {
		return err
	}
	changes, err := changesSince(ctx, client, cur.ID, seen, cur.Version)
	if err != nil {
		return err
	}
	if changes == nil { // the log does not say (changes from before versions were recorded)
		return staleVersion(cur.ID, seen, cur.Version)
	}
	for _, ch := range changes {
		for _, f := range ch.Fields {
			for _, w := range want {
				if f.covers(w) {
					return &Error{Kind: ErrStaleVersion, Field: "If-Match", Message: fmt.Sprintf(
						"asset %s is at version %d, not %d: %s changed since you read it (version %d, by %s at %s); read it again and retry",
						cur.ID, cur.Version, seen, w, ch.Version, ch.Actor, ch.At.Format(time.RFC3339))}
				}
			}
		}
	}
	return nil
}

// changesSince reads what the changes after version seen, up to cur, touched, newest first; nil
// when the audit log does not account for every one of those versions.
func changesSince(ctx context.Context, client *ent.Client, id uuid.UUID, seen, cur int64) ([]change, error) {
	const page = 100
	missing := map[int64]bool{}
	for v := seen + 1; v <= cur; v++ {
		missing[v] = true
	}
	var out []change
	before := uuid.Nil
	// Events are read newest first until every version is accounted for; events of other kinds
	// (cleanup decisions) sit between them, so the reads are bounded by pages, not by versions.
	for pages := 0; len(missing) > 0 && pages < 2*maxFieldCheck/page+5; pages++ {
		q := client.AuditEvent.Query().Where(auditevent.AssetID(id)).Order(ent.Desc(auditevent.FieldID)).Limit(page)
		if before != uuid.Nil {
			q.Where(auditevent.IDLT(before))
		}
		rows, err := q.All(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: changes of %s since version %d: %w", id, seen, err)
		}
		for _, r := range rows {
			v, ok := eventVersion(r)
			if !ok || v <= seen || v > cur {
				continue
			}
			delete(missing, v)
			out = append(out, change{Version: v, Actor: r.Actor, At: r.At.UTC(), Fields: touched(r)})
		}
		if len(rows) < page {
			break
		}
		before = rows[len(rows)-1].ID
	}
	if len(missing) > 0 {
		return nil, nil
	}
	return out, nil
}

// versioning are the audit actions of changes that bump an asset's version.
var versioning = []string{ActionCreate, ActionRename, ActionUpdate, ActionDelete, ActionRestore, ActionOwnerSet,
	ActionOwnerRemove, ActionBindID, ActionLabelAdd, ActionLabelRemove, ActionColumnDescribe, ActionSchemaChange,
	ActionSuggestionReject}

// eventVersion is the asset version an audit event's change produced.
func eventVersion(r *ent.AuditEvent) (int64, bool) {
	if !slices.Contains(versioning, r.Action) {
		return 0, false
	}
	var v struct {
		Version *int64 `json:"version"`
	}
	if json.Unmarshal(r.After, &v) != nil || v.Version == nil {
		return 0, false
	}
	return *v.Version, true
}

// touched says which fields an audited change touched; what it cannot tell is "*".
func touched(r *ent.AuditEvent) []field {
	switch r.Action {
	case ActionUpdate:
		var b, a struct{ Description, Status string }
		if json.Unmarshal(r.Before, &b) != nil || json.Unmarshal(r.After, &a) != nil {
			break
		}
		var out []field
		if a.Description != b.Description {
			out = append(out, field{What: "description"})
		}
		if a.Status != b.Status {
			out = append(out, field{What: "status"})
		}
		return out
	case ActionRename:
		return []field{{What: "name"}}
	case ActionDelete, ActionRestore:
		return []field{{What: "status"}, {What: "name"}}
	case ActionOwnerSet, ActionOwnerRemove:
		var b, a struct{ Owners []Owner }
		if json.Unmarshal(r.Before, &b) != nil || json.Unmarshal(r.After, &a) != nil {
			break
		}
		return ownerFields(b.Owners, a.Owners)
	case ActionBindID:
		return []field{{What: "external_id"}}
	case ActionLabelAdd, ActionLabelRemove, ActionColumnDescribe, ActionSchemaChange, ActionSuggestionReject:
		if fs, ok := notedFields(r); ok {
			return fs
		}
	}
	return []field{{What: "*"}}
}

// ownerFields are the principals whose ownership differs between two owner lists.
func ownerFields(before, after []Owner) []field {
	key := func(o Owner) string { return string(o.Kind) + "/" + o.Role }
	b := map[string]string{}
	for _, o := range before {
		b[o.Principal] = key(o)
	}
	var out []field
	for _, o := range after {
		if k, ok := b[o.Principal]; !ok || k != key(o) {
			out = append(out, field{What: "owner", Value: o.Principal})
		}
		delete(b, o.Principal)
	}
	for p := range b {
		out = append(out, field{What: "owner", Value: p})
	}
	return out
}

// notedFields reads the fields of a change that described itself (a label, a column's
// description, a schema change, a source's tags, a rejected suggestion).
func notedFields(r *ent.AuditEvent) ([]field, bool) {
	var n struct {
		Column, Kind, Value, Tag, Description string
		Added, Removed                        []string
		Changes                               []ColumnChange
		ColumnsUpdated                        *int `json:"columns_updated"`
	}
	side := r.After
	if r.Action == ActionLabelRemove {
		side = r.Before
	}
	if json.Unmarshal(side, &n) != nil {
		return nil, false
	}
	switch r.Action {
	case ActionColumnDescribe:
		return []field{{What: "column-description", Column: n.Column}}, n.Column != ""
	case ActionSuggestionReject:
		return []field{{What: "suggestion", Column: n.Column, Value: n.Tag}}, n.Tag != ""
	case ActionSchemaChange:
		var out []field
		for _, c := range n.Changes {
			if c.Op == "renamed" || c.Op == "removed" {
				out = append(out, field{What: "column", Column: c.Path})
				if c.OldPath != "" {
					out = append(out, field{What: "column", Column: c.OldPath})
				}
			}
		}
		return out, n.Changes != nil || n.ColumnsUpdated != nil
	}
	if n.Kind != "" { // a person's label (or an accepted suggestion)
		return []field{{What: "label", Column: n.Column, Value: n.Kind + ":" + n.Value}}, true
	}
	if n.Added == nil && n.Removed == nil {
		return nil, false
	}
	// A source's tags: the note names the tags, not their columns.
	var out []field
	for _, t := range append(n.Added, n.Removed...) {
		out = append(out, field{What: "label", Column: "*", Value: string(LabelTag) + ":" + t})
	}
	return out, true
}

// versioned adds the asset version a change produced to the audit note of a change that
// describes itself, so changesSince can tell which changes came after a version.
func versioned(note any, version int64) (any, error) {
	out := map[string]any{}
	if note != nil {
		b, err := json.Marshal(note)
		if err != nil {
			return nil, fmt.Errorf("catalog: audit note: %w", err)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			out = map[string]any{"value": note}
		}
	}
	out["version"] = version
	return out, nil
}
