package reconcile_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	_ "github.com/lib/pq"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type order struct {
	id       int64
	at       time.Time
	cents    int64
	customer string
}

// dualWrite is the fixture: a service writing every order to the old PostgreSQL table and to
// the new Iceberg table, with a retry fault that can be staged.
type dualWrite struct {
	t      *testing.T
	ctx    context.Context
	pg     *sql.DB
	tbl    *table.Table
	tables *tables.Service
}

var orderSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "ordered_at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 4, Name: "customer", Type: iceberg.PrimitiveTypes.String},
)

func (d *dualWrite) records(os []order) array.RecordReader {
	sc, err := table.SchemaToArrowSchema(d.tbl.Schema(), nil, false, false)
	must(d.t, err)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, o := range os {
		b.Field(0).(*array.Int64Builder).Append(o.id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(o.at.UnixMicro()))
		b.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(o.cents))
		b.Field(3).(*array.StringBuilder).Append(o.customer)
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	must(d.t, err)
	return rdr
}

// registered tells Tidemark about the table's newest metadata (it is registered by location).
func (d *dualWrite) registered() {
	_, _, err := d.tables.Register(d.ctx, tables.RegisterInput{MetadataLocation: d.tbl.MetadataLocation()})
	must(d.t, err)
}

// write writes orders to both sides; retried orders reach the new side twice (the staged fault:
// a retry without an idempotency key).
func (d *dualWrite) write(os []order, retried ...int64) {
	for _, o := range os {
		_, err := d.pg.ExecContext(d.ctx, `INSERT INTO public.orders (order_id, ordered_at, amount, customer) VALUES ($1, $2, $3, $4)`,
			o.id, o.at, fmt.Sprintf("%d.%02d", o.cents/100, o.cents%100), o.customer)
		must(d.t, err)
	}
	out := slices.Clone(os)
	for _, o := range os {
		if slices.Contains(retried, o.id) {
			out = append(out, o)
		}
	}
	d.newSide(out, false)
}

// newSide appends to (or, with replace, rewrites) the new side only.
func (d *dualWrite) newSide(os []order, replace bool) {
	var err error
	if replace {
		d.tbl, err = d.tbl.Overwrite(d.ctx, d.records(os), nil)
	} else {
		d.tbl, err = d.tbl.Append(d.ctx, d.records(os), nil)
	}
	must(d.t, err)
	d.registered()
}

func orders(from, n int, day time.Time) []order {
	out := make([]order, n)
	for i := range out {
		id := int64(from + i)
		out[i] = order{id: id, at: day.Add(time.Duration(i) * time.Hour), cents: 1000 + id*7, customer: fmt.Sprintf("c%d", id%5)}
	}
	return out
}

// TestMigrationWorkedExample is the seed's worked example on real parts: orders dual-written into
// a PostgreSQL table and an Iceberg table, a staged retry fault that writes some orders twice into
// the new side, the fix, a staged divergence and a staged lag, and the streak growing until the
// cutover rule holds.
func TestMigrationWorkedExample(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		w := newWorkedExample(t, db)
		w.create(workedExampleSpec(w.mon))
		w.stagedRetryFault()
		r2 := w.fixThenStagedDivergence()
		wed := w.mon.AddDate(0, 0, 2)
		w.stagedLag(wed)
		w.cleanRunsToSunday(wed, r2)
		w.cutOver()
		w.retireAfterFinalRun()
	})
}

// workedExample is TestMigrationWorkedExample's world: the dual writes, a clock starting on a
// Monday, the services, the two tables' assets and the migration between them.
type workedExample struct {
	*dualWrite
	mon   time.Time
	c     *clock
	use   *usage.Service
	cat   *catalog.Catalog
	svc   *reconcile.Service
	newID uuid.UUID
	oldID uuid.UUID
	m     reconcile.Migration
}

// newWorkedExample is the migration pair of the worked example on a clock at Monday 2 November
// 2026.
func newWorkedExample(t *testing.T, db *storage.DB) *workedExample {
	t.Helper()
	mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday
	c := &clock{t: mon}
	p := newPair(t, db, c)
	return &workedExample{dualWrite: p.dualWrite, mon: mon, c: c, use: p.use, cat: p.cat, svc: p.svc, newID: p.new, oldID: p.old}
}

// workedExampleSpec is the worked example's spec: compared by day from mon, a 6 h lag bound and
// a cutover rule of 4 clean runs over 3 days, weaker than the floor for a stated reason.
func workedExampleSpec(mon time.Time) reconcile.Spec {
	return reconcile.Spec{KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount", "customer"},
		WindowSeconds: 86400, Since: mon, DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, LagBoundSeconds: 6 * 3600, QuoteValues: true,
		Cutover: reconcile.CutoverRule{MinCleanRuns: 4, MinDays: 3, IncludeWeekend: true, IncludeBusiestDay: true,
			WeakerReason: "the seed's worked example: one week of dual writes"},
		Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.orders"},
		New: reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}
}

// create checks the spec is refused without a dedup rule or without the weaker rule's reason,
// then creates the migration with it.
func (w *workedExample) create(spec reconcile.Spec) {
	w.t.Helper()
	bad := spec
	bad.DedupNew = ""
	if _, err := w.svc.Create(w.ctx, reconcile.CreateInput{OldAssetID: w.oldID, NewAssetID: w.newID, Owner: "team-orders", Spec: bad}); !errors.Is(err, catalog.ErrInvalid) {
		w.t.Fatalf("a spec without a dedup rule: %v; want it refused (the rule is never assumed)", err)
	}
	weak := spec
	weak.Cutover.WeakerReason = ""
	if _, err := w.svc.Create(w.ctx, reconcile.CreateInput{OldAssetID: w.oldID, NewAssetID: w.newID, Owner: "team-orders", Spec: weak}); !errors.Is(err, catalog.ErrInvalid) ||
		!strings.Contains(err.Error(), "weaker than the floor") {
		w.t.Fatalf("a rule of 4 runs over 3 days without a reason: %v; want it refused", err)
	}
	m, err := w.svc.Create(w.ctx, reconcile.CreateInput{OldAssetID: w.oldID, NewAssetID: w.newID, Owner: "team-orders", Spec: spec})
	must(w.t, err)
	w.m = m
}

// stagedRetryFault writes Monday's and Tuesday's orders, 20 a day; a retry without an
// idempotency key writes orders 5, 6 and 7 (Monday) and 25 (Tuesday) twice into the new side,
// and the first run finds the duplication.
func (w *workedExample) stagedRetryFault() {
	w.t.Helper()
	mon := w.mon
	w.write(orders(1, 20, mon), 5, 6, 7)
	w.write(orders(21, 20, mon.AddDate(0, 0, 1)), 25)
	w.c.Set(mon.AddDate(0, 0, 2).Add(2 * time.Hour))
	r1, err := w.svc.Reconcile(w.ctx, w.m.ID)
	must(w.t, err)
	// PostgreSQL counts and hashes its 40 records itself, by window and segment in one scan;
	// the Iceberg side is streamed once for its figures and segments (44); then both sides'
	// records of the segments holding the 4 repeated keys are read (40 and 44) and kept: at
	// least their 8 new and 4 old records, fewer than all 84.
	if r1.Clean || len(r1.Windows) != 2 || r1.Cost.Compared != 84 || r1.Cost.Counted != 40 || r1.Cost.RowsOld != 40 || r1.Cost.RowsNew != 88 ||
		r1.Cost.Deep != 2 || r1.Cost.Kept < 12 || r1.Cost.Kept >= 84 {
		w.t.Fatalf("first run: clean %v, %d windows, cost %+v; want not clean, 2 windows, 84 compared, 40 counted by PostgreSQL, 40 / 88 read, 2 deep, 12-83 kept",
			r1.Clean, len(r1.Windows), r1.Cost)
	}
	for i, want := range []int64{3, 1} {
		win := r1.Windows[i]
		if !slices.Equal(win.Classes, []reconcile.Class{reconcile.Duplication}) || win.New.DuplicateKeys != want || win.New.Rows != 20+want || win.Old.Rows != 20 {
			w.t.Fatalf("window %s: classes %v, new duplicate keys %d, rows %d new / %d old; want duplication only, %d, %d / 20",
				win.Start.Format("Mon"), win.Classes, win.New.DuplicateKeys, win.New.Rows, win.Old.Rows, want, 20+want)
		}
	}
	fs, err := w.svc.Findings(w.ctx, w.m.ID)
	must(w.t, err)
	if len(fs) != 2 || fs[0].Kind != "duplication" || fs[0].Side != "new" || fs[0].Owner != "team-orders" || fs[0].ClosedAt != nil {
		w.t.Fatalf("findings after the first run: %+v", fs)
	}
}

// fixThenStagedDivergence applies the fix, then stages a divergence in one order's amount, which
// the next run finds and the duplications close; then the new side is put right again. It
// returns the run that found the divergence.
func (w *workedExample) fixThenStagedDivergence() reconcile.Run {
	w.t.Helper()
	mon := w.mon
	// The fix: an idempotency key on the write path, and history deduplicated by the stated
	// rule (first wins): the new side is rewritten with one record per order.
	w.newSide(append(orders(1, 20, mon), orders(21, 20, mon.AddDate(0, 0, 1))...), true)
	// A staged divergence: one order's amount differs on the new side.
	changed := append(orders(1, 20, mon), orders(21, 20, mon.AddDate(0, 0, 1))...)
	changed[29].cents += 100
	w.newSide(changed, true)
	w.c.Set(mon.AddDate(0, 0, 2).Add(3 * time.Hour))
	r2, err := w.svc.Reconcile(w.ctx, w.m.ID)
	must(w.t, err)
	tue := r2.Windows[1]
	if r2.Clean || !slices.Equal(tue.Classes, []reconcile.Class{reconcile.Divergence}) || tue.Differing != 1 ||
		!slices.Equal(tue.DifferingColumns, []string{"amount"}) || len(tue.Sample) != 1 || tue.Sample[0].Key != "30" ||
		tue.Sample[0].Old != "12.1" || tue.Sample[0].New != "13.1" || !r2.Windows[0].Clean() {
		w.t.Fatalf("staged divergence: clean %v, Tuesday %+v, Monday classes %v", r2.Clean, tue, r2.Windows[0].Classes)
	}
	fs, err := w.svc.Findings(w.ctx, w.m.ID)
	must(w.t, err)
	open := 0
	for _, f := range fs {
		if f.ClosedAt == nil {
			open++
			if f.Kind != "divergence" {
				w.t.Fatalf("a %s finding is still open after the history was deduplicated: %+v", f.Kind, f)
			}
		}
	}
	if open != 1 || len(fs) != 3 {
		w.t.Fatalf("findings after the divergence: %+v; want the two duplications closed and one divergence open", fs)
	}
	w.newSide(append(orders(1, 20, mon), orders(21, 20, mon.AddDate(0, 0, 1))...), true)
	return r2
}

// stagedLag stages a lag: Wednesday's orders reached the old side, not yet the new one, and the
// window ended less than the lag bound ago: lag, which is fine. Then the new side converges.
func (w *workedExample) stagedLag(wed time.Time) {
	w.t.Helper()
	for _, o := range orders(41, 20, wed) {
		_, err := w.pg.ExecContext(w.ctx, `INSERT INTO public.orders VALUES ($1, $2, $3, $4)`, o.id, o.at, fmt.Sprintf("%d.%02d", o.cents/100, o.cents%100), o.customer)
		must(w.t, err)
	}
	w.c.Set(wed.Add(23 * time.Hour))
	r3, err := w.svc.Reconcile(w.ctx, w.m.ID)
	must(w.t, err)
	if !r3.Clean || !slices.Equal(r3.Windows[2].Classes, []reconcile.Class{reconcile.Lag}) || r3.Windows[2].Missing != 20 {
		w.t.Fatalf("staged lag: clean %v, Wednesday %+v", r3.Clean, r3.Windows[2])
	}
	w.newSide(orders(41, 20, wed), false) // it converges
}

// cleanRunsToSunday runs Thursday to Sunday: idempotent dual writes, a run at the end of each
// day, checking the streak and readiness as it grows; then every finding is closed. Thursday is
// the new table's busiest write day; r2 is the run that broke the streak.
func (w *workedExample) cleanRunsToSunday(wed time.Time, r2 reconcile.Run) {
	w.t.Helper()
	for i, day := range []time.Time{wed.AddDate(0, 0, 1), wed.AddDate(0, 0, 2), wed.AddDate(0, 0, 3), wed.AddDate(0, 0, 4)} {
		w.c.Set(day.Add(12 * time.Hour))
		writes := 5
		if i == 0 {
			writes = 50
		}
		var recs []usage.Record
		for wr := range writes {
			recs = append(recs, usage.Record{AssetID: w.newID, Kind: "write", Actor: "orders-service", At: w.c.Now(),
				IdempotencyKey: fmt.Sprintf("w-%d-%d", i, wr)})
		}
		_, err := w.use.Record(w.ctx, recs)
		must(w.t, err)
		w.write(orders(61+20*i, 20, day))
		w.c.Set(day.Add(23 * time.Hour))
		r, err := w.svc.Reconcile(w.ctx, w.m.ID)
		must(w.t, err)
		if !r.Clean {
			w.t.Fatalf("run on %s: not clean: %v", day.Format("Mon"), r.Causes)
		}
		st, err := w.svc.Status(w.ctx, w.m.ID)
		must(w.t, err)
		if st.Streak != i+2 {
			w.t.Fatalf("after %s: streak %d; want %d", day.Format("Mon"), st.Streak, i+2)
		}
		if day.Weekday() == time.Friday {
			// Three clean runs over two days, no weekend yet: not ready, and cutover refused.
			if st.Ready || len(st.Missing) != 3 || st.BusiestDay == nil || !st.BusiestDay.Equal(wed.AddDate(0, 0, 1)) || !st.SpansBusiest {
				w.t.Fatalf("Friday: ready %v, missing %v, busiest day %v (spanned %v)", st.Ready, st.Missing, st.BusiestDay, st.SpansBusiest)
			}
			if _, err := w.svc.CutOver(w.ctx, w.m.ID, reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.orders"}); !errors.Is(err, catalog.ErrConflict) {
				w.t.Fatalf("cutover before the rule holds: %v", err)
			}
		}
		// Saturday's run started before Saturday ended: the weekend is not compared yet.
		if day.Weekday() == time.Saturday && (st.Ready || st.Weekend || len(st.Missing) != 1 || !strings.Contains(st.Missing[0], "weekend")) {
			w.t.Fatalf("Saturday: ready %v, weekend %v, missing %v; want only the weekend missing", st.Ready, st.Weekend, st.Missing)
		}
		if day.Weekday() == time.Sunday && (!st.Ready || st.Broken == nil || st.Broken.ID != r2.ID || st.WeekendDay == nil || st.WeekendDay.Weekday() != time.Saturday) {
			w.t.Fatalf("Sunday: ready %v, missing %v, broken by %v, weekend day %v; want ready, Saturday spanned", st.Ready, st.Missing, st.Broken, st.WeekendDay)
		}
	}
	fs, err := w.svc.Findings(w.ctx, w.m.ID)
	must(w.t, err)
	for _, f := range fs {
		if f.ClosedAt == nil {
			w.t.Fatalf("finding still open after clean runs: %+v", f)
		}
	}
}

// cutOver cuts over naming the archive of the old side (a copy of the table kept apart; one
// Tidemark cannot read is refused); after it, a read of the old table is flagged.
func (w *workedExample) cutOver() {
	w.t.Helper()
	_, err := w.pg.ExecContext(w.ctx, `CREATE TABLE public.orders_archive AS SELECT * FROM public.orders`)
	must(w.t, err)
	archive := reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.orders_archive"}
	if _, err := w.svc.CutOver(w.ctx, w.m.ID, reconcile.SourceSpec{Kind: reconcile.SourceExternal}); !errors.Is(err, catalog.ErrInvalid) {
		w.t.Fatalf("cutover with an archive Tidemark cannot read: %v; want it refused", err)
	}
	cut, err := w.svc.CutOver(w.ctx, w.m.ID, archive)
	must(w.t, err)
	if cut.State != "cut_over" || cut.CutOverAt == nil || cut.Archive == nil || cut.Archive.Table != "public.orders_archive" {
		w.t.Fatalf("after cutover: %+v", cut)
	}
	// Creating, running and cutting over make the server read databases: each is audited on the
	// old asset, naming the migration; refused attempts are not.
	events, _, err := w.cat.Audit(w.ctx, w.oldID, uuid.Nil, 500)
	must(w.t, err)
	count := map[string]int{}
	for _, ev := range events {
		if strings.HasPrefix(ev.Action, "migration.") {
			if !strings.Contains(string(ev.After), w.m.ID.String()) {
				w.t.Fatalf("audit %s does not name the migration: %s", ev.Action, ev.After)
			}
			count[ev.Action]++
		}
	}
	if count["migration.create"] != 1 || count["migration.run"] == 0 || count["migration.cutover"] != 1 {
		w.t.Fatalf("migration audit entries: %v; want one create, the runs, one cutover", count)
	}
	// After the cutover, a read of the old table is flagged.
	w.c.Set(w.c.Now().Add(time.Hour))
	_, err = w.use.Record(w.ctx, []usage.Record{{AssetID: w.oldID, Kind: "read", Actor: "forgotten-report", At: w.c.Now(), IdempotencyKey: "late-read"}})
	must(w.t, err)
	st, err := w.svc.Status(w.ctx, w.m.ID)
	must(w.t, err)
	if st.OldReadsSinceCutover != 1 || st.OldLastRead == nil {
		w.t.Fatalf("after cutover: %d reads of the old asset flagged; want 1", st.OldReadsSinceCutover)
	}
}

// retireAfterFinalRun checks retirement waits for a clean final reconciliation against the
// archive: none has run, then one finds the archive lacks an order, then the archive is
// complete. Then it checks the runs kept.
func (w *workedExample) retireAfterFinalRun() {
	w.t.Helper()
	if ok, _, why, err := w.svc.RetirementGate(w.ctx, w.oldID); err != nil || ok || !strings.Contains(why, "against the archive") {
		w.t.Fatalf("retirement before the final run: %v %q %v", ok, why, err)
	}
	_, err := w.pg.ExecContext(w.ctx, `DELETE FROM public.orders_archive WHERE order_id = 3`)
	must(w.t, err)
	w.c.Set(w.c.Now().Add(time.Hour))
	short, err := w.svc.Reconcile(w.ctx, w.m.ID)
	must(w.t, err)
	if short.Clean || short.Against != "archive" || short.Windows[0].Extra != 1 {
		w.t.Fatalf("final run against an archive lacking an order: clean %v, against %s, Monday %+v", short.Clean, short.Against, short.Windows[0])
	}
	if ok, _, why, err := w.svc.RetirementGate(w.ctx, w.oldID); err != nil || ok || !strings.Contains(why, "was not clean") {
		w.t.Fatalf("retirement after an unclean final run: %v %q %v", ok, why, err)
	}
	_, err = w.pg.ExecContext(w.ctx, `INSERT INTO public.orders_archive SELECT * FROM public.orders WHERE order_id = 3`)
	must(w.t, err)
	w.c.Set(w.c.Now().Add(time.Hour))
	final, err := w.svc.Reconcile(w.ctx, w.m.ID)
	must(w.t, err)
	if ok, evidence, why, err := w.svc.RetirementGate(w.ctx, w.oldID); err != nil || !ok || evidence != final.ID || !final.Clean || final.Against != "archive" {
		w.t.Fatalf("retirement after a clean final run: %v, evidence %s (final %s, clean %v), %q %v", ok, evidence, final.ID, final.Clean, why, err)
	}
	runs, err := w.svc.Runs(w.ctx, w.m.ID, 100)
	must(w.t, err)
	if len(runs) != 9 || !strings.Contains(strings.Join(runs[len(runs)-1].Causes, " "), "more than once on the new side") {
		w.t.Fatalf("runs kept: %d; the first one's causes %v", len(runs), runs[len(runs)-1].Causes)
	}
}

// mustCatalog returns a catalog over db, or the test stops.
func mustCatalog(tb testing.TB, db *storage.DB, opts ...catalog.Option) *catalog.Catalog {
	tb.Helper()
	cat, err := catalog.New(db, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// mustLineage returns a lineage service over db, or the test stops.
func mustLineage(tb testing.TB, db *storage.DB, cat *catalog.Catalog, opts ...lineage.Option) *lineage.Service {
	tb.Helper()
	lin, err := lineage.New(db, cat, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return lin
}

// mustReconcile returns a reconcile service over db, or the test stops.
func mustReconcile(tb testing.TB, db *storage.DB, cat *catalog.Catalog, tbls *tables.Service, use *usage.Service, opts ...reconcile.Option) *reconcile.Service {
	tb.Helper()
	svc, err := reconcile.New(db, cat, tbls, use, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return svc
}
