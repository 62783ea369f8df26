package lineage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestMarquezGraphFieldsAndDescriptions: each documented node of the Marquez graph carries its
// own schema fields and description (the facets are read for all of them at once), and a node
// without either carries none.
func TestMarquezGraphFieldsAndDescriptions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := mustLineage(t, db, mustCatalog(t, db))
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

// TestMarquezGraphJobBringsItsIO: a job in the Marquez graph comes with all its inputs and
// outputs, as in Marquez: the graph of daily_revenue shows both inputs of the job writing it,
// not only the one upstream of daily_revenue; a limit too small for them says truncated.
func TestMarquezGraphJobBringsItsIO(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lin := mustLineage(t, db, mustCatalog(t, db))
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		for i, ev := range []string{
			`"job":{"namespace":"etl","name":"build_revenue"},"inputs":[{"namespace":"db","name":"orders"},{"namespace":"db","name":"customers"}],"outputs":[{"namespace":"db","name":"daily_revenue"}]`,
			`"job":{"namespace":"etl","name":"report"},"inputs":[{"namespace":"db","name":"daily_revenue"}],"outputs":[{"namespace":"bi","name":"dash"},{"namespace":"bi","name":"dash_old"}]`,
			`"job":{"namespace":"etl","name":"other"},"inputs":[{"namespace":"db","name":"customers"}],"outputs":[{"namespace":"db","name":"churn"}]`,
		} {
			raw := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r%d"},%s}`, i, ev)
			if _, err := lin.Ingest(ctx, []byte(raw)); err != nil {
				t.Fatal(err)
			}
		}
		cases := []struct {
			name, node string
			depth      int
			limit      int
			want       []string // node IDs, sorted
			truncated  bool
			inEdges    map[string][]string
		}{
			{"DatasetBringsItsWritersInputs", "dataset:db:daily_revenue", 1, 100,
				[]string{"dataset:bi:dash", "dataset:bi:dash_old", "dataset:db:customers", "dataset:db:daily_revenue", "dataset:db:orders", "job:etl:build_revenue", "job:etl:report"}, false,
				map[string][]string{"job:etl:build_revenue": {"dataset:db:customers", "dataset:db:orders"}, "dataset:bi:dash": {"job:etl:report"}}},
			{"JobAsked", "job:etl:build_revenue", 1, 100,
				[]string{"dataset:db:customers", "dataset:db:daily_revenue", "dataset:db:orders", "job:etl:build_revenue"}, false,
				map[string][]string{"job:etl:build_revenue": {"dataset:db:customers", "dataset:db:orders"}}},
			{"LimitLeavesThemAllOut", "dataset:db:daily_revenue", 1, 4,
				[]string{"dataset:db:daily_revenue", "job:etl:build_revenue", "job:etl:report"}, true,
				map[string][]string{"job:etl:build_revenue": {}}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				nodes, res, err := lin.MarquezGraph(ctx, tc.node, tc.depth, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				byID := map[string]lineage.GraphNode{}
				for _, n := range nodes {
					got = append(got, n.NodeID)
					byID[n.NodeID] = n
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) || res.Truncated != tc.truncated {
					t.Fatalf("nodes %v truncated %v; want %v %v", got, res.Truncated, tc.want, tc.truncated)
				}
				for id, want := range tc.inEdges {
					in := slices.Sorted(slices.Values(byID[id].InEdges))
					if !slices.Equal(in, want) && !(len(in) == 0 && len(want) == 0) {
						t.Errorf("%s in-edges %v; want %v", id, in, want)
					}
				}
			})
		}
	})
}
