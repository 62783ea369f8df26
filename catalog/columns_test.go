package catalog_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/catalog"
)

// TestSyncColumnsRenames: Iceberg columns matched by field ID keep their records through renames,
// also when two columns swap names (each parked on a path no column can have first), on both
// databases; an OpenLineage schema never drops or renames them.
func TestSyncColumnsRenames(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "lake", "orders")
		id := func(n int) *int { return &n }
		schema := func(sid int, cols ...catalog.ColumnInput) catalog.SchemaInput {
			return catalog.SchemaInput{Source: catalog.SourceIceberg, SchemaID: id(sid), Columns: cols}
		}
		if _, err := e.cat.SyncColumns(ctx, a.ID, schema(0, catalog.ColumnInput{FieldID: id(1), Path: "a", Type: "long"},
			catalog.ColumnInput{FieldID: id(2), Path: "b", Type: "string"})); err != nil {
			t.Fatal(err)
		}
		before, err := e.cat.Columns(ctx, a.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		changed, err := e.cat.SyncColumns(ctx, a.ID, schema(1, catalog.ColumnInput{FieldID: id(2), Path: "a", Type: "string"},
			catalog.ColumnInput{FieldID: id(1), Path: "b", Type: "long"}))
		if err != nil || !changed {
			t.Fatalf("swap: changed %v, %v", changed, err)
		}
		after, err := e.cat.Columns(ctx, a.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != 2 || after[0].Path != "a" || after[0].ID != before[1].ID || after[1].Path != "b" || after[1].ID != before[0].ID {
			t.Fatalf("columns after the swap: %+v (before %+v)", after, before)
		}
		hist, err := e.cat.SchemaHistory(ctx, a.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, ch := range hist[0].Changes {
			ops = append(ops, ch.Op+" "+ch.OldPath+">"+ch.Path)
		}
		slices.Sort(ops)
		if want := []string{"renamed a>b", "renamed b>a"}; !slices.Equal(ops, want) {
			t.Fatalf("schema change %v, want %v", ops, want)
		}

		// An OpenLineage schema (no field IDs) lacking b and naming a column c: the Iceberg
		// columns are neither dropped nor renamed by it, a takes its doc, c is added.
		if _, err := e.cat.SyncColumns(ctx, a.ID, catalog.SchemaInput{Source: catalog.SourceOpenLineage, Columns: []catalog.ColumnInput{
			{Path: "a", Doc: "from Spark"}, {Path: "c", Type: "string"}}}); err != nil {
			t.Fatal(err)
		}
		cols, err := e.cat.Columns(ctx, a.ID, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range cols {
			got = append(got, c.Path+":"+c.SourceDoc)
		}
		slices.Sort(got)
		if want := []string{"a:from Spark", "b:", "c:"}; !slices.Equal(got, want) {
			t.Fatalf("columns after an OpenLineage schema: %v, want %v", got, want)
		}
	})
}
