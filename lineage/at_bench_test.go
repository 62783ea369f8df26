package lineage_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

var (
	atBenchPerLayer = flag.Int("at-bench-per-layer", 100, "BenchmarkLineageAt: datasets (and jobs) per layer")
	atBenchLayers   = flag.Int("at-bench-layers", 8, "BenchmarkLineageAt: dataset layers")
)

// BenchmarkLineageAt compares a 10-hop downstream walk now (the in-memory graph) with the same
// walk at a time (read from the database level by level), on a generated layered graph ingested
// through OpenLineage: each job of layer l reads 3 random datasets of layer l and writes one of
// layer l+1, its run dated l hours after the first. "at_end" asks at a time after every event
// (the same graph as now); "at_middle" halfway, when half the layers had run. Small by default;
// -at-bench-per-layer and -at-bench-layers make it bigger. On PostgreSQL when
// TIDEMARK_TEST_POSTGRES is set:
//
//	go test ./lineage/ -run '^$' -bench LineageAt -at-bench-per-layer 1000
func BenchmarkLineageAt(b *testing.B) {
	for _, backend := range storagetest.Backends {
		b.Run(backend, func(b *testing.B) {
			ctx := context.Background()
			db := storagetest.Open(b, backend)
			lin := mustLineage(b, db, mustCatalog(b, db))
			if err := lin.Open(ctx); err != nil {
				b.Fatal(err)
			}
			perLayer, layers := *atBenchPerLayer, *atBenchLayers
			t0 := time.Now().Add(-time.Duration(layers+1) * time.Hour).UTC().Truncate(time.Second)
			rng := rand.New(rand.NewSource(42))
			var events [][]byte
			for l := 0; l+1 < layers; l++ {
				for i := range perLayer {
					var ins []string
					for range 3 {
						ins = append(ins, fmt.Sprintf(`{"namespace":"bench","name":"d%d_%d"}`, l, rng.Intn(perLayer)))
					}
					events = append(events, fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"producer":"bench","run":{"runId":"r%d_%d"},
						"job":{"namespace":"bench","name":"j%d_%d"},"inputs":[%s],"outputs":[{"namespace":"bench","name":"d%d_%d"}]}`,
						t0.Add(time.Duration(l)*time.Hour).Format(time.RFC3339), l, i, l, i, strings.Join(ins, ","), l+1, i))
				}
			}
			for lo := 0; lo < len(events); lo += 1000 {
				items, err := lin.IngestBatch(ctx, events[lo:min(lo+1000, len(events))])
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range items {
					if it.Err != nil {
						b.Fatal(it.Err)
					}
				}
			}
			// The start whose walk reaches furthest: the dataset of layer 0 read by the most jobs.
			var start lineage.LineageResult
			for i := range perLayer {
				ref, ok, err := mustCatalog(b, db).Lookup(ctx, catalog.SpaceDataset, "bench", fmt.Sprintf("d0_%d", i))
				if err != nil || !ok {
					continue
				}
				res, err := lin.Lineage(ctx, ref.ID, lineage.Downstream, 1, lineage.DefaultMaxNodes)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Nodes) > len(start.Nodes) {
					start = res
				}
			}
			now := time.Now()
			for _, tc := range []struct {
				name string
				at   *time.Time
			}{
				{"now", nil},
				{"at_end", &now},
				{"at_middle", ptr(t0.Add(time.Duration(layers/2)*time.Hour - time.Minute))},
			} {
				b.Run(tc.name, func(b *testing.B) {
					var n, e int
					for b.Loop() {
						var res lineage.LineageResult
						var err error
						if tc.at == nil {
							res, err = lin.Lineage(ctx, start.Root, lineage.Downstream, 10, lineage.DefaultMaxNodes)
						} else {
							res, err = lin.LineageAt(ctx, start.Root, lineage.Downstream, 10, lineage.DefaultMaxNodes, *tc.at)
						}
						if err != nil {
							b.Fatal(err)
						}
						n, e = len(res.Nodes), len(res.Edges)
					}
					b.ReportMetric(float64(n), "nodes")
					b.ReportMetric(float64(e), "edges")
				})
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
