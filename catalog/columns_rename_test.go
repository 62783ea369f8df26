package catalog_test

import (
	"context"
	"testing"

	"github.com/tidemark/tidemark/catalog"
)

// TestColumnRenames: columns matched by field ID are renamed in place, also two that swap
// names, on both backends (PostgreSQL refuses a NUL byte in text, so the parking path must not
// hold one).
func TestColumnRenames(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "lake", "events")
		one, two := 1, 2
		sync := func(first, second string) []catalog.Column {
			t.Helper()
			if _, err := e.cat.SyncColumns(ctx, a.ID, catalog.SchemaInput{Source: catalog.SourceIceberg, Columns: []catalog.ColumnInput{
				{FieldID: &one, Path: first, Type: "long"}, {FieldID: &two, Path: second, Type: "long"}}}); err != nil {
				t.Fatal(err)
			}
			cols, err := e.cat.Columns(ctx, a.ID, false)
			if err != nil {
				t.Fatal(err)
			}
			return cols
		}
		before := sync("a", "b")
		after := sync("b", "a")
		if len(after) != 2 || after[0].ID != before[0].ID || after[0].Path != "b" || after[1].ID != before[1].ID || after[1].Path != "a" {
			t.Fatalf("after the swap: %+v (before %+v)", after, before)
		}
		hist, err := e.cat.SchemaHistory(ctx, a.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 2 || len(hist[0].Changes) != 2 || hist[0].Changes[0].Op != "renamed" {
			t.Fatalf("history: %+v", hist)
		}
	})
}
