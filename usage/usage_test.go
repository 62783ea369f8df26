package usage_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/usage"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

type env struct {
	db    *storage.DB
	cat   *catalog.Catalog
	use   *usage.Service
	clock *clock
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func eachBackend(t *testing.T, fn func(t *testing.T, e env)) {
	t.Helper()
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		c := &clock{t: t0}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		use, err := usage.New(db, cat, usage.WithClock(c.Now), usage.WithLateness(60*24*time.Hour), usage.WithRetention(90*24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		fn(t, env{db: db, cat: cat, use: use, clock: c})
	})
}

func (e env) create(t *testing.T, ns, name string) catalog.Asset {
	t.Helper()
	res, err := e.cat.Create(context.Background(), catalog.CreateInput{Kind: catalog.KindTable, Namespace: ns, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return res.Asset
}

func (e env) record(t *testing.T, recs []usage.Record) []usage.Result {
	t.Helper()
	res, err := e.use.Record(context.Background(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRenameStory: 40 days of reads on warehouse.orders, a rename to sales_orders, 5 days under
// the new name: one asset, 45 days, both names; a new "orders" starts at zero.
func TestRenameStory(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		orders := e.create(t, "warehouse", "orders")
		e.clock.Set(t0.Add(40*24*time.Hour + 12*time.Hour))
		if _, err := e.cat.Rename(ctx, orders.ID, orders.Version, "", "sales_orders"); err != nil {
			t.Fatal(err)
		}
		e.clock.Set(t0.Add(46 * 24 * time.Hour))
		var recs []usage.Record
		for d := 1; d <= 45; d++ {
			name := "orders"
			if d > 40 {
				name = "sales_orders"
			}
			recs = append(recs, usage.Record{Namespace: "warehouse", Name: name, Kind: "read", Actor: fmt.Sprintf("analyst%d", d%3),
				At: t0.Add(time.Duration(d)*24*time.Hour + time.Hour), QueryID: fmt.Sprintf("q%d", d), Source: "trino"})
		}
		for i, r := range e.record(t, recs) {
			if r.Status != usage.StatusAccepted || r.AssetID != orders.ID {
				t.Fatalf("record %d: %+v; want accepted for %s", i, r, orders.ID)
			}
		}
		newcomer := e.create(t, "warehouse", "orders")

		s, err := e.use.Series(ctx, orders.ID, t0, t0.Add(46*24*time.Hour), usage.Daily)
		if err != nil {
			t.Fatal(err)
		}
		if s.Reads != 45 || len(s.Points) != 45 || s.DistinctActors != 3 {
			t.Fatalf("series: reads %d, %d days, %d actors; want 45, 45, 3", s.Reads, len(s.Points), s.DistinctActors)
		}
		var names []string
		for _, n := range s.NamesSeen {
			names = append(names, fmt.Sprintf("%s current=%v", n.Name, n.Current))
		}
		if !slices.Equal(names, []string{"orders current=false", "sales_orders current=true"}) {
			t.Fatalf("names seen = %v", names)
		}
		real, err := e.use.Real(ctx, orders.ID, t0, t0.Add(46*24*time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		if real.Reads != 45 || real.DistinctReaders != 3 || real.LastRead == nil || !real.LastRead.Equal(t0.Add(45*24*time.Hour+time.Hour)) {
			t.Fatalf("real usage = %+v", real)
		}
		weekly, err := e.use.Series(ctx, orders.ID, t0, t0.Add(46*24*time.Hour), usage.Weekly)
		if err != nil || weekly.Reads != 45 || len(weekly.Points) < 7 || len(weekly.Points) > 8 {
			t.Fatalf("weekly: %d points, %d reads, %v", len(weekly.Points), weekly.Reads, err)
		}
		fresh, err := e.use.Series(ctx, newcomer.ID, t0, t0.Add(46*24*time.Hour), usage.Daily)
		if err != nil || fresh.Reads != 0 || len(fresh.NamesSeen) != 0 {
			t.Fatalf("the new orders: %+v, %v; want no usage", fresh, err)
		}
	})
}

func batch(assetName string, n int, at time.Time) []usage.Record {
	var recs []usage.Record
	for i := range n {
		recs = append(recs, usage.Record{Namespace: "w", Name: assetName, Kind: []string{"read", "write"}[i%2], Actor: fmt.Sprintf("u%d", i%4),
			At: at.Add(time.Duration(i) * time.Minute), QueryID: fmt.Sprintf("q%d", i), Source: "proxy"})
	}
	return recs
}

// TestBatchCountsOnce: one batch posted 5 times in a row and 5 times at once counts once; a
// record repeated inside a batch counts once.
func TestBatchCountsOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		e.clock.Set(t0.Add(2 * 24 * time.Hour))
		recs := batch("t", 20, t0.Add(24*time.Hour))
		recs = append(recs, recs[3]) // the same record twice in one batch
		for range 5 {
			e.record(t, recs)
		}
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.use.Record(ctx, recs); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		s, err := e.use.Series(ctx, a.ID, t0, t0.Add(3*24*time.Hour), usage.Daily)
		if err != nil {
			t.Fatal(err)
		}
		if s.Reads != 10 || s.Writes != 10 {
			t.Fatalf("reads %d writes %d; want 10 and 10", s.Reads, s.Writes)
		}
		res := e.record(t, recs)
		if res[0].Status != usage.StatusDuplicate || res[len(res)-1].Status != usage.StatusDuplicate {
			t.Fatalf("resend statuses: %v / %v", res[0].Status, res[len(res)-1].Status)
		}
	})
}

// TestRollupsMatchRecount: random batches with duplicates, resends and shuffles, some late;
// every daily rollup equals a recount of the distinct records.
func TestRollupsMatchRecount(t *testing.T) {
	// Narrow batches, and wide ones: more records, and more of every rollup's rows, than one
	// statement's chunk (each table is written in one statement on PostgreSQL, in chunks on
	// SQLite).
	cases := []struct {
		name                   string
		batches, most, queries int
	}{
		{"narrow", 30, 40, 400},
		{"wide", 3, 1500, 6000},
	}
	eachBackend(t, func(t *testing.T, e env) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { rollupsMatchRecount(t, e, tc.name, tc.batches, tc.most, tc.queries) })
		}
	})
}

func rollupsMatchRecount(t *testing.T, e env, ns string, batches, most, queries int) {
	ctx := context.Background()
	names := []string{"a", "b", "c"}
	ids := map[string]uuid.UUID{}
	assets := map[uuid.UUID]bool{}
	for _, n := range names {
		ids[n] = e.create(t, ns, n).ID
		assets[ids[n]] = true
	}
	e.clock.Set(t0.Add(12 * 24 * time.Hour))
	rng := rand.New(rand.NewSource(1))
	type key struct{ source, query, name string }
	distinct := map[key]usage.Record{}
	var sent []usage.Record
	widest := 0
	for b := 0; b < batches; b++ {
		var recs []usage.Record
		n := most/2 + rng.Intn(most/2+1)
		widest = max(widest, n)
		for range n {
			if len(sent) > 0 && rng.Intn(4) == 0 {
				recs = append(recs, sent[rng.Intn(len(sent))]) // resend
				continue
			}
			r := usage.Record{Namespace: ns, Name: names[rng.Intn(3)], Kind: []string{"read", "write"}[rng.Intn(2)],
				Actor: fmt.Sprintf("u%d", rng.Intn(5)), At: t0.Add(time.Duration(rng.Intn(10*24*60)) * time.Minute),
				QueryID: fmt.Sprintf("q%d", rng.Intn(queries)), Source: []string{"trino", "spark"}[rng.Intn(2)]}
			k := key{r.Source, r.QueryID, r.Name}
			if prev, ok := distinct[k]; ok {
				r = prev // the same key always carries the same record, as a real log does
			} else {
				distinct[k] = r
			}
			recs = append(recs, r)
			sent = append(sent, r)
		}
		rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		for i, r := range e.record(t, recs) {
			if r.Status != usage.StatusAccepted && r.Status != usage.StatusDuplicate {
				t.Fatalf("record %d: %s %s", i, r.Status, r.Reason)
			}
		}
	}
	t.Logf("batches of up to %d records, %d distinct", widest, len(distinct))
	type bucket struct {
		id  uuid.UUID
		day string
	}
	type counts struct {
		reads, writes int64
		actors        map[string]bool
	}
	want := map[bucket]*counts{}
	for _, r := range distinct {
		b := bucket{ids[r.Name], usage.Day(r.At)}
		if want[b] == nil {
			want[b] = &counts{actors: map[string]bool{}}
		}
		if r.Kind == "read" {
			want[b].reads++
		} else {
			want[b].writes++
		}
		want[b].actors[r.Actor] = true
	}
	// Per-actor totals over ranges that take whole months from the monthly rollup and the rest
	// from the daily one (and one within a month) match the records.
	for _, rg := range [][2]time.Time{{t0.AddDate(0, 0, -5), t0.AddDate(0, 1, 3)}, {t0.AddDate(0, 0, 2), t0.AddDate(0, 0, 6)}} {
		wantActor := map[string][2]int64{}
		for _, r := range distinct {
			if d := r.At.UTC().Truncate(24 * time.Hour); d.Before(rg[0]) || d.After(rg[1]) {
				continue
			}
			c := wantActor[r.Actor]
			if r.Kind == "read" {
				c[0]++
			} else {
				c[1]++
			}
			wantActor[r.Actor] = c
		}
		totals := map[string][2]int64{}
		for _, id := range ids {
			s, err := e.use.Series(ctx, id, rg[0], rg[1], usage.Daily)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.TopActors) > 10 {
				t.Fatalf("top actors not capped")
			}
			for _, a := range s.TopActors {
				c := totals[a.Actor]
				totals[a.Actor] = [2]int64{c[0] + a.Reads, c[1] + a.Writes}
			}
		}
		for actor, w := range wantActor {
			if totals[actor] != w {
				t.Fatalf("range %s..%s actor %s: got %v, recount %v", usage.Day(rg[0]), usage.Day(rg[1]), actor, totals[actor], w)
			}
		}
	}
	all, err := e.db.Client.UsageDaily.Query().All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows []*ent.UsageDaily
	for _, r := range all {
		if assets[r.AssetID] {
			rows = append(rows, r)
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rollup rows, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		w := want[bucket{r.AssetID, r.Day}]
		if w == nil || r.Reads != w.reads || r.Writes != w.writes || r.DistinctActors != len(w.actors) {
			t.Fatalf("rollup %s %s = %d/%d/%d, recount %+v", r.AssetID, r.Day, r.Reads, r.Writes, r.DistinctActors, w)
		}
	}
}

// TestBadRecordsAreRefusedOneByOne: each bad record gets its reason; the good ones are stored.
func TestBadRecordsAreRefusedOneByOne(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		a := e.create(t, "w", "t")
		now := t0.Add(5 * 24 * time.Hour)
		e.clock.Set(now)
		good := usage.Record{AssetID: a.ID, Kind: "read", At: now.Add(-time.Hour), QueryID: "ok", Source: "s"}
		cases := []struct {
			rec    usage.Record
			status string
			reason string
		}{
			{good, usage.StatusAccepted, ""},
			{usage.Record{AssetID: a.ID, Kind: "delete", At: now, QueryID: "1"}, usage.StatusRefused, "not read or write"},
			{usage.Record{AssetID: a.ID, Kind: "read", At: now.Add(time.Hour), QueryID: "2"}, usage.StatusRefused, "in the future"},
			{usage.Record{AssetID: a.ID, Kind: "read", At: now.Add(-61 * 24 * time.Hour), QueryID: "3"}, usage.StatusRefused, "older than the accepted lateness"},
			{usage.Record{AssetID: a.ID, Kind: "read", At: now}, usage.StatusRefused, "no query_id and no idempotency_key"},
			{usage.Record{Kind: "read", At: now, QueryID: "4"}, usage.StatusRefused, "needs an id, or a namespace and a name"},
			{usage.Record{Namespace: "w", Name: "nope", Kind: "read", At: now, QueryID: "5"}, usage.StatusUnresolved, "no asset was named w.nope"},
			{usage.Record{AssetID: uuid.Must(uuid.NewV7()), Kind: "read", At: now, QueryID: "6"}, usage.StatusUnresolved, "does not exist"},
			{usage.Record{AssetID: a.ID, Kind: "write", At: now, IdempotencyKey: "k1"}, usage.StatusAccepted, ""},
		}
		var recs []usage.Record
		for _, c := range cases {
			recs = append(recs, c.rec)
		}
		res := e.record(t, recs)
		for i, c := range cases {
			if res[i].Status != c.status || !strings.Contains(res[i].Reason, c.reason) {
				t.Errorf("record %d: %+v; want %s with %q", i, res[i], c.status, c.reason)
			}
		}
		if n, _ := e.db.Client.UsageEvent.Query().Count(context.Background()); n != 2 {
			t.Fatalf("%d raw events stored, want 2", n)
		}
		if _, err := e.use.Record(context.Background(), make([]usage.Record, usage.MaxRecords+1)); err == nil {
			t.Fatal("an oversized batch was accepted")
		}
	})
}

// TestCompletedRunsCount: a COMPLETE run's inputs are reads and outputs writes, once per run and
// asset however many events it sends; START and RUNNING events count nothing.
func TestCompletedRunsCount(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		e.clock.Set(time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC))
		lin, err := lineage.New(e.db, e.cat, lineage.WithClock(e.clock.Now), lineage.WithCompletedRuns(func(ctx context.Context, runs []lineage.CompletedRun) error {
			var out []usage.RunUsage
			for _, r := range runs {
				u := usage.RunUsage{RunID: r.RunID, JobID: r.JobID, At: r.At, Actor: r.Actor}
				for _, d := range r.Inputs {
					u.Inputs = append(u.Inputs, usage.Seen{ID: d.ID, Namespace: d.Namespace, Name: d.Name})
				}
				for _, d := range r.Outputs {
					u.Outputs = append(u.Outputs, usage.Seen{ID: d.ID, Namespace: d.Namespace, Name: d.Name})
				}
				out = append(out, u)
			}
			return e.use.FromRuns(ctx, out)
		}))
		if err != nil {
			t.Fatal(err)
		}
		if err := lin.Open(ctx); err != nil {
			t.Fatal(err)
		}
		ev := func(typ, at string) []byte {
			return []byte(`{"eventType":"` + typ + `","eventTime":"` + at + `","run":{"runId":"r1"},
				"job":{"namespace":"etl","name":"daily","facets":{"ownership":{"owners":[{"name":"team:data","type":"MAINTAINER"}]}}},
				"inputs":[{"namespace":"w","name":"src"}],"outputs":[{"namespace":"w","name":"dst"}]}`)
		}
		for _, raw := range [][]byte{ev("START", "2024-06-01T10:00:00Z"), ev("COMPLETE", "2024-06-01T11:00:00Z"),
			ev("COMPLETE", "2024-06-01T11:00:00Z"), ev("COMPLETE", "2024-06-01T11:05:00Z")} {
			if _, err := lin.Ingest(ctx, raw); err != nil {
				t.Fatal(err)
			}
		}
		src, err := e.cat.Resolve(ctx, "w", "src")
		if err != nil {
			t.Fatal(err)
		}
		down := func(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) { return lin.Downstream(ctx, id, 10) }
		real, err := e.use.Real(ctx, src.Asset.ID, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC), down)
		if err != nil || real.Reads != 1 || real.DownstreamRead {
			t.Fatalf("real usage of src = %+v, %v; want 1 read and no downstream read (dst was only written)", real, err)
		}
		for name, want := range map[string][2]int64{"src": {1, 0}, "dst": {0, 1}} {
			res, err := e.cat.Resolve(ctx, "w", name)
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.use.Series(ctx, res.Asset.ID, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC), usage.Daily)
			if err != nil {
				t.Fatal(err)
			}
			if s.Reads != want[0] || s.Writes != want[1] || len(s.TopActors) != 1 || s.TopActors[0].Actor != "team:data" {
				t.Fatalf("%s: reads %d writes %d actors %+v; want %v by team:data", name, s.Reads, s.Writes, s.TopActors, want)
			}
		}
		// A run that reads dst makes src's downstream read.
		read := []byte(`{"eventType":"COMPLETE","eventTime":"2024-06-01T12:00:00Z","run":{"runId":"r2"},"job":{"namespace":"etl","name":"report"},
			"inputs":[{"namespace":"w","name":"dst"}],"outputs":[]}`)
		if _, err := lin.Ingest(ctx, read); err != nil {
			t.Fatal(err)
		}
		real, err = e.use.Real(ctx, src.Asset.ID, time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 6, 2, 0, 0, 0, 0, time.UTC), down)
		if err != nil || !real.DownstreamRead || len(real.ReadDownstream) != 1 {
			t.Fatalf("real usage of src after dst is read = %+v, %v", real, err)
		}
	})
}

// TestPurgeKeepsRollups: raw events past retention go; the rollups, and so the series, stay.
func TestPurgeKeepsRollups(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.create(t, "w", "t")
		e.clock.Set(t0.Add(2 * 24 * time.Hour))
		e.record(t, batch("t", 6, t0.Add(24*time.Hour)))
		run := usage.RunUsage{RunID: "r1", JobID: uuid.New(), At: t0.Add(24 * time.Hour), Inputs: []usage.Seen{{ID: a.ID, Namespace: "w", Name: "t"}}}
		if err := e.use.FromRuns(ctx, []usage.RunUsage{run}); err != nil {
			t.Fatal(err)
		}
		if n, _ := e.db.Client.UsageJobDaily.Query().Count(ctx); n != 1 {
			t.Fatalf("%d jobs seen per day before the purge, want 1", n)
		}
		e.clock.Set(t0.Add(200 * 24 * time.Hour))
		n, err := e.use.Purge(ctx)
		if err != nil || n != 7 {
			t.Fatalf("purged %d, %v; want 7", n, err)
		}
		if n, _ := e.db.Client.UsageJobDaily.Query().Count(ctx); n != 0 {
			t.Fatalf("%d jobs seen per day left after the purge, want 0", n)
		}
		s, err := e.use.Series(ctx, a.ID, t0, t0.Add(3*24*time.Hour), usage.Daily)
		jobs := 0
		for _, p := range s.Points {
			jobs += p.DistinctJobs
		}
		if err != nil || s.Reads != 4 || s.Writes != 3 || jobs != 1 {
			t.Fatalf("series after purge: %d/%d, %d jobs, %v; want 4/3 and 1 job", s.Reads, s.Writes, jobs, err)
		}
	})
}

func TestRetentionMustExceedLateness(t *testing.T) {
	db := storagetest.Open(t, storagetest.Backends[0])
	_, err := usage.New(db, mustCatalog(t, db), usage.WithLateness(30*24*time.Hour), usage.WithRetention(7*24*time.Hour))
	if err == nil || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("retention shorter than lateness: err = %v", err)
	}
}

// TestConcurrentRunsCountJobsOnce: clients record overlapping completed runs at once (the same
// assets, jobs and actors, on two days, with resends); nothing deadlocks, and every day rollup
// equals a recount of the raw events: reads, writes, distinct actors and distinct jobs.
func TestConcurrentRunsCountJobsOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		var assets []usage.Seen
		for i := range 6 {
			a := e.create(t, "w", fmt.Sprintf("t%d", i))
			assets = append(assets, usage.Seen{ID: a.ID, Namespace: "w", Name: a.Name})
		}
		jobs := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New()}
		e.clock.Set(t0.Add(3 * 24 * time.Hour))
		const clients, batches = 6, 8
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(c)))
				var sent []usage.RunUsage
				for b := range batches {
					var runs []usage.RunUsage
					for i := range 10 {
						if len(sent) > 0 && rng.Intn(5) == 0 {
							runs = append(runs, sent[rng.Intn(len(sent))]) // a resend
							continue
						}
						r := usage.RunUsage{RunID: fmt.Sprintf("c%d-b%d-r%d", c, b, i), JobID: jobs[rng.Intn(len(jobs))],
							At: t0.Add(time.Duration(24+rng.Intn(48)) * time.Hour), Actor: fmt.Sprintf("u%d", rng.Intn(3)),
							Inputs: []usage.Seen{assets[rng.Intn(3)], assets[3+rng.Intn(3)]}, Outputs: []usage.Seen{assets[rng.Intn(len(assets))]}}
						runs = append(runs, r)
						sent = append(sent, r)
					}
					if err := e.use.FromRuns(ctx, runs); err != nil {
						t.Errorf("client %d batch %d: %v", c, b, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		type bucket struct {
			id  uuid.UUID
			day string
		}
		type counts struct {
			reads, writes int64
			actors, jobs  map[string]bool
		}
		want := map[bucket]*counts{}
		events, err := e.db.Client.UsageEvent.Query().All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			b := bucket{ev.AssetID, ev.Day}
			if want[b] == nil {
				want[b] = &counts{actors: map[string]bool{}, jobs: map[string]bool{}}
			}
			if ev.Kind == "read" {
				want[b].reads++
			} else {
				want[b].writes++
			}
			want[b].actors[ev.Actor] = true
			want[b].jobs[ev.JobAssetID.String()] = true
		}
		rows, err := e.db.Client.UsageDaily.Query().All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) || len(rows) < 6 {
			t.Fatalf("%d rollup rows, want %d (and at least 6)", len(rows), len(want))
		}
		for _, r := range rows {
			w := want[bucket{r.AssetID, r.Day}]
			if w == nil || r.Reads != w.reads || r.Writes != w.writes || r.DistinctActors != len(w.actors) || r.DistinctJobs != len(w.jobs) {
				t.Fatalf("rollup %s %s = %d reads, %d writes, %d actors, %d jobs; recount %d, %d, %d, %d", r.AssetID, r.Day,
					r.Reads, r.Writes, r.DistinctActors, r.DistinctJobs, w.reads, w.writes, len(w.actors), len(w.jobs))
			}
		}
	})
}
