package lineage_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
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

// TestLineageViewIsLineage: LineageView answers what Lineage answers (the same nodes in the same
// order with the same values, edges, depths reached, truncation, freshness and relations, or
// the same error), after a rename, and for a deleted asset whose summary only the database
// holds (a fresh replica's graph loads no summary for it, so the View learns it).
func TestLineageViewIsLineage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		lin := mustLineage(t, db, cat)
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		for i, ev := range []string{
			`"job":{"namespace":"etl","name":"build"},"inputs":[{"namespace":"db","name":"orders"},{"namespace":"db","name":"cust\"omers"}],"outputs":[{"namespace":"db","name":"revenue"}]`,
			`"job":{"namespace":"etl","name":"report"},"inputs":[{"namespace":"db","name":"revenue"}],"outputs":[{"namespace":"bi","name":"dash"},{"namespace":"bi","name":"dash_old"}]`,
			`"job":{"namespace":"etl","name":"other"},"inputs":[{"namespace":"db","name":"cust\"omers"}],"outputs":[{"namespace":"db","name":"churn"}]`,
		} {
			raw := fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":"2024-01-01T00:00:00Z","run":{"runId":"r%d"},%s}`, i, ev)
			if _, err := lin.Ingest(ctx, []byte(raw)); err != nil {
				t.Fatal(err)
			}
		}
		id := func(ns, name string) uuid.UUID {
			r, err := cat.Resolve(ctx, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			return r.Asset.ID
		}
		orders, revenue, dash, old, report := id("db", "orders"), id("db", "revenue"), id("bi", "dash"), id("bi", "dash_old"), id("etl", "report")
		if _, err := cat.RenameFound(ctx, dash, "bi", "dash_renamed", time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.Delete(ctx, old, catalog.AnyVersion); err != nil {
			t.Fatal(err)
		}
		fresh := mustLineage(t, db, cat)
		if err := fresh.Open(ctx); err != nil {
			t.Fatal(err)
		}
		first, err := fresh.LineageView(ctx, revenue, lineage.Downstream, 2, 100)
		if err != nil {
			t.Fatal(err)
		}
		deleted := false
		for i := range first.Len() {
			n := first.Node(i)
			deleted = deleted || (n.ID == old && n.Status == catalog.StatusDeleted && n.Kind == catalog.KindTable)
		}
		first.Release()
		if !deleted {
			t.Fatal("the deleted output is not in the View with its summary read from the database")
		}
		for _, start := range []uuid.UUID{orders, revenue, dash, old, report, uuid.New()} {
			for _, dir := range []lineage.Direction{lineage.Downstream, lineage.Upstream, lineage.Both} {
				for _, dl := range [][2]int{{1, 100}, {3, 100}, {20, 100}, {20, 3}} {
					v, verr := fresh.LineageView(ctx, start, dir, dl[0], dl[1])
					want, werr := fresh.Lineage(ctx, start, dir, dl[0], dl[1])
					if (verr == nil) != (werr == nil) || (verr != nil && verr.Error() != werr.Error()) {
						t.Fatalf("%s %s %v: view error %v; Lineage %v", start, dir, dl, verr, werr)
					}
					if werr != nil {
						continue
					}
					var got []lineage.Node
					for i := range v.Len() {
						n := v.Node(i)
						got = append(got, lineage.Node{Summary: catalog.Summary{ID: n.ID, Kind: n.Kind, Status: n.Status, Namespace: n.Namespace, Name: n.Name}, Depth: n.Depth})
					}
					var wantNodes []lineage.Node
					for _, n := range want.Nodes {
						wantNodes = append(wantNodes, lineage.Node{Summary: catalog.Summary{ID: n.ID, Kind: n.Kind, Status: n.Status, Namespace: n.Namespace, Name: n.Name}, Depth: n.Depth})
					}
					if !slices.Equal(got, wantNodes) || !slices.Equal(v.Edges, want.Edges) || !slices.Equal(v.ReachedPerDepth, want.ReachedPerDepth) ||
						v.Truncated != want.Truncated || v.Root != want.Root || v.Freshness != want.Freshness || !slices.Equal(v.Relations, want.Relations) {
						t.Fatalf("%s %s %v: view\n%+v\n%v %v %v\nLineage\n%+v\n%v %v %v", start, dir, dl, got, v.Edges, v.ReachedPerDepth, v.Truncated,
							wantNodes, want.Edges, want.ReachedPerDepth, want.Truncated)
					}
					v.Release()
				}
			}
		}
	})
}
