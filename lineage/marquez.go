package lineage

import (
	"github.com/tidemark/tidemark/catalog"
)

// withJobIO completes a traversal the way Marquez answers: a job in the answer comes with all
// of its inputs and outputs, not only the one the walk arrived through. Without this, the graph
// of a dataset shows its writer with a single input (the one upstream of the dataset) although
// the job reads several. The added datasets are one hop past their job and are not walked
// further. They are added all together or not at all (Truncated), like a level of the walk.
// The edges are then every edge among the returned nodes, as Marquez's inEdges and outEdges are.
func (g *Graph) withJobIO(t Traversal, limit int) Traversal {
	g.mu.RLock()
	defer g.mu.RUnlock()
	at := make(map[int32]int32, len(t.Nodes)) // graph index -> position in t.Nodes
	idx := make([]int32, len(t.Nodes))        // position -> graph index, -1 when unknown
	for i, n := range t.Nodes {
		idx[i] = -1
		if gi, ok := g.index[n.ID]; ok {
			at[gi], idx[i] = int32(i), gi
		}
	}
	var extra []Node
	var extraIdx []int32
	for i, n := range t.Nodes {
		if n.Kind != catalog.KindJob || idx[i] < 0 {
			continue
		}
		for _, adj := range []*adjacency{&g.in, &g.out} {
			for _, v := range adj.list(idx[i]) {
				if _, ok := at[v]; ok {
					continue
				}
				at[v] = int32(len(t.Nodes) + len(extra))
				rec := g.nodes[v]
				extra = append(extra, Node{Summary: g.summaryOf(&rec), Depth: n.Depth + 1, Documented: rec.documented})
				extraIdx = append(extraIdx, v)
			}
		}
	}
	if len(t.Nodes)+len(extra) > limit {
		t.Truncated = true
		extra, extraIdx = nil, nil
	}
	if len(extra) > 0 {
		for _, n := range extra {
			for len(t.ReachedPerDepth) <= n.Depth {
				t.ReachedPerDepth = append(t.ReachedPerDepth, 0)
			}
			t.ReachedPerDepth[n.Depth]++
		}
		t.Nodes = append(t.Nodes, extra...)
		idx = append(idx, extraIdx...)
	}
	t.Edges = t.Edges[:0]
	for i, u := range idx {
		if u < 0 {
			continue
		}
		for _, v := range g.out.list(u) {
			if j, ok := at[v]; ok && int(j) < len(t.Nodes) {
				t.Edges = append(t.Edges, [2]int32{int32(i), j})
			}
		}
	}
	return t
}
