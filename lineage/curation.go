package lineage

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

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
			out = append(out, catalog.ColumnInput{Path: path, Type: shorten(fd.Type, catalog.MaxColumnTypeLen),
				Doc: shorten(fd.Description, catalog.MaxDescription)})
			walk(path+".", fd.Fields)
		}
	}
	walk("", f.Fields)
	return out
}

// shorten cuts s to at most n bytes on a rune boundary.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
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
// this batch changed, in asset ID order (one lock order for every batch). Within an asset the
// schema comes first, so tags on columns find their columns; a changed schema syncs the tags
// again (a tag on a re-added column, or on one that left, follows the columns). Several changes
// of one asset in a batch are recorded as one, from the newest value. Facets the catalog refuses
// (a schema with an unusable field name or too many columns) are reported as warnings of the
// event that set them; the event is stored all the same.
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
	for _, id := range ids {
		fs := b.facets[id]
		schemaChanged := false
		if res, ok := b.schemas[id]; ok {
			changed, err := b.syncSchema(ctx, id, fs[schemaFacetName].Value, res)
			if err != nil {
				return err
			}
			schemaChanged = changed
		}
		res, ok := b.tags[id]
		if !ok && schemaChanged && fs[tagsFacetName] != nil {
			res, ok = b.schemas[id], true
		}
		if ok {
			if err := b.syncTags(ctx, id, fs[tagsFacetName].Value, res); err != nil {
				return err
			}
		}
	}
	return nil
}

// syncSchema records an asset's columns from its schema facet; it reports whether they changed.
func (b *batch) syncSchema(ctx context.Context, id uuid.UUID, value string, res *IngestResult) (bool, error) {
	var f schemaFacet
	if err := json.Unmarshal([]byte(value), &f); err != nil {
		res.Warnings = append(res.Warnings, "schema facet of asset "+id.String()+" not recorded as columns: it is not a SchemaDatasetFacet")
		return false, nil
	}
	cols := schemaColumns(f)
	if len(cols) == 0 {
		// No fields: producers send that when they do not know the schema, not for a table
		// without columns; the columns recorded before stay.
		return false, nil
	}
	changed, err := b.s.cat.SyncColumns(ctx, id, catalog.SchemaInput{Source: catalog.SourceOpenLineage, Columns: cols})
	switch {
	case errors.Is(err, catalog.ErrInvalid):
		res.Warnings = append(res.Warnings, "schema facet of asset "+id.String()+" not recorded as columns: "+err.Error())
		return false, nil
	case errors.Is(err, catalog.ErrConflict):
		// Deleted (dropped by this batch): nothing to record columns on.
		b.s.log.Debug("lineage: columns not recorded", "asset_id", id, "err", err)
		return false, nil
	}
	return changed, err
}

// syncTags makes the asset's OpenLineage tags those of its tags facet; tags the catalog refuses
// (not a valid tag, a classification value it does not list, a column the asset does not have)
// are skipped and logged.
func (b *batch) syncTags(ctx context.Context, id uuid.UUID, value string, res *IngestResult) error {
	var f tagsFacet
	if err := json.Unmarshal([]byte(value), &f); err != nil {
		// Not the facet the spec describes: keep the tags recorded before rather than clear them.
		res.Warnings = append(res.Warnings, "tags facet of asset "+id.String()+" not applied: it is not a TagsDatasetFacet")
		return nil
	}
	skipped, err := b.s.cat.SyncSourceTags(ctx, id, catalog.SourceOpenLineage, sourceTags(f))
	if errors.Is(err, catalog.ErrConflict) {
		b.s.log.Debug("lineage: tags not recorded", "asset_id", id, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		b.s.log.Debug("lineage: source tags skipped", "asset_id", id, "skipped", skipped)
	}
	return nil
}
