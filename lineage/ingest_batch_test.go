package lineage_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/usage"
)

// batchLineage opens a catalog and a lineage service whose completed runs count in usage, as
// the server wires them.
func batchLineage(t *testing.T, db *storage.DB) (*catalog.Catalog, *lineage.Service) {
	t.Helper()
	cat := mustCatalog(t, db)
	use, err := usage.New(db, cat)
	if err != nil {
		t.Fatal(err)
	}
	lin := mustLineage(t, db, cat, lineage.WithCompletedRuns(app.UsageOfRuns(use)))
	if err := lin.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	return cat, lin
}

// batchAndOneByOne ingests batch as one batch and single an event a batch, and answers what each
// stored and how many duplicates it met.
func batchAndOneByOne(ctx context.Context, t *testing.T, lin *lineage.Service, batch, single [][]byte) (stored, dups, stored1, dups1 int) {
	t.Helper()
	stored, dups = ingestLarge(ctx, t, lin, [][][]byte{batch})
	parts := make([][][]byte, len(single))
	for i, raw := range single {
		parts[i] = [][]byte{raw}
	}
	stored1, dups1 = ingestLarge(ctx, t, lin, parts)
	return stored, dups, stored1, dups1
}

// TestLargeBatchMatchesOneByOne: one batch of more events than a transaction stores (SQLite
// stores 100 a transaction, PostgreSQL 500), with several runs of each job (their START and
// COMPLETE in different transactions), owners that count as actors, and an event repeated across
// a transaction boundary, stores what the same events store sent one at a time: the same events
// (the repeat a duplicate), runs, run inputs and outputs, edges, and usage rollups.
func TestLargeBatchMatchesOneByOne(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		_, lin := batchLineage(t, db)
		t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
		batch, single := largeBatch(t0, "batch"), largeBatch(t0, "single")
		stored, dups, stored1, dups1 := batchAndOneByOne(ctx, t, lin, batch, single)
		if stored != stored1 || dups != 1 || dups1 != 1 {
			t.Fatalf("batch stored %d events (%d duplicates), one by one %d (%d); want the same, with 1 duplicate", stored, dups, stored1, dups1)
		}
		for _, q := range largeBatchFingerprints {
			got, want := fingerprint(t, db.SQL, q, "batch"), fingerprint(t, db.SQL, q, "single")
			if len(want) == 0 {
				t.Fatalf("no rows for %s", q)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s\nbatch:      %v\none by one: %v", q, got, want)
			}
		}
	})
}

// largeBatch is 620 events in namespace ns: 310 runs of 12 jobs, each a START then (10 events
// later) a COMPLETE, reading 3 of 40 datasets and writing its job's output; every third job
// names an owner. The 11th event comes again at position 505.
func largeBatch(t0 time.Time, ns string) [][]byte {
	var out [][]byte
	ev := func(typ string, run, i int) []byte {
		job := run % 12
		facets := ""
		if job%3 == 0 {
			facets = fmt.Sprintf(`,"facets":{"ownership":{"owners":[{"name":"owner-%d"}]}}`, job)
		}
		return fmt.Appendf(nil, `{"eventType":%q,"eventTime":%q,"run":{"runId":"%s-run-%d"},"job":{"namespace":%q,"name":"job_%d"%s},`+
			`"inputs":[{"namespace":%q,"name":"d_%d"},{"namespace":%q,"name":"d_%d"},{"namespace":%q,"name":"d_%d"}],"outputs":[{"namespace":%q,"name":"out_%d"}]}`,
			typ, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), ns, run, ns, job, facets,
			ns, run%40, ns, (run*7+1)%40, ns, (run*13+2)%40, ns, job)
	}
	for run := range 310 {
		out = append(out, ev("START", run, len(out)))
		if run >= 10 {
			out = append(out, ev("COMPLETE", run-10, len(out)))
		}
	}
	for run := 300; run < 310; run++ {
		out = append(out, ev("COMPLETE", run, len(out)))
	}
	return slices.Insert(out, 505, out[10])
}

// ingestLarge ingests the batches in turn and counts the events stored and the duplicates.
func ingestLarge(ctx context.Context, t *testing.T, lin *lineage.Service, batches [][][]byte) (stored, dups int) {
	t.Helper()
	for _, b := range batches {
		items, err := lin.IngestBatch(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			switch {
			case it.Err != nil:
				t.Fatal(it.Err)
			case it.Result.Duplicate:
				dups++
			default:
				stored++
			}
		}
	}
	return stored, dups
}

// largeBatchFingerprints read what ingest stored under namespace NS, without IDs; RUN is where a
// run ID holds its namespace.
var largeBatchFingerprints = []string{
	`SELECT replace(r.id, 'NS-', ''), n.name, r.state, r.event_count, r.state_time FROM runs r
		JOIN asset_names n ON n.asset_id = r.job_asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT replace(i.run_id, 'NS-', ''), n.name, i.role, i.first_seen FROM run_ios i
		JOIN asset_names n ON n.asset_id = i.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT f.name, t.name, e.first_seen, e.last_seen, replace(e.last_run_id, 'NS-', '') FROM lineage_edges e
		JOIN asset_names f ON f.asset_id = e.from_id AND f.valid_to IS NULL JOIN asset_names t ON t.asset_id = e.to_id AND t.valid_to IS NULL
		WHERE f.namespace = 'NS'`,
	`SELECT n.name, d.day, d.reads, d.writes, d.distinct_actors, d.distinct_jobs, d.last_read_at, d.last_write_at, d.late_records
		FROM usage_dailies d JOIN asset_names n ON n.asset_id = d.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT n.name, d.day, j.name FROM usage_job_dailies d JOIN asset_names n ON n.asset_id = d.asset_id AND n.valid_to IS NULL
		JOIN asset_names j ON j.asset_id = d.job_asset_id AND j.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT n.name, a.day, a.actor, a.reads, a.writes FROM usage_actor_dailies a
		JOIN asset_names n ON n.asset_id = a.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT n.name, a.month, a.actor, a.reads, a.writes FROM usage_actor_monthlies a
		JOIN asset_names n ON n.asset_id = a.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT n.name, u.namespace = n.namespace, u.name, u.first_at, u.last_at FROM usage_names u
		JOIN asset_names n ON n.asset_id = u.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
	`SELECT n.name, u.kind, u.actor, replace(u.query_id, 'NS-', ''), u.at, u.day FROM usage_events u
		JOIN asset_names n ON n.asset_id = u.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
}

// fingerprint runs q for namespace ns and returns its rows as sorted strings.
func fingerprint(t *testing.T, db *sql.DB, q, ns string) []string {
	t.Helper()
	rows, err := db.Query(strings.ReplaceAll(q, "NS", ns))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestWideBatchMatchesOneByOne: a batch naming more jobs, datasets and new edges than a
// statement used to take (500 rows), some datasets created beforehand and the rest new, names
// repeated across its events, an owned job each (facets) and an event repeated, stores what
// the same events store one at a time; sent again (a client's retry), it stores nothing more.
// On PostgreSQL its names, new assets, new edges and facets each go in one statement a
// transaction, so a batch that splits them wrongly shows here as a missing or extra row.
func TestWideBatchMatchesOneByOne(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat, lin := batchLineage(t, db)
		t0 := time.Now().Add(-2 * time.Hour).UTC().Truncate(time.Second)
		for _, ns := range []string{"wbatch", "wsingle"} {
			// The datasets d_0 ... d_299 exist beforehand; the other 314 read, every output and every
			// job are new.
			var ins []catalog.CreateInput
			for i := range 300 {
				ins = append(ins, catalog.CreateInput{Kind: catalog.KindTable, Namespace: ns, Name: fmt.Sprintf("d_%d", i)})
			}
			if n, err := cat.CreateMany(ctx, ins); err != nil || n != 300 {
				t.Fatalf("CreateMany = %d, %v", n, err)
			}
		}
		batch, single := wideBatch(t0, "wbatch"), wideBatch(t0, "wsingle")
		stored, dups, stored1, dups1 := batchAndOneByOne(ctx, t, lin, batch, single)
		if stored != len(batch)-1 || stored1 != stored || dups != 1 || dups1 != 1 {
			t.Fatalf("batch stored %d events (%d duplicates), one by one %d (%d); want %d, with 1 duplicate", stored, dups, stored1, dups1, len(batch)-1)
		}
		queries := append(slices.Clone(largeBatchFingerprints),
			// Every name held by one asset, and each asset holding that one name.
			`SELECT n.space, n.name, count(*), count(DISTINCT n.asset_id), (SELECT count(*) FROM asset_names o WHERE o.asset_id IN
					(SELECT x.asset_id FROM asset_names x WHERE x.space = n.space AND x.namespace = n.namespace AND x.name = n.name))
				FROM asset_names n WHERE n.namespace = 'NS' AND n.valid_to IS NULL GROUP BY n.space, n.namespace, n.name`,
			`SELECT n.name, f.name, f.value FROM asset_facets f JOIN asset_names n ON n.asset_id = f.asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`,
			`SELECT count(*) FROM lineage_events e JOIN asset_names n ON n.asset_id = e.job_asset_id AND n.valid_to IS NULL WHERE n.namespace = 'NS'`)
		want := map[string][]string{}
		for _, q := range queries {
			got, w := fingerprint(t, db.SQL, q, "wbatch"), fingerprint(t, db.SQL, q, "wsingle")
			if len(w) == 0 {
				t.Fatalf("no rows for %s", q)
			}
			if !slices.Equal(got, w) {
				t.Errorf("%s\nbatch:      %v\none by one: %v", q, got, w)
			}
			want[q] = got
		}
		if names := fingerprint(t, db.SQL, queries[len(largeBatchFingerprints)], "wbatch"); len(names) != 614+480+560 {
			t.Errorf("%d names held in the batch's namespace; want 1,654 (614 datasets read, 480 outputs, 560 jobs)", len(names))
		}
		// The client retries the whole batch: every event is recognised, nothing is written again.
		stored, dups = ingestLarge(ctx, t, lin, [][][]byte{batch})
		if stored != 0 || dups != len(batch) {
			t.Fatalf("retried batch stored %d events (%d duplicates); want 0 (%d)", stored, dups, len(batch))
		}
		for _, q := range queries {
			if got := fingerprint(t, db.SQL, q, "wbatch"); !slices.Equal(got, want[q]) {
				t.Errorf("after the retry, %s\ngot:  %v\nwant: %v", q, got, want[q])
			}
		}
	})
}

// wideBatch is 601 COMPLETE events in namespace ns, each its own run: run i of job_(i%560)
// (owned by one of 5 owners) reads d_(i%700) and d_((7i+3)%700) and writes o_(i%480). The
// 11th event comes again at position 505.
func wideBatch(t0 time.Time, ns string) [][]byte {
	var out [][]byte
	for i := range 600 {
		job := i % 560
		out = append(out, fmt.Appendf(nil, `{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":"%s-run-%d"},`+
			`"job":{"namespace":%q,"name":"job_%d","facets":{"ownership":{"owners":[{"name":"owner-%d"}]}}},`+
			`"inputs":[{"namespace":%q,"name":"d_%d"},{"namespace":%q,"name":"d_%d"}],"outputs":[{"namespace":%q,"name":"o_%d"}]}`,
			t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), ns, i, ns, job, job%5,
			ns, i%700, ns, (7*i+3)%700, ns, i%480))
	}
	return slices.Insert(out, 505, out[10])
}
