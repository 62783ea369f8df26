package benchdb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
)

// The ingest benchmarks' shared parts (bench/ingest, bench/lineage -part ingest): the catalog the
// events name, the events, and the clients that post them.

// CreateBeforehand creates datasets t_0... and jobs job_0... in namespace bench, untimed, then
// VACUUM ANALYZE: left to autovacuum, that maintenance ran during the timed run and counted in
// PostgreSQL's CPU an event.
func CreateBeforehand(ctx context.Context, db *storage.DB, datasets, jobs int) {
	var ins []catalog.CreateInput
	for i := range datasets {
		ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "bench", Name: fmt.Sprintf("t_%d", i)})
	}
	for j := range jobs {
		ins = append(ins, catalog.CreateInput{Kind: catalog.KindJob, Namespace: "bench", Name: fmt.Sprintf("job_%d", j)})
	}
	cat, err := catalog.New(db)
	Must(err)
	for len(ins) > 0 {
		n := min(catalog.MaxCreateMany, len(ins))
		_, err := cat.CreateMany(ctx, ins[:n])
		Must(err)
		ins = ins[n:]
	}
	_, err = db.SQL.ExecContext(ctx, "VACUUM ANALYZE")
	Must(err)
}

// RunEvent is a COMPLETE OpenLineage RunEvent of a new run of job (namespace bench) at at.
func RunEvent(at time.Time, job string, inputs, outputs []any) map[string]any {
	return map[string]any{
		"eventType": "COMPLETE", "eventTime": at.Format(time.RFC3339Nano),
		"producer": "https://tidemark.example/bench", "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
		"run":     map[string]any{"runId": uuid.NewString()},
		"job":     map[string]any{"namespace": "bench", "name": job},
		"inputs":  inputs,
		"outputs": outputs,
	}
}

// IngestClient posts batches of events to a server's /api/v1/lineage/batch as a producer does,
// and counts what landed.
type IngestClient struct {
	Base, Token           string
	Done, Failed, Retries atomic.Int64
}

// PostAll posts the batches from clients goroutines until there are none left, and returns how
// long that took.
func (c *IngestClient) PostAll(batches <-chan []byte, clients int) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				c.PostBatch(b)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// PostBatch POSTs one batch, again while the server answers 503, and counts its events.
func (c *IngestClient) PostBatch(b []byte) {
	for {
		req, _ := http.NewRequest("POST", c.Base+"/api/v1/lineage/batch", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.Token)
		res, err := http.DefaultClient.Do(req)
		Must(err)
		var out struct {
			Summary struct{ Successful, Failed int }
		}
		_ = json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			c.Retries.Add(1)
			time.Sleep(100 * time.Millisecond)
			continue // retried as OpenLineage clients do; landed events are deduplicated
		}
		if res.StatusCode != http.StatusOK {
			log.Fatalf("batch answered %d", res.StatusCode)
		}
		c.Done.Add(int64(out.Summary.Successful))
		c.Failed.Add(int64(out.Summary.Failed))
		return
	}
}
