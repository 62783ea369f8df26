package lineage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark/storage/storagetest"
)

// BenchmarkIngestSchemaFacets times batches of 100 RunEvents (3 inputs, 1 output) through
// IngestBatch, on PostgreSQL when TIDEMARK_TEST_POSTGRES is set (else SQLite), with datasets that
// carry no facets, ten-column schema and tags facets seen for the first time (every output's
// columns and tags recorded), the same facets again (nothing to record), and an output schema
// that changes in every event (one column added and one removed per event).
func BenchmarkIngestSchemaFacets(b *testing.B) {
	backend := "sqlite"
	if os.Getenv(storagetest.PostgresEnv) != "" {
		backend = "postgres"
	}
	const batch, outputs = 100, 100
	for _, mode := range []string{"none", "first", "steady", "changing"} {
		b.Run(backend+"/"+mode, func(b *testing.B) {
			ctx := context.Background()
			db := storagetest.Open(b, backend)
			cat := mustCatalog(b, db)
			if err := cat.EnsureClassifications(ctx); err != nil {
				b.Fatal(err)
			}
			lin := mustLineage(b, db, cat)
			if err := lin.Open(ctx); err != nil {
				b.Fatal(err)
			}
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			seq := 0
			events := func(facets bool, output func(i int) string, extra func(i int) string) [][]byte {
				raws := make([][]byte, batch)
				for i := range raws {
					seq++
					ds := func(name string, extra string) map[string]any {
						d := map[string]any{"namespace": "bench", "name": name}
						if facets {
							d["facets"] = benchFacets(extra)
						}
						return d
					}
					ev := map[string]any{"eventType": "COMPLETE", "eventTime": t0.Add(time.Duration(seq) * time.Second).Format(time.RFC3339),
						"producer": "https://tidemark.example/bench", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
						"run": map[string]any{"runId": fmt.Sprintf("run-%d", seq)}, "job": map[string]any{"namespace": "bench", "name": fmt.Sprintf("job_%d", seq%outputs)},
						"inputs":  []any{ds(fmt.Sprintf("in_%d", seq%300), ""), ds(fmt.Sprintf("in_%d", (seq+100)%300), ""), ds(fmt.Sprintf("in_%d", (seq+200)%300), "")},
						"outputs": []any{ds(output(seq), extra(seq))}}
					raws[i], _ = json.Marshal(ev)
				}
				return raws
			}
			ingest := func(raws [][]byte) {
				items, err := lin.IngestBatch(ctx, raws)
				if err != nil {
					b.Fatal(err)
				}
				for _, it := range items {
					if it.Err != nil {
						b.Fatal(it.Err)
					}
				}
			}
			same := func(i int) string { return fmt.Sprintf("out_%d", i%outputs) }
			none := func(int) string { return "" }
			// Warm up: the inputs and the steady outputs exist with their facets.
			ingest(events(mode != "none", same, none))
			ingest(events(mode != "none", same, none))
			ingest(events(mode != "none", same, none))
			var next func() [][]byte
			switch mode {
			case "none":
				next = func() [][]byte { return events(false, same, none) }
			case "first":
				next = func() [][]byte { return events(true, func(i int) string { return fmt.Sprintf("new_%d", i) }, none) }
			case "steady":
				next = func() [][]byte { return events(true, same, none) }
			case "changing":
				next = func() [][]byte { return events(true, same, func(i int) string { return fmt.Sprintf("v_%d", i) }) }
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				raws := next()
				b.StartTimer()
				ingest(raws)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "µs/event")
		})
	}
}

// benchFacets are the schema and tags facets of a dataset: ten columns, one a struct, and a pii
// tag on a nested column; extra names one more column.
func benchFacets(extra string) map[string]any {
	fields := []any{
		map[string]any{"name": "id", "type": "BIGINT", "description": "Key"},
		map[string]any{"name": "amount", "type": "DECIMAL(10,2)"},
		map[string]any{"name": "at", "type": "TIMESTAMP"},
		map[string]any{"name": "customer", "type": "STRUCT", "fields": []any{
			map[string]any{"name": "email", "type": "STRING"}, map[string]any{"name": "city", "type": "STRING"}}},
		map[string]any{"name": "region", "type": "STRING"},
		map[string]any{"name": "status", "type": "STRING"},
		map[string]any{"name": "source", "type": "STRING"},
		map[string]any{"name": "updated_at", "type": "TIMESTAMP"},
	}
	if extra != "" {
		fields = append(fields, map[string]any{"name": extra, "type": "STRING"})
	}
	return map[string]any{
		"schema": map[string]any{"_producer": "https://tidemark.example/bench",
			"_schemaURL": "https://openlineage.io/spec/facets/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet", "fields": fields},
		"tags": map[string]any{"_producer": "https://tidemark.example/bench",
			"_schemaURL": "https://openlineage.io/spec/facets/1-0-0/TagsDatasetFacet.json#/$defs/TagsDatasetFacet",
			"tags":       []any{map[string]any{"key": "pii", "value": "email", "field": "customer.email"}, map[string]any{"key": "tier", "value": "silver"}}},
	}
}
