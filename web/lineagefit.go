package web

import (
	"cmp"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The asset page's graph is grouped before it is cut: siblings of one kind, namespace, side and
// state reached from one node collapse into one group node (as static/lineage.js draws them),
// and the node cap counts a collapsed group as one. Only what still does not fit is left out,
// farthest first, and the page says what it grouped and what it left out.

// drawLimit is the most nodes the asset page draws, a collapsed group counting as one.
const drawLimit = 300

// walkLimit bounds the assets the asset page reads for its graph (whole levels): groups keep
// the drawing small, this keeps the page's data small.
const walkLimit = 5000

// groupMin is the most siblings drawn side by side: more collapse into a group. It is
// GROUP_MIN in static/lineage.js, which draws the groups this file counts.
const groupMin = 8

// maxExpand bounds the groups one page address may expand.
const maxExpand = 20

// graphGroup is a group of siblings the graph draws as one node.
type graphGroup struct {
	Key       string // the group's ID in the drawn graph (static/lineage.js builds the same)
	Size      int
	Kind      string
	Namespace string
	State     string
	Depth     int
	From      string // what its members were reached from, in words
	Expanded  bool
	Href      string // the page with this group expanded (or, when expanded, collapsed again)
}

// Label is the group's name as the graph writes it: "150 jobs in etl".
func (g graphGroup) Label() string {
	ns := g.Namespace
	if ns == "" {
		ns = "no namespace"
	}
	s := plural(g.Size, kindNoun(g.Kind)) + " in " + ns
	if g.State != "" {
		s += " · " + stateWord(g.State)
	}
	return s
}

func kindNoun(kind string) string {
	if kind == "" {
		return "asset"
	}
	return kind
}

// graphFit is what the page says about fitting the graph: the groups, and what it left out.
type graphFit struct {
	Groups []graphGroup
	Drawn  int // nodes drawn, a collapsed group counting as one
	Limit  int
	// Cut are the assets left out past Limit, in words ("12 tables at depth 2"); CutNodes
	// counts them.
	Cut      []string
	CutNodes int
	// WalkCut: the walk itself stopped at WalkLimit assets, so levels past WalkDepth were not
	// read.
	WalkCut   bool
	WalkLimit int
	WalkDepth int
}

// fitGraph groups g's siblings the way the browser draws them (except the groups named in
// expand, drawn node by node) and keeps at most limit drawn nodes: the root first, then the
// nearest, whole groups at a time. It returns the nodes and edges kept (a group's members
// count once) and what it grouped and cut. query is the page's address query, for the links
// that expand and collapse a group.
func fitGraph(g graphData, expand []string, limit int, query url.Values) (graphData, graphFit) {
	fit := graphFit{Limit: limit}
	if len(g.Nodes) == 0 {
		return g, fit
	}
	open := map[string]bool{}
	for _, k := range expand {
		if len(open) < maxExpand {
			open[k] = true
		}
	}
	gs := groupSiblings(g, open)
	units := drawnUnits(g, gs.rep)
	keep := map[string]bool{}
	cutBy := map[[2]string]int{} // kind, depth → assets cut
	var cutKeys [][2]string
	for n, u := range units {
		for _, i := range u.members {
			d := g.Nodes[i].Data
			if n < limit {
				keep[d.ID] = true
				continue
			}
			k := [2]string{kindNoun(d.Kind), strconv.Itoa(d.Depth)}
			if cutBy[k] == 0 {
				cutKeys = append(cutKeys, k)
			}
			cutBy[k]++
			fit.CutNodes++
		}
	}
	fit.Drawn = min(len(units), limit)
	var kept []graphNode
	for _, n := range g.Nodes {
		if keep[n.Data.ID] {
			kept = append(kept, n)
		}
	}
	for _, k := range cutKeys {
		fit.Cut = append(fit.Cut, plural(cutBy[k], k[0])+" at depth "+k[1])
	}
	var edges []graphEdge
	for _, e := range g.Edges {
		if keep[e.Data.Source] && keep[e.Data.Target] {
			edges = append(edges, e)
		}
	}
	// The links carry the groups open now that exist (not whatever the address held).
	var valid []string
	for _, k := range gs.order {
		if open[k] {
			valid = append(valid, k)
		}
	}
	for _, k := range gs.order {
		gr := *gs.groups[k]
		if !keep[gs.first[k]] {
			continue // cut whole: the cut line counts its members
		}
		gr.Href = expandHref(query, valid, k, !gr.Expanded)
		fit.Groups = append(fit.Groups, gr)
	}
	return graphData{Nodes: kept, Edges: edges, Expanded: valid, Limit: limit}, fit
}

// siblingGroups is how fitGraph grouped a graph's nodes.
type siblingGroups struct {
	rep    map[string]string // the drawn node each node belongs to: itself, or its collapsed group
	groups map[string]*graphGroup
	order  []string          // groups in the order first met
	first  map[string]string // a group's first member
}

// groupSiblings groups the siblings of one kind, namespace and state reached from one drawn
// node, more than groupMin of them, unless the group is open. Levels are taken nearest first so
// that the children of a collapsed group key on the group.
func groupSiblings(g graphData, open map[string]bool) siblingGroups {
	depths := map[int][]int{}
	for i, n := range g.Nodes {
		depths[n.Data.Depth] = append(depths[n.Data.Depth], i)
	}
	levels := slices.Sorted(maps.Keys(depths))
	gs := siblingGroups{rep: map[string]string{}, groups: map[string]*graphGroup{}, first: map[string]string{}}
	for _, depth := range levels {
		key := map[int]string{}
		sib := map[string]int{}
		for _, i := range depths[depth] {
			d := g.Nodes[i].Data
			p, ok := gs.rep[d.Parent]
			if d.Parent == "" || !ok {
				continue
			}
			k := "group:" + p + "|" + d.Side + "|" + d.Kind + "|" + d.Namespace + "|" + d.State
			key[i] = k
			sib[k]++
		}
		for _, i := range depths[depth] {
			d := g.Nodes[i].Data
			k := key[i]
			if k == "" || sib[k] <= groupMin {
				gs.rep[d.ID] = d.ID
				continue
			}
			if gs.groups[k] == nil {
				gs.groups[k] = &graphGroup{Key: k, Size: sib[k], Kind: d.Kind, Namespace: d.Namespace, State: d.State, Depth: d.Depth,
					From: fromWords(g, gs.groups, gs.rep[d.Parent]), Expanded: open[k]}
				gs.order = append(gs.order, k)
				gs.first[k] = d.ID
			}
			if open[k] {
				gs.rep[d.ID] = d.ID
			} else {
				gs.rep[d.ID] = k
			}
		}
	}
	return gs
}

// drawnUnit is one node the graph draws: a node, or a collapsed group of members.
type drawnUnit struct {
	id      string
	depth   int
	root    bool
	members []int
}

// drawnUnits are the drawn nodes, root first, then nearest, in the walk's order.
func drawnUnits(g graphData, rep map[string]string) []drawnUnit {
	at := map[string]int{}
	var units []drawnUnit
	for i, n := range g.Nodes {
		r := rep[n.Data.ID]
		j, ok := at[r]
		if !ok {
			j = len(units)
			at[r] = j
			units = append(units, drawnUnit{id: r, depth: n.Data.Depth, root: n.Data.Root})
		}
		units[j].members = append(units[j].members, i)
	}
	slices.SortStableFunc(units, func(x, y drawnUnit) int {
		if x.root != y.root {
			if x.root {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.depth, y.depth)
	})
	return units
}

// fromWords names the drawn node a group's members were reached from.
func fromWords(g graphData, groups map[string]*graphGroup, id string) string {
	if gr, ok := groups[id]; ok {
		return "the " + gr.Label()
	}
	for _, n := range g.Nodes {
		if n.Data.ID == id {
			return n.Data.Label
		}
	}
	return "another node"
}

// expandHref is the page's address with group key expanded (on) or collapsed again (off),
// the other groups as they are.
func expandHref(query url.Values, expand []string, key string, on bool) string {
	q := url.Values{}
	for k, vs := range query {
		if k != "expand" && k != "flash" {
			q[k] = vs
		}
	}
	for _, k := range expand {
		if k != key {
			q.Add("expand", k)
		}
	}
	if on {
		q.Add("expand", key)
	}
	return "?" + q.Encode() + "#lineage-h"
}

// CutWords is the sentence for what the graph left out past its cap.
func (f graphFit) CutWords() string {
	if f.CutNodes == 0 {
		return ""
	}
	return fmt.Sprintf("Not drawn: %s. The graph draws at most %d nodes, a collapsed group counting as one, and these are the farthest past that; lower the depth, pick one direction, or open a node further out.",
		strings.Join(f.Cut, ", "), f.Limit)
}
