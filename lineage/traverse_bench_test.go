package lineage

import (
	"log/slog"
	"math/rand"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// layered builds the benchmark's wide graph in memory: layers of datasets, a job between
// consecutive layers reading 3 random datasets and writing 1.
func layered(b *testing.B, perLayer, layers int) (*Graph, [][]uuid.UUID) {
	g := newGraph(nil, nil, time.Now, slog.Default())
	ds, sums, edges := wideGraph(perLayer, layers)
	g.add(edges)
	g.setInfo(sums)
	return g, ds
}

// wideGraph returns the wide graph's datasets by layer, every node's summary and the edges.
func wideGraph(perLayer, layers int) ([][]uuid.UUID, []catalog.Summary, []edgeRef) {
	rng := rand.New(rand.NewSource(42))
	ds := make([][]uuid.UUID, layers)
	var sums []catalog.Summary
	for l := range ds {
		for range perLayer {
			id := uuid.New()
			ds[l] = append(ds[l], id)
			sums = append(sums, catalog.Summary{ID: id, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "bench", Name: id.String()[:12]})
		}
	}
	var edges []edgeRef
	for l := 0; l+1 < layers; l++ {
		for i := range perLayer {
			job := uuid.New()
			sums = append(sums, catalog.Summary{ID: job, Kind: catalog.KindJob, Status: catalog.StatusActive, Namespace: "bench", Name: job.String()[:12]})
			for range 3 {
				edges = append(edges, edgeRef{from: ds[l][rng.Intn(perLayer)], to: job})
			}
			edges = append(edges, edgeRef{from: job, to: ds[l+1][i]})
		}
	}
	return ds, sums, edges
}

func BenchmarkTraverse(b *testing.B) {
	g, ds := layered(b, benchPerLayer, benchLayers)
	busiest := func(layer []uuid.UUID) uuid.UUID { // a start whose walk does not die out
		best := layer[0]
		for _, id := range layer[:100] {
			if len(g.out.list(g.index[id])) > len(g.out.list(g.index[best])) {
				best = id
			}
		}
		return best
	}
	for _, tc := range []struct {
		name  string
		start uuid.UUID
		dir   Direction
		depth int
	}{
		{"down5", busiest(ds[0]), Downstream, 10},
		{"down10", busiest(ds[0]), Downstream, 20},
		{"up10", ds[11][0], Upstream, 20},
	} {
		b.Run(tc.name, func(b *testing.B) {
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				n = len(g.Traverse(tc.start, tc.dir, tc.depth, 2_000_000).Nodes)
			}
			b.ReportMetric(float64(n), "nodes")
		})
		b.Run(tc.name+"/view", func(b *testing.B) { // what the asset lineage answers walk
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				v := g.View(tc.start, tc.dir, tc.depth, 2_000_000)
				n = v.Len()
				v.Release()
			}
			b.ReportMetric(float64(n), "nodes")
		})
	}
}

// The benchmark graph's shape: the 100k datasets (20 layers of 5,000).
const benchPerLayer, benchLayers = 5_000, 20
