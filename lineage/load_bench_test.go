package lineage

import (
	"log/slog"
	"testing"
	"time"
)

// BenchmarkLoad builds the benchmark's wide graph as Sync loads it at start: edges in pages of
// syncPage, then summaries in pages of infoPage (in memory only: no database).
func BenchmarkLoad(b *testing.B) {
	_, sums, edges := wideGraph(25_000, 20)
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
