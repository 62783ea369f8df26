package catalog_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// TestRecordSources: one call records many assets' schemas and tags (tags on the columns the
// schema adds); refused reports (a deleted asset, an unknown one, an invalid schema) leave their
// assets alone and do not stop the others; a changed asset moves one version with an audit event
// per kind of change, an unchanged one keeps its version; a person's tags are never touched.
func TestRecordSources(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		if err := e.cat.EnsureClassifications(ctx); err != nil {
			t.Fatal(err)
		}
		a, b := e.create(t, "lake", "a"), e.create(t, "lake", "b")
		gone := e.create(t, "lake", "gone")
		if _, err := e.cat.Delete(ctx, gone.ID, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.AddLabel(ctx, b.ID, catalog.AnyVersion, catalog.LabelInput{Kind: catalog.LabelTag, Value: "finance"}); err != nil {
			t.Fatal(err)
		}
		schema := &catalog.SchemaInput{Columns: []catalog.ColumnInput{{Path: "id", Type: "long"}, {Path: "email", Type: "string"}}}
		tags := []catalog.SourceTag{{Column: "email", Tag: "pii.email"}, {Tag: "tier.gold"}, {Tag: "pii.ssn"}, {Column: "nope", Tag: "x"}}
		bad := &catalog.SchemaInput{Columns: []catalog.ColumnInput{{Path: "id"}, {Path: "id"}}}
		before := e.version(t, a.ID)
		out, err := e.cat.RecordSources(ctx, catalog.SourceOpenLineage, []catalog.SourceReport{
			{AssetID: a.ID, Schema: schema, Tags: tags, SyncTags: true},
			{AssetID: b.ID, Schema: bad, SyncTags: true, Tags: []catalog.SourceTag{{Tag: "x"}}},
			{AssetID: gone.ID, Schema: schema},
			{AssetID: uuid.Must(uuid.NewV7()), Schema: schema},
		})
		if err != nil {
			t.Fatal(err)
		}
		if o := out[0]; o.Err != nil || !o.ColumnsChanged || !o.TagsChanged || len(o.Skipped) != 2 {
			t.Fatalf("a: %+v", o)
		}
		for i, want := range []error{catalog.ErrInvalid, catalog.ErrConflict, catalog.ErrNotFound} {
			if o := out[i+1]; !errors.Is(o.Err, want) || o.ColumnsChanged || o.TagsChanged {
				t.Errorf("report %d: %+v; want refused with %v", i+1, o, want)
			}
		}
		if got := e.version(t, a.ID); got != before+1 {
			t.Fatalf("a at version %d, want %d", got, before+1)
		}
		if got := e.auditActions(t, a.ID); !slices.Equal(got[len(got)-2:], []string{catalog.ActionSchemaChange, catalog.ActionLabelAdd}) {
			t.Fatalf("a's audit trail %v", got)
		}
		if got := e.tagsOf(t, a.ID); !slices.Equal(got, []string{":tier.gold@openlineage", "email:pii.email@openlineage"}) {
			t.Fatalf("a's tags %v", got)
		}
		if got := e.tagsOf(t, b.ID); !slices.Equal(got, []string{":finance@person"}) {
			t.Fatalf("b's tags after a refused report %v", got)
		}

		// The same again: nothing changes, no version, no audit event.
		vb, nb := e.version(t, a.ID), len(e.auditActions(t, a.ID))
		out, err = e.cat.RecordSources(ctx, catalog.SourceOpenLineage, []catalog.SourceReport{{AssetID: a.ID, Schema: schema, Tags: tags, SyncTags: true},
			{AssetID: b.ID, Tags: []catalog.SourceTag{{Tag: "finance"}}, SyncTags: true}})
		if err != nil || out[0].ColumnsChanged || out[0].TagsChanged || out[1].TagsChanged {
			t.Fatalf("again: %+v %v", out, err)
		}
		if e.version(t, a.ID) != vb || len(e.auditActions(t, a.ID)) != nb {
			t.Fatal("an unchanged report left a trace")
		}
		// The source's tags go; the person's finance on b stays (and was not added twice).
		if _, err := e.cat.RecordSources(ctx, catalog.SourceOpenLineage, []catalog.SourceReport{{AssetID: a.ID, SyncTags: true},
			{AssetID: b.ID, SyncTags: true}}); err != nil {
			t.Fatal(err)
		}
		if got := e.tagsOf(t, a.ID); len(got) != 0 {
			t.Fatalf("a's tags after an empty report %v", got)
		}
		if got := e.tagsOf(t, b.ID); !slices.Equal(got, []string{":finance@person"}) {
			t.Fatalf("b's tags %v", got)
		}
	})
}

func (e env) version(t *testing.T, id uuid.UUID) int64 {
	t.Helper()
	a, err := e.cat.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a.Version
}

// tagsOf lists current tags as "column:tag@source", sorted.
func (e env) tagsOf(t *testing.T, id uuid.UUID) []string {
	t.Helper()
	ls, err := e.cat.Labels(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Column+":"+l.Value+"@"+string(l.Source))
	}
	slices.Sort(out)
	return out
}
