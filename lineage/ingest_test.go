package lineage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestConcurrentBatchesShareDatasets: four clients ingest batches whose events share jobs and
// datasets (new ones among them), and each replays its first batch at the end. Every name gets
// one asset, every edge one row whose seen interval and last run are those of its oldest and
// newest events, every event is stored once, and the in-memory graph holds the stored edges.
func TestConcurrentBatchesShareDatasets(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		lin := mustLineage(t, db, cat)
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		const clients, batches, perBatch = 4, 4, 25
		work, want, names, n := sharedBatches(t, clients, batches, perBatch)
		ingestConcurrently(ctx, t, lin, work, n, clients, perBatch)
		ids := lookupNames(ctx, t, cat, names)
		checkSharedCounts(t, db, lin, names, want, n)
		checkSharedEdges(t, db, want, ids)
	})
}

// edge is a lineage edge between two names ("job:..." or "dataset:...").
type edge struct{ from, to string }

// seen is when an edge was first and last seen, and the run that saw it last.
type seen struct {
	first, last time.Time
	lastRun     string
}

// sharedBatches makes each client's batches (and a replay) with the edges, names and events they hold.
func sharedBatches(t *testing.T, clients, batches, perBatch int) ([][][][]byte, map[edge]*seen, map[string]bool, int) {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := map[edge]*seen{}
	names := map[string]bool{}
	work := make([][][][]byte, clients) // client, batch, events
	rng := rand.New(rand.NewSource(1))
	n := 0
	for c := range clients {
		for range batches {
			var batch [][]byte
			for range perBatch {
				// Distinct times (n milliseconds apart at least): on a tie, which run an edge
				// names last depends on which batch commits last, which no test can know.
				at := t0.Add(time.Duration(rng.Intn(10_000))*time.Second + time.Duration(n)*time.Millisecond)
				run := uuid.NewString()
				job := fmt.Sprintf("job_%d", rng.Intn(8))
				ins := []string{fmt.Sprintf("t_%d", rng.Intn(20)), fmt.Sprintf("t_%d", rng.Intn(20))}
				out := fmt.Sprintf("t_%d", 20+rng.Intn(10))
				var inputs []any
				for _, in := range ins {
					inputs = append(inputs, map[string]any{"namespace": "w", "name": in})
				}
				raw, err := json.Marshal(map[string]any{"eventType": "COMPLETE", "eventTime": at.Format(time.RFC3339Nano),
					"producer": "test", "run": map[string]any{"runId": run}, "job": map[string]any{"namespace": "w", "name": job},
					"inputs": inputs, "outputs": []any{map[string]any{"namespace": "w", "name": out}}})
				if err != nil {
					t.Fatal(err)
				}
				batch = append(batch, raw)
				n++
				names["job:"+job], names["dataset:"+out] = true, true
				for _, e := range append([]edge{{"job:" + job, "dataset:" + out}}, edge{"dataset:" + ins[0], "job:" + job}, edge{"dataset:" + ins[1], "job:" + job}) {
					names[e.from], names[e.to] = true, true
					s := want[e]
					if s == nil {
						s = &seen{first: at, last: at, lastRun: run}
						want[e] = s
					}
					if at.Before(s.first) {
						s.first = at
					}
					if at.After(s.last) {
						s.last, s.lastRun = at, run
					}
				}
			}
			work[c] = append(work[c], batch)
		}
		work[c] = append(work[c], work[c][0]) // a replay
	}
	return work, want, names, n
}

// ingestConcurrently ingests each client's batches at once and checks only the replays were duplicates.
func ingestConcurrently(ctx context.Context, t *testing.T, lin *lineage.Service, work [][][][]byte, n, clients, perBatch int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n+clients*(perBatch+1)) // room for every event's and batch's error: a full channel would hang the test
	var mu sync.Mutex
	stored, dups := 0, 0
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, batch := range work[c] {
				for {
					items, err := lin.IngestBatch(ctx, batch)
					if errors.Is(err, catalog.ErrUnavailable) {
						time.Sleep(10 * time.Millisecond) // as OpenLineage clients retry a 503
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("client %d batch %d: %w", c, i, err)
						return
					}
					mu.Lock()
					for _, it := range items {
						if it.Err != nil {
							errs <- it.Err
						} else if it.Result.Duplicate {
							dups++
						} else {
							stored++
						}
					}
					mu.Unlock()
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A batch refused for retry stored nothing (it is one transaction), so only the
	// replays are duplicates.
	if stored != n || dups != clients*perBatch {
		t.Fatalf("stored %d and %d duplicates; want %d and %d", stored, dups, n, clients*perBatch)
	}
}

// lookupNames looks every name up in the catalog and returns its asset id by name.
func lookupNames(ctx context.Context, t *testing.T, cat *catalog.Catalog, names map[string]bool) map[string]uuid.UUID {
	t.Helper()
	ids := map[string]uuid.UUID{}
	for key := range names {
		space, name, _ := strings.Cut(key, ":")
		ref, ok, err := cat.Lookup(ctx, catalog.Space(space), "w", name)
		if err != nil || !ok || ref.Former {
			t.Fatalf("%s: %+v %v %v", key, ref, ok, err)
		}
		ids[key] = ref.ID
	}
	return ids
}

// checkSharedCounts checks the stored assets, events, search docs, audit events and graph edges.
func checkSharedCounts(t *testing.T, db *storage.DB, lin *lineage.Service, names map[string]bool, want map[edge]*seen, n int) {
	t.Helper()
	count := func(q string) int {
		var n int
		if err := db.SQL.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := count("SELECT count(*) FROM assets"); got != len(names) {
		t.Fatalf("%d assets for %d names", got, len(names))
	}
	if got := count("SELECT count(*) FROM lineage_events"); got != n {
		t.Fatalf("%d events stored, want %d", got, n)
	}
	if got := count("SELECT count(*) FROM search_docs"); got != len(names) {
		t.Fatalf("%d search docs for %d assets", got, len(names))
	}
	if got := count("SELECT count(*) FROM audit_events WHERE action = 'asset.create'"); got != len(names) {
		t.Fatalf("%d create audit events for %d assets", got, len(names))
	}
	if got := lin.Graph().Freshness().Edges; got != len(want) {
		t.Fatalf("graph holds %d edges, want %d", got, len(want))
	}
}

// checkSharedEdges checks the stored edges are the wanted ones, each seen from its oldest to newest event.
func checkSharedEdges(t *testing.T, db *storage.DB, want map[edge]*seen, ids map[string]uuid.UUID) {
	t.Helper()
	rows, err := db.SQL.Query("SELECT from_id, to_id, first_seen, last_seen, last_run_id FROM lineage_edges")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := 0
	for rows.Next() {
		var from, to uuid.UUID
		var s seen
		if err := rows.Scan(&from, &to, &s.first, &s.last, &s.lastRun); err != nil {
			t.Fatal(err)
		}
		got++
		found := false
		for e, w := range want {
			if ids[e.from] == from && ids[e.to] == to {
				found = true
				if !s.first.Equal(w.first) || !s.last.Equal(w.last) || s.lastRun != w.lastRun {
					t.Errorf("edge %s -> %s: seen %s..%s by %s, want %s..%s by %s", e.from, e.to, s.first, s.last, s.lastRun, w.first, w.last, w.lastRun)
				}
			}
		}
		if !found {
			t.Errorf("unexpected edge %s -> %s", from, to)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Fatalf("%d edges stored, want %d", got, len(want))
	}
}

// TestDropWeighsUsesEarlierInItsBatch: a dataset's first DROP is weighed against its newest use,
// including a use earlier in the same batch that only widened an edge already stored (written
// before the DROP is judged, on PostgreSQL by the same SQL as the batch's flush): that use
// is newer than the DROP, so the dataset stays.
func TestDropWeighsUsesEarlierInItsBatch(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		ev := func(run, at string, drop bool) []byte {
			facets := ""
			if drop {
				facets = `,"facets":{"lifecycleStateChange":{"lifecycleStateChange":"DROP"}}`
			}
			return []byte(`{"eventType":"COMPLETE","eventTime":"` + at + `","producer":"test","run":{"runId":"` + run + `"},
				"job":{"namespace":"w","name":"load"},"outputs":[{"namespace":"w","name":"t"` + facets + `}]}`)
		}
		ingest := func(raws ...[]byte) { f.ingestBatch(t, raws...) }
		ingest(ev(uuid.NewString(), "2026-01-01T01:00:00Z", false))
		// One batch: a write at 03:00 (the stored edge widens), then a DROP dated 02:00.
		ingest(ev(uuid.NewString(), "2026-01-01T03:00:00Z", false), ev(uuid.NewString(), "2026-01-01T02:00:00Z", true))
		res, err := f.cat.Resolve(f.ctx, "w", "t")
		if err != nil {
			t.Fatalf("w.t after a DROP older than its last write: %v; want it live", err)
		}
		if res.Asset.Status == catalog.StatusDeleted {
			t.Fatalf("w.t deleted by a DROP older than its last write: %+v", res.Asset)
		}
		// A DROP newer than every use deletes it.
		ingest(ev(uuid.NewString(), "2026-01-01T04:00:00Z", true))
		if res, err := f.cat.Resolve(f.ctx, "w", "t"); err == nil && res.Asset.Status != catalog.StatusDeleted {
			t.Fatalf("w.t after a DROP newer than every use: %+v; want it deleted", res.Asset)
		}
	})
}

// TestNewerFacetIsNotOverwritten: a batch that read a facet before a concurrent writer stored a
// newer event's value does not overwrite it with its older one: its write finds the newer value,
// and the batch is retried from its reads. PostgreSQL only (SQLite has one writer at a time).
func TestNewerFacetIsNotOverwritten(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	f := newCurationFixture(t, db)
	ev := func(at, v string) []byte {
		return []byte(`{"eventType":"COMPLETE","eventTime":"` + at + `","producer":"test","run":{"runId":"` + uuid.NewString() + `"},
			"job":{"namespace":"w","name":"load"},"outputs":[{"namespace":"w","name":"t","facets":{"custom":{"v":"` + v + `"}}}]}`)
	}
	f.ingestBatch(t, ev("2026-01-01T00:00:00Z", "v0"))
	res, err := f.cat.Resolve(f.ctx, "w", "t")
	if err != nil {
		t.Fatal(err)
	}
	// Another writer stores the value of an event at 02:00 while a batch with an event at 01:00
	// reads v0 (at 00:00) and decides to write.
	ingestPastHeldWrite(t, db, f.lin, ev("2026-01-01T01:00:00Z", "v1"), nil, `UPDATE asset_facets SET value = '{"v":"v2"}',
		event_time = '2026-01-01T02:00:00Z' WHERE asset_id = $1 AND name = 'custom'`, res.Asset.ID)
	value, at := customFacet(t, db, res.Asset.ID)
	if value != `{"v":"v2"}` || !at.Equal(time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC)) {
		t.Fatalf("facet = %s at %s; want the newer {\"v\":\"v2\"} at 02:00", value, at)
	}
}

// customFacet returns the value and event time of an asset's stored "custom" facet.
func customFacet(t *testing.T, db *storage.DB, asset uuid.UUID) (string, time.Time) {
	t.Helper()
	var value string
	var at time.Time
	if err := db.SQL.QueryRowContext(context.Background(), `SELECT value, event_time FROM asset_facets WHERE asset_id = $1 AND name = 'custom'`,
		asset).Scan(&value, &at); err != nil {
		t.Fatal(err)
	}
	return value, at
}

// ingestPastHeldWrite has another transaction make write (with args) and hold it while raw's
// batch runs into it, then commits it; the batch must then store raw without error. blocked, if
// not nil, runs while the batch waits.
func ingestPastHeldWrite(t *testing.T, db *storage.DB, lin *lineage.Service, raw []byte, blocked func(), write string, args ...any) {
	t.Helper()
	ctx := context.Background()
	other, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	if _, err := other.ExecContext(ctx, write, args...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		items, err := lin.IngestBatch(ctx, [][]byte{raw})
		if err == nil && items[0].Err != nil {
			err = items[0].Err
		}
		done <- err
	}()
	waitForLockWait(t, db)
	if blocked != nil {
		blocked()
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestKnownEdgeWidenedLast: a batch widens the seen intervals of edges it knows after all its
// other writes (usage included), so a concurrent batch over the same job waits for that row lock
// only through the other's commit. Here a held edge row blocks a batch: by then its completed run
// must have been handed to usage accounting, and once the row is released the edge is widened.
// PostgreSQL only (SQLite has one writer at a time).
func TestKnownEdgeWidenedLast(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	ctx := context.Background()
	cat := mustCatalog(t, db)
	var usageCalls atomic.Int32
	lin := mustLineage(t, db, cat, lineage.WithCompletedRuns(func(context.Context, []lineage.CompletedRun) error {
		usageCalls.Add(1)
		return nil
	}))
	if err := lin.Open(ctx); err != nil {
		t.Fatal(err)
	}
	ev := func(at string) []byte {
		return []byte(`{"eventType":"COMPLETE","eventTime":"` + at + `","producer":"test","run":{"runId":"` + uuid.NewString() + `"},
			"job":{"namespace":"w","name":"load"},"outputs":[{"namespace":"w","name":"t"}]}`)
	}
	if _, err := lin.IngestBatch(ctx, [][]byte{ev("2026-01-01T00:00:00Z")}); err != nil {
		t.Fatal(err)
	}
	job, err := cat.Resolve(ctx, "w", "load")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cat.Resolve(ctx, "w", "t")
	if err != nil {
		t.Fatal(err)
	}
	usageCalls.Store(0)
	blocked := func() {
		if n := usageCalls.Load(); n != 1 {
			t.Errorf("the batch waited on the known edge before recording usage (%d calls): the edge's row lock is held through its other writes", n)
		}
	}
	ingestPastHeldWrite(t, db, lin, ev("2026-01-01T01:00:00Z"), blocked,
		`UPDATE lineage_edges SET last_run_id = last_run_id WHERE from_id = $1 AND to_id = $2`, job.Asset.ID, out.Asset.ID)
	var last time.Time
	if err := db.SQL.QueryRowContext(ctx, `SELECT last_seen FROM lineage_edges WHERE from_id = $1 AND to_id = $2`, job.Asset.ID, out.Asset.ID).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC); !last.Equal(want) {
		t.Fatalf("edge last seen %s; want %s", last, want)
	}
}

// waitForLockWait returns once a session of the test's database waits on a lock (a row another
// transaction of the test holds).
func waitForLockWait(t *testing.T, db *storage.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := db.SQL.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no session ever waited for the held row")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFirstFacetInsertedConcurrently: a batch finds a dataset's facet missing while another
// writer inserts it, and waits on the unique index until that writer commits. The same value
// or an older one is no race (the batch goes on in its first attempt, replacing the older
// value); only a newer, different value sends the batch back to its reads, after which it leaves
// the newer value alone. Concurrent batches meeting a dataset's schema for the first time were
// retried until the client got a 503.
func TestFirstFacetInsertedConcurrently(t *testing.T) {
	cases := []struct {
		name         string
		otherValue   string
		otherAt      string
		wantValue    string
		wantAt       time.Time
		wantRetrying bool
	}{
		{"same value", `{"v":"v1"}`, "2026-01-01T01:00:00Z", `{"v":"v1"}`, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), false},
		{"older value", `{"v":"v0"}`, "2026-01-01T00:30:00Z", `{"v":"v1"}`, time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), false},
		{"newer value", `{"v":"v2"}`, "2026-01-01T02:00:00Z", `{"v":"v2"}`, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := storagetest.Open(t, "postgres")
			ctx := context.Background()
			var logs syncBuffer
			cat := mustCatalog(t, db)
			lin := mustLineage(t, db, cat, lineage.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
			if err := lin.Open(ctx); err != nil {
				t.Fatal(err)
			}
			ev := func(at, facets string) []byte {
				return []byte(`{"eventType":"COMPLETE","eventTime":"` + at + `","producer":"test","run":{"runId":"` + uuid.NewString() + `"},
					"job":{"namespace":"w","name":"load"},"outputs":[{"namespace":"w","name":"t"` + facets + `}]}`)
			}
			if _, err := lin.IngestBatch(ctx, [][]byte{ev("2026-01-01T00:00:00Z", "")}); err != nil { // the dataset, no facet yet
				t.Fatal(err)
			}
			res, err := cat.Resolve(ctx, "w", "t")
			if err != nil {
				t.Fatal(err)
			}
			// An event at 01:00 whose batch finds no facet stored, while another writer inserts one.
			ingestPastHeldWrite(t, db, lin, ev("2026-01-01T01:00:00Z", `,"facets":{"custom":{"v":"v1"}}`), nil,
				`INSERT INTO asset_facets (asset_id, name, value, event_time, updated_at) VALUES ($1, 'custom', $2, $3, now())`,
				res.Asset.ID, tc.otherValue, tc.otherAt)
			value, at := customFacet(t, db, res.Asset.ID)
			if value != tc.wantValue || !at.Equal(tc.wantAt) {
				t.Errorf("facet = %s at %s; want %s at %s", value, at, tc.wantValue, tc.wantAt)
			}
			if retried := strings.Contains(logs.String(), "ingest raced, retrying"); retried != tc.wantRetrying {
				t.Errorf("batch retried = %v, want %v; log:\n%s", retried, tc.wantRetrying, logs.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestLongProducerCutOnACharacter: a producer longer than the stored 1,024 bytes whose cut falls
// inside a multi-byte character is stored cut before it, so PostgreSQL takes the batch (it
// refused the invalid UTF-8 a byte cut made, and a retry failed the same way forever).
func TestLongProducerCutOnACharacter(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		f := newCurationFixture(t, db)
		producer := "https://example.com/" + strings.Repeat("a", 1023-len("https://example.com/")) + "é-and-more"
		raw := []byte(`{"eventType":"COMPLETE","eventTime":"2026-01-01T01:00:00Z","producer":"` + producer + `","run":{"runId":"` +
			uuid.NewString() + `"},"job":{"namespace":"w","name":"load"},"outputs":[{"namespace":"w","name":"t"}]}`)
		f.ingestBatch(t, raw)
		if _, err := f.cat.Resolve(f.ctx, "w", "t"); err != nil {
			t.Fatalf("the event with a long producer was not stored: %v", err)
		}
	})
}
