package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/web"
)

// fanOut records db.events written by load_events from raw.events and read by n jobs in
// namespace etl, each writing a table of its own in namespace lake; it returns db.events's ID.
func fanOut(t *testing.T, lin *lineage.Service, n int) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	event := func(job, inNS, in, outNS, out string) []byte {
		return fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":%q},"job":{"namespace":"etl","name":%q},
			"inputs":[{"namespace":%q,"name":%q}],"outputs":[{"namespace":%q,"name":%q}]}`,
			time.Now().UTC().Format(time.RFC3339Nano), uuid.Must(uuid.NewV7()), job, inNS, in, outNS, out)
	}
	// One batch, not n+1 ingests: these tests look at the graph, and a batch stores the same
	// events with the same effects in a few transactions (TestLineageWalkCut took a third of the
	// time under -race).
	raws := [][]byte{event("load_events", "raw", "raw.events", "db", "db.events")}
	for i := range n {
		raws = append(raws, event(fmt.Sprintf("report_%03d", i), "db", "db.events", "lake", fmt.Sprintf("lake.report_%03d", i)))
	}
	items, err := lin.IngestBatch(ctx, raws)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range items {
		if it.Err != nil {
			t.Fatalf("event %d: %v", i, it.Err)
		}
	}
	nodes, _, err := lin.MarquezGraph(ctx, "dataset:db:db.events", 1, min(1000, lin.MaxNodes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, nd := range nodes {
		if nd.Name == "db.events" {
			return nd.ID
		}
	}
	t.Fatal("db.events is not in its own graph")
	return uuid.Nil
}

// drawn is what the graph shows: the drawn nodes' IDs, kinds and labels.
type drawn struct {
	IDs    []string `json:"ids"`
	Kinds  []string `json:"kinds"`
	Labels []string `json:"labels"`
	Height float64  `json:"height"`
}

func (d drawn) count(kind string) int {
	n := 0
	for _, k := range d.Kinds {
		if k == kind {
			n++
		}
	}
	return n
}

// TestLineageFanOut: in a real browser, a dataset read by 100 jobs draws them as one group
// node (and their 100 outputs as another), which a click expands in place; a click on a node
// shows its details without leaving the page; the direction switch changes what is drawn; and
// the node list holds every node the graph draws.
func TestLineageFanOut(t *testing.T) {
	bin := chromium(t)
	db := storagetest.Open(t, storagetest.Backends[0])
	var lin *lineage.Service
	srv, _ := newUIWith(t, db, func(c *web.Config) { lin = c.Lineage })
	id := fanOut(t, lin, 100)
	bctx := chromiumContext(t, bin)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	graph := func() drawn {
		t.Helper()
		d, err := chromedp.Run(bctx, chromedp.Evaluate[drawn](`(() => { const ns = window.tidemarkGraph.nodes();
			return {ids: ns.map(n => n.id()), kinds: ns.map(n => n.data("kind")), labels: ns.map(n => n.data("label")),
				height: document.getElementById("lineage-graph").getBoundingClientRect().height}; })()`))
		must(err)
		return d
	}
	// list checks the node list: its count, and that it holds every node drawn but the groups.
	list := func(g drawn, want int) {
		t.Helper()
		ids, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#lineage-list li")].map(li => li.dataset.id)`))
		must(err)
		summary, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#lineage-list-box summary")))
		must(err)
		if len(ids) != want || summary != fmt.Sprintf("Nodes as a list (%d)", want) {
			t.Fatalf("node list: %d items, summary %q; want %d", len(ids), summary, want)
		}
		for i, nid := range g.IDs {
			if g.Kinds[i] != "group" && !slices.Contains(ids, nid) {
				t.Fatalf("drawn node %s (%s) is not in the list", g.Labels[i], nid)
			}
		}
	}
	tap := func(js string) {
		t.Helper()
		_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const n = window.tidemarkGraph.nodes().filter(`+js+`)[0]; n.emit("tap"); return true })()`))
		must(err)
	}
	// section saves the lineage section alone: the full page is mostly other parts.
	section := func(name string) {
		t.Helper()
		png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("section.lineage")))
		must(err)
		must(os.WriteFile(filepath.Join("testdata", "screenshots", name+".png"), png, 0o644))
	}
	assetURL := srv.URL + "/assets/" + id.String()
	must(chromedp.Do(bctx, chromedp.Navigate(assetURL), chromedp.WaitVisible(chromedp.ID("lineage-graph"))))

	// Collapsed: db.events, its writer and its input, one group of 100 jobs, one of 100 tables.
	collapsed := graph()
	if len(collapsed.IDs) != 5 || collapsed.count("group") != 2 || !slices.Contains(collapsed.Labels, "100 jobs in etl") ||
		!slices.Contains(collapsed.Labels, "100 tables in lake") {
		t.Fatalf("collapsed graph draws %v", collapsed.Labels)
	}
	list(collapsed, 203)
	shot(t, bctx, "lineage-fanout-collapsed")

	// A click on the jobs' group expands it in place: 100 job nodes, each with its table.
	tap(`n => n.data("label") === "100 jobs in etl"`)
	expanded := graph()
	if expanded.count("job") != 101 || expanded.count("group") != 0 || len(expanded.IDs) != 203 || expanded.Height <= collapsed.Height {
		t.Fatalf("expanded graph: %d jobs, %d groups, %d nodes, height %v (collapsed %v)",
			expanded.count("job"), expanded.count("group"), len(expanded.IDs), expanded.Height, collapsed.Height)
	}
	list(expanded, 203)
	shot(t, bctx, "lineage-fanout-expanded")
	section("lineage-fanout-expanded-section")

	// A click on a node selects it and shows its details; the page stays.
	tap(`n => n.data("label") === "report_042"`)
	details, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("lineage-details")))
	must(err)
	href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("lineage-open").getAttribute("href")`))
	must(err)
	loc, err := chromedp.Run(bctx, chromedp.Location())
	must(err)
	if !strings.Contains(details, "report_042") || !strings.Contains(details, "Namespace: etl") || !strings.Contains(details, "1 hop downstream") ||
		!regexp.MustCompile(`^/assets/[0-9a-f-]{36}$`).MatchString(href) || loc != assetURL {
		t.Fatalf("details %q, open link %q, location %q", details, href, loc)
	}
	section("lineage-fanout-selected-section")
	// It folds back from any of its members.
	must(chromedp.Do(bctx, chromedp.Click(chromedp.ID("lineage-collapse"))))
	if again := graph(); len(again.IDs) != 5 {
		t.Fatalf("collapsing again draws %v", again.Labels)
	}

	// The direction switch: upstream draws db.events, its writer and the writer's input.
	for _, tc := range []struct {
		dir    string
		labels []string
		list   int
	}{
		{"upstream", []string{"db.events", "load_events", "raw.events"}, 3},
		{"downstream", []string{"100 jobs in etl", "100 tables in lake", "db.events"}, 201},
	} {
		_, err := chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(`#lineage-direction a[data-direction=`+tc.dir+`]`))))
		must(err)
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
		g := graph()
		got := slices.Sorted(slices.Values(g.Labels))
		if !slices.Equal(got, tc.labels) {
			t.Fatalf("%s draws %v; want %v", tc.dir, got, tc.labels)
		}
		list(g, tc.list)
		current, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#lineage-direction a.current")))
		must(err)
		if current != tc.dir {
			t.Fatalf("the switch shows %q as current; want %s", current, tc.dir)
		}
	}
}

// TestColumnLineageOnAssetPage: the chosen column's lineage names each input with its dataset
// and transformation, is drawn on the graph as column edges with those labels, and the columns
// table links each column with lineage to it; every node drawn is in the node list.
func TestColumnLineageOnAssetPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		x := newCurated(t, db)
		emails := x.emails.ID.String()
		cases := []struct {
			name, query string
			has, lacks  []string
		}{
			{"NoColumnChosen", "",
				[]string{`class="col-lineage" href="?field=email_hash#lineage-h"`, `class="col-lineage" href="?field=customer_id#lineage-h"`, "Nodes as a list (3)"},
				[]string{`id="columns"`, `"kind":"column"`}},
			{"EmailHash", "?field=email_hash",
				[]string{`<code>shop.customers.email</code></a> → <code>email_hash</code> <span class="tag">DIRECT TRANSFORMATION</span>`,
					`<code>mart.customer_emails.email_hash</code>`, `"kind":"column","label":"email → email_hash\nDIRECT TRANSFORMATION"`,
					`href="/assets/` + x.customers.ID.String() + `?field=email#lineage-h"`, "Nodes as a list (3)"},
				[]string{"IDENTITY"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				body := readBody(mustGet(t, x.srv.Client(), x.srv.URL+"/assets/"+emails+tc.query))
				for _, want := range tc.has {
					if !strings.Contains(body, want) {
						t.Errorf("the page lacks %s", want)
					}
				}
				for _, not := range tc.lacks {
					if strings.Contains(body, not) {
						t.Errorf("the page has %s", not)
					}
				}
				m := regexp.MustCompile(`(?s)<script type="application/json" id="lineage-data">(.*?)</script>`).FindStringSubmatch(body)
				if m == nil {
					t.Fatal("no lineage data")
				}
				var g struct {
					Nodes []struct {
						Data struct{ ID string } `json:"data"`
					} `json:"nodes"`
				}
				if err := json.Unmarshal([]byte(m[1]), &g); err != nil {
					t.Fatal(err)
				}
				for _, n := range g.Nodes {
					if !strings.Contains(body, `<li data-id="`+n.Data.ID+`">`) {
						t.Errorf("graph node %s is not in the list", n.Data.ID)
					}
				}
			})
		}
	})
}

// TestColumnEdgesDrawn: in a real browser, the chosen column's lineage is drawn over the graph
// as a column edge labelled with both columns and the transformation.
func TestColumnEdgesDrawn(t *testing.T) {
	bin := chromium(t)
	x := newCurated(t, storagetest.Open(t, storagetest.Backends[0]))
	bctx := chromiumContext(t, bin)
	if err := chromedp.Do(bctx, chromedp.Navigate(x.srv.URL+"/assets/"+x.emails.ID.String()+"?field=email_hash"), chromedp.WaitVisible(chromedp.ID("lineage-graph"))); err != nil {
		t.Fatal(err)
	}
	labels, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`window.tidemarkGraph.edges("[kind = 'column']").map(e => e.source().data("label") + ": " + e.data("label"))`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"shop.customers: email → email_hash\nDIRECT TRANSFORMATION"}; !slices.Equal(labels, want) {
		t.Fatalf("column edges %q; want %q", labels, want)
	}
	png, err := chromedp.Run(bctx, chromedp.Screenshot(chromedp.CSS("section.lineage")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "screenshots", "lineage-column.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLineageHubGroupsBeforeCut: in a real browser, on both stores, a hub table read by 150
// jobs (each writing its own table) draws at the default depth 2 as the hub, one group of 150
// jobs and one of 150 tables, with nothing claimed truncated: the cap counts a group as one.
// Expanding the jobs, through the page's link (no script) or a click on the group (which would
// pass the cap in place, so the page expands it), draws them node by node, and the page says
// which assets did not fit.
func TestLineageHubGroupsBeforeCut(t *testing.T) {
	bin := chromium(t)
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var lin *lineage.Service
		srv, _ := newUIWith(t, db, func(c *web.Config) { lin = c.Lineage })
		id := fanOut(t, lin, 150)
		// The API's answer holds every node: the hub, its writer and input, 150 jobs, 150 tables.
		all, err := lin.Lineage(context.Background(), id, lineage.Both, 2, 1000)
		if err != nil || len(all.Nodes) != 303 || all.Truncated {
			t.Fatalf("lineage answer: %d nodes, truncated %v, %v", len(all.Nodes), all.Truncated, err)
		}
		bctx := chromiumContext(t, bin)
		must, text, click := browserOps(t, bctx)
		graph := func() drawn {
			t.Helper()
			d, err := chromedp.Run(bctx, chromedp.Evaluate[drawn](`(() => { const ns = window.tidemarkGraph.nodes();
				return {ids: ns.map(n => n.id()), kinds: ns.map(n => n.data("kind")), labels: ns.map(n => n.data("label"))}; })()`))
			must(err)
			return d
		}
		exists := func(sel string) bool {
			t.Helper()
			ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector(`+strconvQuote(sel)+`) !== null`))
			must(err)
			return ok
		}
		must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/assets/"+id.String()), chromedp.WaitVisible(chromedp.ID("lineage-graph"))))

		g := graph()
		sizes, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`window.tidemarkGraph.nodes("[kind = 'group']").map(n => n.data("size"))`))
		must(err)
		if len(g.IDs) != 5 || g.count("group") != 2 || !slices.Contains(g.Labels, "150 jobs in etl") || !slices.Contains(g.Labels, "150 tables in lake") ||
			!slices.Contains(g.Labels, "db.events") || !slices.Equal(sizes, []int{150, 150}) {
			t.Fatalf("at depth 2 the graph draws %v (group sizes %v)", g.Labels, sizes)
		}
		section := text("section.lineage")
		if strings.Contains(strings.ToLower(section), "truncated") || exists("#lineage-cut") || exists("#lineage-walk-cut") {
			t.Fatalf("the lineage section claims a cut: %q", section)
		}
		groups := text("#lineage-groups")
		if !strings.Contains(groups, "150 jobs in etl, reached from db.events") || !strings.Contains(groups, "150 tables in lake, reached from the 150 jobs in etl") {
			t.Fatalf("the groups are listed as %q", groups)
		}
		if s := text("#lineage-list-box summary"); s != "Nodes as a list (303)" {
			t.Fatalf("node list: %q", s)
		}
		shot(t, bctx, "lineage-hub-grouped-"+filepath.Base(t.Name()))

		// The expand link (no script needed) opens the page with the jobs drawn one by one: the
		// 150 tables then hang from 150 jobs, 303 nodes, and the page says which 3 it left out.
		click(`#lineage-groups li a.group-expand`)
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
		loc, err := chromedp.Run(bctx, chromedp.Location())
		must(err)
		g = graph()
		if !strings.Contains(loc, "expand=") || g.count("job") != 151 || g.count("group") != 0 || len(g.IDs) != 300 {
			t.Fatalf("%s draws %d jobs, %d groups, %d nodes", loc, g.count("job"), g.count("group"), len(g.IDs))
		}
		cut := text("#lineage-cut")
		if !strings.Contains(cut, "Not drawn: 3 tables at depth 2") || !strings.Contains(cut, "at most 300 nodes") {
			t.Fatalf("the cut is explained as %q", cut)
		}
		if groups := text("#lineage-groups"); !strings.Contains(groups, "150 jobs in etl, reached from db.events, drawn node by node") {
			t.Fatalf("the groups after expanding: %q", groups)
		}
		shot(t, bctx, "lineage-hub-expanded-"+filepath.Base(t.Name()))
		// Its collapse link folds it back.
		click(`#lineage-groups li a.group-collapse`)
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
		if g := graph(); len(g.IDs) != 5 || exists("#lineage-cut") {
			t.Fatalf("collapsed again: %v", g.Labels)
		}

		// A click on the jobs' group: expanded in place it would draw 303 nodes, past the cap, so
		// the page expands it instead and says what it left out.
		_, err = chromedp.Run(bctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Evaluate[bool](
			`(() => { window.tidemarkGraph.nodes().filter(n => n.data("label") === "150 jobs in etl")[0].emit("tap"); return true })()`)))
		must(err)
		must(chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("lineage-graph"))))
		loc, err = chromedp.Run(bctx, chromedp.Location())
		must(err)
		if g := graph(); !strings.Contains(loc, "expand=") || g.count("job") != 151 || len(g.IDs) != 300 || !strings.Contains(text("#lineage-cut"), "Not drawn: 3 tables at depth 2") {
			t.Fatalf("a click on the group: %s draws %d jobs, %d nodes", loc, g.count("job"), len(g.IDs))
		}
	})
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestLineageWalkCut: on a server whose lineage answers hold at most 200 assets, the hub's
// graph at depth 2 is read to depth 1 only, and the page says so (and draws the jobs grouped)
// instead of claiming the whole graph.
func TestLineageWalkCut(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var lin *lineage.Service
		srv, _ := newUIWith(t, db, func(c *web.Config) {
			var err error
			if lin, err = lineage.New(db, c.Catalog, lineage.WithMaxNodes(200)); err != nil {
				t.Fatal(err)
			}
			if err := lin.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			c.Lineage = lin
		})
		id := fanOut(t, lin, 150)
		body := readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+id.String()))
		for _, want := range []string{
			`id="lineage-walk-cut">The lineage walk stopped at 200 assets: levels past depth 1 were not read.`,
			`<strong>150 jobs in etl</strong>, reached from db.events`,
			"Nodes as a list (152)",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %s", want)
			}
		}
		if strings.Contains(body, `id="lineage-cut"`) || strings.Contains(body, "150 tables in lake") {
			t.Error("the page claims a cut after grouping, or tables it did not read")
		}
	})
}
