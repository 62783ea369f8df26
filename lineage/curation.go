package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// Dataset facets that feed the catalog's curation records: columns and source tags.
const (
	schemaFacetName = "schema"
	tagsFacetName   = "tags"
)

// schemaFacet is OpenLineage's SchemaDatasetFacet: fields in order, struct (and list or map)
// members nested under their parent.
type schemaFacet struct {
	Fields []schemaField `json:"fields"`
}

type schemaField struct {
	Name        string        `json:"name"`
	Type        string        `json:"type"`
	Description string        `json:"description"`
	Fields      []schemaField `json:"fields"`
}

// tagsFacet is OpenLineage's TagsDatasetFacet.
type tagsFacet struct {
	Tags []struct {
		Key string `json:"key"`
		// Value is a string in the spec; producers also send true or 3, which count as written.
		Value json.RawMessage `json:"value"`
		Field string          `json:"field"`
	} `json:"tags"`
}

// schemaColumns flattens a schema facet into the catalog's columns, in the facet's order (a
// parent before its members): nested fields are dotted paths (address.city), as column lineage
// names them. Fields without a name are left out, with their members; a path seen before keeps
// its first field. Types and docs too long for the catalog are shortened rather than losing the
// whole schema.
func schemaColumns(f schemaFacet) []catalog.ColumnInput {
	var out []catalog.ColumnInput
	seen := map[string]bool{}
	var walk func(prefix string, fields []schemaField)
	walk = func(prefix string, fields []schemaField) {
		for _, fd := range fields {
			if strings.TrimSpace(fd.Name) == "" {
				continue
			}
			path := prefix + fd.Name
			if seen[path] {
				continue
			}
			seen[path] = true
			out = append(out, catalog.ColumnInput{Path: path, Type: catalog.Shorten(fd.Type, catalog.MaxColumnTypeLen),
				Doc: catalog.Shorten(fd.Description, catalog.MaxDescription)})
			walk(path+".", fd.Fields)
		}
	}
	walk("", f.Fields)
	return out
}

// sourceTags maps a tags facet to catalog tags (see Tag). An entry's field names the column.
func sourceTags(f tagsFacet) []catalog.SourceTag {
	out := make([]catalog.SourceTag, 0, len(f.Tags))
	for _, t := range f.Tags {
		out = append(out, catalog.SourceTag{Column: t.Field, Tag: Tag(t.Key, rawText(t.Value))})
	}
	return out
}

// rawText is a JSON value as text: a string's contents, anything else as written (true, 3).
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if raw = bytes.TrimSpace(raw); string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// Tag maps an OpenLineage tag (key, value) to a Tidemark tag: both parts are trimmed and
// lower-cased, and every character outside [a-z0-9_-] becomes '_' (so a dot inside a key or
// value never makes a segment of its own); the tag is the key alone when the value is empty or
// "true" (a flag such as {"key":"pii","value":"true"}), else key.value ({"key":"PII",
// "value":"Email"} is pii.email). The result may still be refused by the catalog (an empty key,
// a classification value it does not list); such tags are skipped, not the event.
func Tag(key, value string) string {
	k, v := tagPart(key), tagPart(value)
	if v == "" || v == "true" {
		return k
	}
	return k + "." + v
}

func tagPart(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// curationChanged notes that this event changed an asset's schema or tags facet: the catalog
// records them once per asset at the end of the batch (syncCuration), from the facet's latest
// value, so an asset pays for it only in batches that change it.
func (a *applier) curationChanged(id uuid.UUID, name string) {
	switch name {
	case schemaFacetName:
		a.schemas[id] = a.res
	case tagsFacetName:
		a.tags[id] = a.res
	}
}

// syncCuration records the columns and OpenLineage tags of the assets whose schema or tags facet
// this batch changed, from the facets' latest values, in one catalog call for the whole batch
// (RecordSources: a fixed number of statements, not a few dozen per asset). Within an asset the
// schema comes first, so tags on columns find their columns; a changed schema brings the stored
// tags along (a tag on a column that left is closed, one on a column that came back reopened).
// Several changes of one asset in a batch are recorded as one, from the newest value. A schema
// the catalog refuses (an unusable field name, too many columns) is a warning of the event that
// set it; the event is stored all the same, and so are the asset's tags.
func (b *batch) syncCuration(ctx context.Context) error {
	if len(b.schemas) == 0 && len(b.tags) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, 0, len(b.schemas)+len(b.tags))
	for id := range b.schemas {
		ids = append(ids, id)
	}
	for id := range b.tags {
		if _, ok := b.schemas[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return bytes.Compare(x[:], y[:]) })
	reports := make([]catalog.SourceReport, 0, len(ids))
	for _, id := range ids {
		r := catalog.SourceReport{AssetID: id}
		fs := b.facets[id]
		if res, ok := b.schemas[id]; ok {
			r.Schema = schemaInput(id, fs[schemaFacetName].Value, res)
		}
		if f := fs[tagsFacetName]; f != nil && (b.tags[id] != nil || r.Schema != nil) {
			r.Tags, r.SyncTags = tagsInput(id, f.Value, b.result(id))
		}
		if r.Schema != nil || r.SyncTags {
			reports = append(reports, r)
		}
	}
	out, err := b.s.cat.RecordSources(ctx, catalog.SourceOpenLineage, reports)
	if err != nil {
		return err
	}
	var again []catalog.SourceReport // tags of assets whose schema was refused
	for i, o := range out {
		r := reports[i]
		switch {
		case errors.Is(o.Err, catalog.ErrInvalid) && r.Schema != nil:
			res := b.schemas[r.AssetID]
			res.Warnings = append(res.Warnings, "schema facet of asset "+r.AssetID.String()+" not recorded as columns: "+o.Err.Error())
			if r.SyncTags {
				r.Schema = nil
				again = append(again, r)
			}
		case o.Err != nil:
			// Deleted (dropped by this batch): nothing to record on.
			b.s.log.Debug("lineage: columns and tags not recorded", "asset_id", r.AssetID, "err", o.Err)
		}
		if len(o.Skipped) > 0 {
			b.s.log.Debug("lineage: source tags skipped", "asset_id", r.AssetID, "skipped", o.Skipped)
		}
	}
	if len(again) == 0 {
		return nil
	}
	out, err = b.s.cat.RecordSources(ctx, catalog.SourceOpenLineage, again)
	for i, o := range out {
		if len(o.Skipped) > 0 || o.Err != nil {
			b.s.log.Debug("lineage: source tags skipped", "asset_id", again[i].AssetID, "skipped", o.Skipped, "err", o.Err)
		}
	}
	return err
}

// result is the event that last changed the asset's tags, else its schema.
func (b *batch) result(id uuid.UUID) *IngestResult {
	if res := b.tags[id]; res != nil {
		return res
	}
	return b.schemas[id]
}

// schemaInput reads a stored schema facet as the catalog's schema; nil when it has no fields
// (producers send that when they do not know the schema, not for a table without columns: the
// columns recorded before stay) or is not a SchemaDatasetFacet (a warning).
func schemaInput(id uuid.UUID, value string, res *IngestResult) *catalog.SchemaInput {
	var f schemaFacet
	if err := json.Unmarshal([]byte(value), &f); err != nil {
		res.Warnings = append(res.Warnings, "schema facet of asset "+id.String()+" not recorded as columns: it is not a SchemaDatasetFacet")
		return nil
	}
	cols := schemaColumns(f)
	if len(cols) == 0 {
		return nil
	}
	return &catalog.SchemaInput{Source: catalog.SourceOpenLineage, Columns: cols}
}

// tagsInput reads a stored tags facet as the catalog's source tags; false when it is not a
// TagsDatasetFacet (a warning): the tags recorded before stay rather than being cleared.
func tagsInput(id uuid.UUID, value string, res *IngestResult) ([]catalog.SourceTag, bool) {
	var f tagsFacet
	if err := json.Unmarshal([]byte(value), &f); err != nil {
		res.Warnings = append(res.Warnings, "tags facet of asset "+id.String()+" not applied: it is not a TagsDatasetFacet")
		return nil, false
	}
	return sourceTags(f), true
}
