package web

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/reconcile"
)

// The asset page's lineage: the graph (drawn by static/lineage.js, which collapses wide
// fan-outs into groups), the same nodes as a list, and column lineage.

func init() {
	funcs["has"] = func(xs []string, x string) bool { return slices.Contains(xs, x) }
}

// graphLimit bounds the nodes the asset page reads: walkLimit, or the server's cap when lower.
// What it draws is bounded after grouping (fitGraph, drawLimit).
func (u *UI) graphLimit() int {
	return min(walkLimit, u.cfg.Lineage.MaxNodes(), u.cfg.Lineage.Budget().PerClient())
}

// client is whom a request's share of the lineage budget is for: the signed-in token's name
// (as on the API), else the connection's address.
func (u *UI) client(r *http.Request) string {
	if s := u.sessions.get(r); s != nil {
		return "token " + s.Name
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// fitLineage groups the asset page's graph and cuts it to drawLimit (fitGraph), after the
// migrations and column lineage are added; the groups the address names are drawn open.
func (u *UI) fitLineage(r *http.Request, d *assetData) {
	deepest := 0
	for _, n := range d.Graph.Nodes {
		deepest = max(deepest, n.Data.Depth)
	}
	q := r.URL.Query()
	d.Graph, d.Fit = fitGraph(d.Graph, q["expand"], drawLimit, q)
	if d.Truncated {
		d.Fit.WalkCut, d.Fit.WalkLimit, d.Fit.WalkDepth = true, u.graphLimit(), deepest
	}
}

type graphData struct {
	Nodes []graphNode `json:"nodes"`
	Edges []graphEdge `json:"edges"`
	// Expanded are the groups the page's address expands (fitGraph): the browser draws them
	// open.
	Expanded []string `json:"expanded,omitempty"`
	// Limit is the most nodes the page draws (fitGraph): a group whose expansion in place would
	// pass it is expanded by the page instead.
	Limit int `json:"limit,omitempty"`
}

type graphNode struct {
	Data graphNodeData `json:"data"`
}

type graphNodeData struct {
	ID        string `json:"id"`
	Label     string `json:"label"`
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Href      string `json:"href"`
	Root      bool   `json:"root"`
	Depth     int    `json:"depth"`
	// Side is root, upstream, downstream, migration (the other side of a dataset migration)
	// or column (reached only by column lineage).
	Side string `json:"side"`
	// Parent is the node one hop nearer the root the walk reached this one from: siblings under
	// one parent, of one kind and namespace, are what the browser collapses into a group.
	Parent string `json:"from,omitempty"` // not "parent": cytoscape would nest the node inside it
	// Note is a line drawn under the namespace: a former name or a deletion since (lineage at a
	// time), a version and its state (the version page).
	Note string `json:"note,omitempty"`
	// State colours a node and keeps it out of groups of another state: affected, recovered,
	// unknown (a downstream table of a bad version), repeat (a job with a run to repeat).
	State string `json:"state,omitempty"`
	// Detail is a sentence for the details panel (why a table has its state).
	Detail string `json:"detail,omitempty"`
	// Former: the name shown is one the asset held at the time asked and holds no longer.
	Former bool `json:"former,omitempty"`
	// Deleted is when an asset shown at a time was deleted since.
	Deleted string `json:"deleted,omitempty"`
}

type graphEdge struct {
	Data graphEdgeData `json:"data"`
}

type graphEdgeData struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Kind   string `json:"kind,omitempty"`  // migrated_to, column; data flow otherwise
	Label  string `json:"label,omitempty"` // a column edge's columns and transformation
}

// dirLink is one choice of the direction switch.
type dirLink struct {
	Label, Href string
	Current     bool
}

// dirLinks are the direction switch's links: plain links, so the switch works without script
// and the node list always matches the graph.
func dirLinks(d assetData) []dirLink {
	var out []dirLink
	for _, dir := range []lineage.Direction{lineage.Upstream, lineage.Downstream, lineage.Both} {
		q := url.Values{"depth": {strconv.Itoa(d.Depth)}, "direction": {string(dir)}}
		if d.Field != "" {
			q.Set("field", d.Field)
		}
		if d.At != nil {
			q.Set("at", d.At.Format(time.RFC3339))
		}
		out = append(out, dirLink{Label: string(dir), Href: "?" + q.Encode() + "#lineage-h", Current: dir == d.Direction})
	}
	return out
}

// columnRow is a column in the column-lineage table, with what it derives from.
type columnRow struct {
	Dataset catalog.Summary
	Field   string
	Inputs  []columnInput
}

// columnInput is one input column and every way the column derives from it
// ("INDIRECT AGGREGATION, DIRECT IDENTITY").
type columnInput struct {
	AssetID        uuid.UUID
	Dataset, Field string
	How            string
}

// lineageParts reads the asset page's lineage parts at once: the graph, the runs, the columns
// with lineage and the chosen column's lineage, the schema. What fails is listed through miss.
func (u *UI) lineageParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	ctx, a, id := r.Context(), d.Asset, d.Asset.ID
	g.Go(func() error {
		held, err := u.cfg.Lineage.Reserve(ctx, u.client(r), u.graphLimit())
		if err != nil {
			if errors.Is(err, catalog.ErrUnavailable) {
				miss("the lineage graph (the server is drawing many graphs at once: reload the page in a moment)", err)
			} else {
				miss("the lineage graph", err)
			}
			return nil
		}
		d.held = held
		var l lineage.LineageResult
		if d.At != nil {
			l, err = u.cfg.Lineage.LineageAt(ctx, id, d.Direction, d.Depth, u.graphLimit(), *d.At)
		} else {
			l, err = u.cfg.Lineage.Lineage(ctx, id, d.Direction, d.Depth, u.graphLimit())
		}
		if !miss("the lineage graph", err) {
			d.Graph, d.Truncated = graphOf(l), l.Truncated
			held.Keep(len(l.Nodes)) // drawing costs what was walked, not the limit
		}
		return nil
	})
	// Column lineage keeps no history: the graph of a past time is drawn without it.
	if a.Kind != catalog.KindJob && a.Status != catalog.StatusDeleted && d.At == nil {
		g.Go(func() error {
			cols, err := u.cfg.Lineage.ColumnLineageOf(ctx, id, "", 1, false)
			if !miss("the columns with lineage", err) {
				for _, c := range cols {
					if c.AssetID == id && !slices.Contains(d.Fields, c.Field) {
						d.Fields = append(d.Fields, c.Field)
					}
				}
				slices.Sort(d.Fields)
			}
			return nil
		})
		if d.Field != "" {
			g.Go(func() error {
				cols, err := u.cfg.Lineage.ColumnLineageOf(ctx, id, d.Field, 3, true)
				if !miss("the column's lineage", err) {
					d.Columns = columnRows(cols)
				}
				return nil
			})
		}
	}
	g.Go(func() error {
		var err error
		d.Schema, err = u.schema(r, id)
		miss("the schema", err)
		return nil
	})
}

// graphOf turns a lineage answer into the graph's data: each node with its side of the root
// and the node it was reached from.
func graphOf(l lineage.LineageResult) graphData {
	var g graphData
	if len(l.Nodes) == 0 {
		return g
	}
	// Downstream nodes are those the root reaches along edges; in a "both" walk the rest are
	// upstream (a node on a cycle through the root counts as downstream).
	down := make([]bool, len(l.Nodes))
	out := make([][]int32, len(l.Nodes))
	for _, e := range l.Edges {
		out[e[0]] = append(out[e[0]], e[1])
	}
	down[0] = true
	for queue := []int32{0}; len(queue) > 0; queue = queue[1:] {
		for _, v := range out[queue[0]] {
			if !down[v] {
				down[v] = true
				queue = append(queue, v)
			}
		}
	}
	parent := make([]int32, len(l.Nodes))
	for i := range parent {
		parent[i] = -1
	}
	for _, e := range l.Edges {
		from, to := l.Nodes[e[0]], l.Nodes[e[1]]
		switch {
		case down[e[1]] && e[1] != 0 && parent[e[1]] < 0 && (e[0] == 0 || down[e[0]]) && from.Depth == to.Depth-1:
			parent[e[1]] = e[0]
		case !down[e[0]] && parent[e[0]] < 0 && (e[1] == 0 || !down[e[1]]) && to.Depth == from.Depth-1:
			parent[e[0]] = e[1]
		}
	}
	// A graph of a past time links each node to its own lineage at that time.
	query := ""
	if l.At != nil {
		query = "?" + url.Values{"at": {l.At.UTC().Format(time.RFC3339Nano)}}.Encode() + "#lineage-h"
	}
	for i, n := range l.Nodes {
		nd := graphNodeData{ID: n.ID.String(), Label: n.Name, Namespace: n.Namespace, Kind: string(n.Kind),
			Href: "/assets/" + n.ID.String() + query, Depth: n.Depth, Side: "upstream"}
		// A deleted asset holds no name any more, so its name of then is "former" too: saying
		// it was deleted says that.
		switch {
		case n.DeletedSince != nil:
			nd.Deleted = when(*n.DeletedSince)
			nd.Note = "deleted " + nd.Deleted
		case n.FormerName:
			nd.Former, nd.Note = true, "former name"
		}
		switch {
		case i == 0:
			nd.Root, nd.Side = true, "root"
		case down[i]:
			nd.Side = "downstream"
		}
		if parent[i] >= 0 {
			nd.Parent = l.Nodes[parent[i]].ID.String()
		}
		g.Nodes = append(g.Nodes, graphNode{Data: nd})
	}
	for _, e := range l.Edges {
		g.Edges = append(g.Edges, graphEdge{Data: graphEdgeData{Source: l.Nodes[e[0]].ID.String(), Target: l.Nodes[e[1]].ID.String()}})
	}
	return g
}

// withMigrations adds a migrated_to edge from each migration's old asset to its new one, and the
// other asset as a node when the lineage walk did not reach it: the move shows in both graphs.
func withMigrations(g graphData, ms []reconcile.Migration, names map[uuid.UUID]string) graphData {
	if len(g.Nodes) == 0 {
		return g
	}
	have := map[string]bool{}
	for _, n := range g.Nodes {
		have[n.Data.ID] = true
	}
	for _, m := range ms {
		for _, id := range []uuid.UUID{m.OldAssetID, m.NewAssetID} {
			if !have[id.String()] {
				have[id.String()] = true
				g.Nodes = append(g.Nodes, graphNode{Data: graphNodeData{ID: id.String(), Label: names[id], Kind: "table",
					Href: "/assets/" + id.String(), Side: "migration"}})
			}
		}
		g.Edges = append(g.Edges, graphEdge{Data: graphEdgeData{Source: m.OldAssetID.String(), Target: m.NewAssetID.String(), Kind: "migrated_to"}})
	}
	return g
}

// columnRows turns a column-lineage answer into the table's rows: each input column named with
// its dataset, and the transformations between the two put together.
func columnRows(cols []lineage.ColumnNode) []columnRow {
	names := map[uuid.UUID]string{}
	for _, c := range cols {
		names[c.AssetID] = c.Dataset.Name
	}
	rows := make([]columnRow, 0, len(cols))
	for _, c := range cols {
		row := columnRow{Dataset: c.Dataset, Field: c.Field}
		for _, in := range c.In {
			var hows []string
			for _, x := range c.Inputs {
				if x.FieldRef == in {
					if how := strings.TrimSpace(x.TransformationType + " " + x.TransformationSubtype); how != "" && !slices.Contains(hows, how) {
						hows = append(hows, how)
					}
				}
			}
			row.Inputs = append(row.Inputs, columnInput{AssetID: in.AssetID, Dataset: names[in.AssetID], Field: in.Field, How: strings.Join(hows, ", ")})
		}
		rows = append(rows, row)
	}
	return rows
}

// withColumns draws the chosen column's lineage over the graph: an edge per input column to the
// column it flows into, labelled with both columns and the transformation, and a node for a
// dataset that only column lineage reaches.
func withColumns(g graphData, rows []columnRow) graphData {
	if len(g.Nodes) == 0 || len(rows) == 0 {
		return g
	}
	have := map[string]bool{}
	for _, n := range g.Nodes {
		have[n.Data.ID] = true
	}
	for _, r := range rows {
		if !have[r.Dataset.ID.String()] && r.Dataset.ID != uuid.Nil {
			have[r.Dataset.ID.String()] = true
			g.Nodes = append(g.Nodes, graphNode{Data: graphNodeData{ID: r.Dataset.ID.String(), Label: r.Dataset.Name,
				Namespace: r.Dataset.Namespace, Kind: string(r.Dataset.Kind), Href: "/assets/" + r.Dataset.ID.String(), Side: "column"}})
		}
	}
	for _, r := range rows {
		for _, in := range r.Inputs {
			if !have[in.AssetID.String()] {
				continue // its dataset is gone (no summary): no node to draw from
			}
			label := in.Field + " → " + r.Field
			if in.How != "" {
				label += "\n" + in.How
			}
			g.Edges = append(g.Edges, graphEdge{Data: graphEdgeData{Source: in.AssetID.String(), Target: r.Dataset.ID.String(), Kind: "column", Label: label}})
		}
	}
	return g
}
