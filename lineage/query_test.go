package lineage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/lineage"
)

// TestMarquezGraphFieldsAndDescriptions: each documented node of the Marquez graph carries its
// own schema fields and description (the facets are read for all of them at once), and a node
// without either carries none.
func TestMarquezGraphFieldsAndDescriptions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := lineage.New(db, catalog.New(db.Client))
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var outputs []string
		for i := range 5 {
			outputs = append(outputs, fmt.Sprintf(`{"namespace":"n","name":"out%d","facets":{
				"schema":{"fields":[{"name":"c%d","type":"T%d"},{"name":"d","type":"INT"}]},
				"documentation":{"description":"it's table %d"}}}`, i, i, i, i))
		}
		ev := `{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r1"},"job":{"namespace":"n","name":"j"},
			"inputs":[{"namespace":"n","name":"plain"}],"outputs":[` + strings.Join(outputs, ",") + `]}`
		if _, err := lin.Ingest(ctx, []byte(ev)); err != nil {
			t.Fatal(err)
		}
		nodes, _, err := lin.MarquezGraph(ctx, "dataset:n:plain", 2, 100)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, n := range nodes {
			var i int
			_, notOut := fmt.Sscanf(n.Name, "out%d", &i)
			switch {
			case n.Name == "plain" || n.Name == "j":
				if len(n.Fields) != 0 || n.Description != "" {
					t.Errorf("%s: fields %v, description %q; want none", n.Name, n.Fields, n.Description)
				}
			case notOut == nil:
				seen++
				want := []lineage.SchemaField{{Name: fmt.Sprintf("c%d", i), Type: fmt.Sprintf("T%d", i)}, {Name: "d", Type: "INT"}}
				if !slices.Equal(n.Fields, want) || n.Description != fmt.Sprintf("it's table %d", i) {
					t.Errorf("%s: fields %v, description %q", n.Name, n.Fields, n.Description)
				}
			default:
				t.Errorf("unexpected node %s", n.Name)
			}
		}
		if seen != 5 {
			t.Fatalf("%d documented outputs in the graph; want 5", seen)
		}
	})
}
