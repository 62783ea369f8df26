package lineage

import (
	"log/slog"
	"math/rand"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// BenchmarkLoad builds the benchmark's wide graph as Sync loads it at start: edges in pages of
// syncPage, then summaries in pages of infoPage.
func BenchmarkLoad(b *testing.B) {
	const perLayer, layers = 25_000, 20
	rng := rand.New(rand.NewSource(42))
	ds := make([][]uuid.UUID, layers)
	var sums []catalog.Summary
	for l := range ds {
		for range perLayer {
			id := uuid.Must(uuid.NewV7())
			ds[l] = append(ds[l], id)
			sums = append(sums, catalog.Summary{ID: id, Kind: catalog.KindTable, Status: catalog.StatusActive, Namespace: "bench", Name: id.String()[:12]})
		}
	}
	var edges []edgeRef
	for l := 0; l+1 < layers; l++ {
		for i := range perLayer {
			job := uuid.Must(uuid.NewV7())
			sums = append(sums, catalog.Summary{ID: job, Kind: catalog.KindJob, Status: catalog.StatusActive, Namespace: "bench", Name: job.String()[:12]})
			for range 3 {
				edges = append(edges, edgeRef{from: ds[l][rng.Intn(perLayer)], to: job})
			}
			edges = append(edges, edgeRef{from: job, to: ds[l+1][i]})
		}
	}
	for b.Loop() {
		g := newGraph(nil, nil, time.Now, slog.Default())
		for i := 0; i < len(edges); i += syncPage {
			g.add(edges[i:min(i+syncPage, len(edges))])
		}
		for i := 0; i < len(sums); i += infoPage {
			g.setInfo(sums[i:min(i+infoPage, len(sums))])
		}
	}
}
