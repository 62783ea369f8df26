package web

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// hubGraph is a hub table read by n jobs, each writing its own table; jobNS names job i's
// namespace.
func hubGraph(n int, jobNS func(i int) string) graphData {
	g := graphData{Nodes: []graphNode{{Data: graphNodeData{ID: "hub", Label: "db.events", Namespace: "db", Kind: "table", Root: true, Side: "root"}}}}
	for i := range n {
		job, table := fmt.Sprintf("job%d", i), fmt.Sprintf("table%d", i)
		g.Nodes = append(g.Nodes,
			graphNode{Data: graphNodeData{ID: job, Label: job, Namespace: jobNS(i), Kind: "job", Depth: 1, Side: "downstream", Parent: "hub"}},
			graphNode{Data: graphNodeData{ID: table, Label: table, Namespace: "lake", Kind: "table", Depth: 2, Side: "downstream", Parent: job}})
		g.Edges = append(g.Edges, graphEdge{Data: graphEdgeData{Source: "hub", Target: job}}, graphEdge{Data: graphEdgeData{Source: job, Target: table}})
	}
	return g
}

// TestFitGraph: the cap counts a collapsed group as one node, so a hub with 150 consumers fits
// whole; what does not fit even so is cut farthest first, and the words say what was cut.
func TestFitGraph(t *testing.T) {
	etl := func(int) string { return "etl" }
	jobsKey := "group:hub|downstream|job|etl|"
	for _, tc := range []struct {
		name     string
		g        graphData
		expand   []string
		limit    int
		kept     int
		drawn    int
		groups   []string // labels
		cut      string   // in CutWords; "" for nothing cut
		cutNodes int
	}{
		{name: "hub of 150 consumers: hub, a group of jobs, a group of tables", g: hubGraph(150, etl), limit: 300,
			kept: 301, drawn: 3, groups: []string{"150 jobs in etl", "150 tables in lake"}},
		{name: "a few siblings are drawn one by one", g: hubGraph(8, etl), limit: 300, kept: 17, drawn: 17},
		{name: "the jobs expanded: their tables no longer share a parent and one does not fit", g: hubGraph(150, etl),
			expand: []string{jobsKey}, limit: 300, kept: 300, drawn: 300, groups: []string{"150 jobs in etl"},
			cut: "Not drawn: 1 table at depth 2. The graph draws at most 300 nodes", cutNodes: 1},
		{name: "an unknown group to expand is ignored", g: hubGraph(150, etl), expand: []string{"group:nothing", jobsKey + "nothing"}, limit: 300,
			kept: 301, drawn: 3, groups: []string{"150 jobs in etl", "150 tables in lake"}},
		{name: "grouping is not enough: 400 jobs in 400 namespaces, the tables grouped under none", g: hubGraph(400, func(i int) string { return fmt.Sprint("ns", i) }),
			limit: 300, kept: 300, drawn: 300, cut: "Not drawn: 101 jobs at depth 1, 400 tables at depth 2.", cutNodes: 501},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, fit := fitGraph(tc.g, tc.expand, tc.limit, url.Values{"depth": {"2"}})
			var labels []string
			for _, gr := range fit.Groups {
				labels = append(labels, gr.Label())
				if strings.Contains(gr.Href, "nothing") {
					t.Errorf("group %s links %q: an unknown group is carried along", gr.Label(), gr.Href)
				}
				if !strings.HasPrefix(gr.Href, "?") || !strings.Contains(gr.Href, "depth=2") || !strings.Contains(gr.Href, url.QueryEscape(gr.Key)) == !gr.Expanded {
					t.Errorf("group %s links %q", gr.Label(), gr.Href)
				}
			}
			if len(g.Nodes) != tc.kept || fit.Drawn != tc.drawn || fmt.Sprint(labels) != fmt.Sprint(tc.groups) || fit.CutNodes != tc.cutNodes {
				t.Fatalf("kept %d nodes, drew %d, groups %v, cut %d; want %d, %d, %v, %d", len(g.Nodes), fit.Drawn, labels, fit.CutNodes, tc.kept, tc.drawn, tc.groups, tc.cutNodes)
			}
			if words := fit.CutWords(); (tc.cut == "") != (words == "") || !strings.Contains(words, tc.cut) {
				t.Fatalf("cut words %q; want them to say %q", words, tc.cut)
			}
			// Every edge kept joins two kept nodes; the root is always kept.
			keep := map[string]bool{}
			for _, n := range g.Nodes {
				keep[n.Data.ID] = true
			}
			for _, e := range g.Edges {
				if !keep[e.Data.Source] || !keep[e.Data.Target] {
					t.Fatalf("edge %s → %s joins a node cut", e.Data.Source, e.Data.Target)
				}
			}
			if !keep["hub"] {
				t.Fatal("the root was cut")
			}
		})
	}
}
