package handlers

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
)

// wideAnswer is a lineage answer shaped like 10 hops downstream in the benchmark's layered
// graph at 100k datasets: about 38k nodes and twice as many edges.
func wideAnswer(nodes, edges int) lineage.LineageResult {
	rng := rand.New(rand.NewSource(1))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := lineage.LineageResult{Root: uuid.New(), ReachedPerDepth: []int{1}}
	for i := range nodes {
		kind := catalog.KindTable
		if i%2 == 1 {
			kind = catalog.KindJob
		}
		res.Nodes = append(res.Nodes, lineage.Node{Summary: catalog.Summary{ID: uuid.Must(uuid.NewV7()), Kind: kind, Status: catalog.StatusActive,
			Namespace: "bench", Name: fmt.Sprintf("d_%d_%d", i%20, i), CreatedAt: at, UpdatedAt: at}, Depth: i * 20 / nodes})
	}
	for range edges {
		res.Edges = append(res.Edges, [2]int32{int32(rng.Intn(nodes)), int32(rng.Intn(nodes))})
	}
	return res
}

func BenchmarkWriteFull(b *testing.B) {
	res := wideAnswer(38_000, 70_000)
	var buf []byte
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		buf = writeFull(counter{&n}, buf[:0], resultAnswer(res), "downstream", 20)
	}
	b.ReportMetric(float64(n)/float64(b.N), "bytes/answer")
}

func BenchmarkWriteCompact(b *testing.B) {
	res := wideAnswer(38_000, 70_000)
	var buf []byte
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		buf = writeCompact(counter{&n}, buf[:0], resultAnswer(res), "downstream", 20)
	}
	b.ReportMetric(float64(n)/float64(b.N), "bytes/answer")
}

type counter struct{ n *int }

func (c counter) Write(p []byte) (int, error) { *c.n += len(p); return len(p), nil }

var _ io.Writer = counter{}

func BenchmarkFullOverHTTP(b *testing.B) {
	res := wideAnswer(38_000, 70_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		bp := answerBufs.Get().(*[]byte)
		*bp = writeFull(w, (*bp)[:0], resultAnswer(res), "downstream", 20)[:0]
		answerBufs.Put(bp)
	}))
	defer srv.Close()
	for _, mode := range []string{"readall", "reuse", "discard"} {
		b.Run(mode, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				r, err := http.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				switch mode {
				case "readall":
					_, _ = io.ReadAll(r.Body)
				case "reuse":
					buf.Reset()
					_, _ = buf.ReadFrom(r.Body)
				default:
					_, _ = io.Copy(io.Discard, r.Body)
				}
				r.Body.Close()
			}
		})
	}
}
