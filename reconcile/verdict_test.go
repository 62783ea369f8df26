package reconcile_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/reconcile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

// pair is a migration between a PostgreSQL table (old) and an Iceberg table written by
// iceberg-go (new), on one store.
type pair struct {
	*dualWrite
	cat *catalog.Catalog
	svc *reconcile.Service
	use *usage.Service
	old uuid.UUID
	new uuid.UUID
}

func newPair(t *testing.T, db *storage.DB, c *clock) *pair {
	t.Helper()
	ctx := context.Background()
	cat := mustCatalog(t, db, catalog.WithClock(c.Now))
	tbls, err := tables.New(db, cat, tables.WithClock(c.Now), tables.WithWarehouseRoots(os.TempDir()))
	must(t, err)
	use, err := usage.New(db, cat, usage.WithClock(c.Now))
	must(t, err)
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	_, err = pg.ExecContext(ctx, `CREATE TABLE public.orders (order_id bigint NOT NULL, ordered_at timestamptz NOT NULL, amount numeric(10,2), customer text)`)
	must(t, err)
	lake := tablestest.NewLake(t)
	tbl, err := lake.Cat.CreateTable(ctx, table.Identifier{"db", "orders"}, orderSchema)
	must(t, err)
	d := &dualWrite{t: t, ctx: ctx, pg: pg, tbl: tbl, tables: tbls}
	newTable, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
	must(t, err)
	old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "postgres://shop:5432", Name: "shop.public.orders"})
	must(t, err)
	svc := mustReconcile(t, db, cat, tbls, use, reconcile.WithClock(c.Now), reconcile.WithConnection("shop", pg))
	return &pair{dualWrite: d, cat: cat, svc: svc, use: use, old: old.Asset.ID, new: newTable.AssetID}
}

func (p *pair) migrate(since time.Time, edit func(*reconcile.Spec)) reconcile.Migration {
	p.t.Helper()
	spec := reconcile.Spec{KeyColumns: []string{"order_id"}, TimeColumn: "ordered_at", Columns: []string{"amount", "customer"},
		WindowSeconds: 86400, Since: since, DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, LagBoundSeconds: 3600, QuoteValues: true,
		Cutover: reconcile.CutoverRule{MinCleanRuns: 3, MinDays: 7},
		Old:     reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.orders"},
		New:     reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}
	if edit != nil {
		edit(&spec)
	}
	m, err := p.svc.Create(p.ctx, reconcile.CreateInput{OldAssetID: p.old, NewAssetID: p.new, Owner: "team-orders", Spec: spec})
	must(p.t, err)
	return m
}

// oldSide writes orders to the PostgreSQL side only.
func (p *pair) oldSide(os []order) {
	for _, o := range os {
		_, err := p.pg.ExecContext(p.ctx, `INSERT INTO public.orders VALUES ($1, $2, $3, $4)`, o.id, o.at, fmt.Sprintf("%d.%02d", o.cents/100, o.cents%100), o.customer)
		must(p.t, err)
	}
}

func every(from, n int, start time.Time, step time.Duration) []order {
	out := make([]order, n)
	for i := range out {
		id := int64(from + i)
		out[i] = order{id: id, at: start.Add(time.Duration(i) * step), cents: 1000 + id*7, customer: fmt.Sprintf("c%d", id%5)}
	}
	return out
}

// TestTimeZoneShiftIsMoved: the new side holds the same keys and values, but the orders placed
// after 22:00 carry a time 2 h later (a writer's time-zone bug): the windows' counts differ and
// the run is not clean; the records are classified moved, with the offset, and a finding opens.
func TestTimeZoneShiftIsMoved(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon}
		p := newPair(t, db, c)
		m := p.migrate(mon, nil)
		orders := every(1, 144, mon, 20*time.Minute) // Monday and Tuesday, every 20 minutes
		p.oldSide(orders)
		shifted := slices.Clone(orders)
		moved := 0
		for i := range shifted {
			if h := shifted[i].at.Hour(); h >= 22 {
				shifted[i].at = shifted[i].at.Add(2 * time.Hour)
				moved++
			}
		}
		p.newSide(shifted, false)
		c.Set(mon.AddDate(0, 0, 3))
		r, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		if r.Clean || len(r.Windows) != 3 {
			t.Fatalf("run: clean %v, %d windows, causes %v; want not clean", r.Clean, len(r.Windows), r.Causes)
		}
		monW, tueW, wedW := r.Windows[0], r.Windows[1], r.Windows[2]
		for _, w := range []reconcile.WindowResult{monW, tueW, wedW} {
			if !slices.Contains(w.Classes, reconcile.Moved) || w.Clean() {
				t.Fatalf("window %s: classes %v; want moved", w.Start.Format("Mon"), w.Classes)
			}
		}
		if monW.Moved != int64(moved/2) || tueW.MovedIn != int64(moved/2) || wedW.MovedIn != int64(moved/2) ||
			len(monW.MovedOffsets) != 1 || monW.MovedOffsets[0].Seconds != 7200 || monW.Old.Rows != 72 || monW.New.Rows != 72-int64(moved/2) {
			t.Fatalf("Monday %+v, Tuesday moved in %d, Wednesday moved in %d", monW, tueW.MovedIn, wedW.MovedIn)
		}
		if monW.Missing != 0 || monW.Extra != 0 || monW.Differing != 0 || slices.Contains(monW.Classes, reconcile.Divergence) {
			t.Fatalf("Monday: the keys and values are the same, only the times moved: %+v", monW)
		}
		if len(monW.Sample) == 0 || monW.Sample[0].Column != "ordered_at" || monW.Sample[0].Old != "2026-11-02T22:00:00Z" || monW.Sample[0].New != "2026-11-03T00:00:00Z" {
			t.Fatalf("Monday's sample %+v", monW.Sample)
		}
		fs, err := p.svc.Findings(p.ctx, m.ID)
		must(t, err)
		if !slices.ContainsFunc(fs, func(f reconcile.Finding) bool { return f.Kind == "moved" && f.ClosedAt == nil }) {
			t.Fatalf("findings %+v; want an open moved finding", fs)
		}
	})
}

// TestRetryInTheNextWindowIsDuplication: a retry that lands a day later puts one key in two
// windows on the new side, each holding it once: duplication in both, the key sampled with
// both windows.
func TestRetryInTheNextWindowIsDuplication(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon}
		p := newPair(t, db, c)
		m := p.migrate(mon, nil)
		orders := append(every(1, 10, mon, time.Hour), every(11, 10, mon.AddDate(0, 0, 1), time.Hour)...)
		p.oldSide(orders)
		retried := orders[4]
		retried.at = retried.at.AddDate(0, 0, 1) // the retry's own time, a day later
		p.newSide(append(slices.Clone(orders), retried), false)
		c.Set(mon.AddDate(0, 0, 3))
		r, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		if r.Clean || len(r.Windows) != 2 {
			t.Fatalf("run: clean %v, %d windows; want not clean", r.Clean, len(r.Windows))
		}
		for _, w := range r.Windows {
			if !slices.Contains(w.Classes, reconcile.Duplication) || w.New.DuplicateKeys != 1 || len(w.Duplicates) != 1 {
				t.Fatalf("window %s: classes %v, new duplicate keys %d, duplicates %+v; want duplication of one key", w.Start.Format("Mon"), w.Classes, w.New.DuplicateKeys, w.Duplicates)
			}
			d := w.Duplicates[0]
			if d.Key != "5" || d.Side != "new" || d.Records != 2 || len(d.Windows) != 2 || !d.Windows[0].Equal(mon) || !d.Windows[1].Equal(mon.AddDate(0, 0, 1)) {
				t.Fatalf("duplicate %+v; want key 5 on the new side in Monday's and Tuesday's windows", d)
			}
			if len(w.Snapshots) != 1 || w.Snapshots[0].ID != p.tbl.CurrentSnapshot().SnapshotID || w.Snapshots[0].Operation != "append" {
				t.Fatalf("snapshots named %+v; want the one append that wrote both windows", w.Snapshots)
			}
		}
		// A later run reuses the new side's figures (nothing changed there) and still looks into
		// the segment holding the repeated key: the same verdict.
		c.Set(c.Now().Add(time.Hour))
		again, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		if again.Cost.Reused == 0 || again.Summary.Classes[reconcile.Duplication] != 2 || again.Clean {
			t.Fatalf("the incremental run: cost %+v, classes %v", again.Cost, again.Summary.Classes)
		}
	})
}

// TestHistoryWithAStatedRule: a status log keeps versions of an order on both sides. Stated as
// history with the latest standing, it is clean, and its versions are counted; a retried
// identical record (same time, same values) is still duplication. Stated as unique, the same
// data is duplication: the rule a team states decides.
func TestHistoryWithAStatedRule(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon}
		p := newPair(t, db, c)
		history := p.migrate(mon, func(s *reconcile.Spec) {
			s.DedupOld, s.DedupNew = reconcile.LastWins, reconcile.LastWins
			s.Old.Keys, s.New.Keys = reconcile.HistoryKeys, reconcile.HistoryKeys
		})
		unique := p.migrate(mon, nil)
		var log []order
		for i := range 10 {
			placed := order{id: int64(i + 1), at: mon.Add(time.Duration(i) * time.Hour), cents: 1000, customer: "placed"}
			shipped := placed
			shipped.at, shipped.customer = placed.at.Add(20*time.Hour), "shipped" // some the next day
			log = append(log, placed, shipped)
		}
		p.oldSide(log)
		p.newSide(log, false)
		c.Set(mon.AddDate(0, 0, 3))
		r, err := p.svc.Reconcile(p.ctx, history.ID)
		must(t, err)
		var versions int64
		for _, w := range r.Windows {
			versions += w.New.Versions
			if w.Old.Versions != w.New.Versions {
				t.Fatalf("window %s: versions %d old, %d new", w.Start.Format("Mon"), w.Old.Versions, w.New.Versions)
			}
		}
		if !r.Clean || versions != 10 {
			t.Fatalf("history with its rule: clean %v, %d versions, causes %v; want clean with 10 versions", r.Clean, versions, r.Causes)
		}
		u, err := p.svc.Reconcile(p.ctx, unique.ID)
		must(t, err)
		if u.Clean || u.Summary.Classes[reconcile.Duplication] == 0 {
			t.Fatalf("the same data stated unique: clean %v, classes %v; want duplication", u.Clean, u.Summary.Classes)
		}
		p.newSide([]order{log[5]}, false) // a retry of one status record, identical
		c.Set(c.Now().Add(time.Hour))
		r, err = p.svc.Reconcile(p.ctx, history.ID)
		must(t, err)
		if r.Clean || r.Summary.Classes[reconcile.Duplication] != 1 || !strings.Contains(strings.Join(r.Causes, " "), "the same record twice") {
			t.Fatalf("history with a retried identical record: clean %v, classes %v, causes %v; want one window of duplication", r.Clean, r.Summary.Classes, r.Causes)
		}
	})
}

// TestIncrementalRunReadsWhatChanged: after a full run, a day of new orders on both sides is
// read alone on the Iceberg side (the other windows' figures are the previous run's); a change
// the new side makes to an old window afterwards is read again, because the snapshot that made
// it removed and added files whose bounds cover that window, and it is found.
func TestIncrementalRunReadsWhatChanged(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon}
		p := newPair(t, db, c)
		m := p.migrate(mon, nil)
		var all []order
		for d := range 10 { // ten days, one file a day on the new side
			day := every(1+d*24, 24, mon.AddDate(0, 0, d), time.Hour)
			p.oldSide(day)
			p.newSide(day, false)
			all = append(all, day...)
		}
		c.Set(mon.AddDate(0, 0, 10).Add(time.Hour))
		full, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		if !full.Clean || full.Cost.Reused != 0 || full.Cost.RowsNew != 240 || full.Cost.NewSnapshot == nil {
			t.Fatalf("full run: clean %v, cost %+v, causes %v", full.Clean, full.Cost, full.Causes)
		}
		day := every(241, 24, mon.AddDate(0, 0, 10), time.Hour)
		p.oldSide(day)
		p.newSide(day, false)
		all = append(all, day...)
		c.Set(mon.AddDate(0, 0, 11).Add(time.Hour))
		inc, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		// Read again: the new day, and the window the previous run was in (day 10): 24 records.
		if !inc.Clean || inc.Cost.Reused != 10 || inc.Cost.RowsNew != 24 || len(inc.Windows) != 11 {
			t.Fatalf("incremental run: clean %v, %d windows, cost %+v, causes %v", inc.Clean, len(inc.Windows), inc.Cost, inc.Causes)
		}
		// The new side rewrites its data with one amount changed on day 3: every file is replaced.
		changed := slices.Clone(all)
		changed[3*24+5].cents += 1
		p.newSide(changed, true)
		c.Set(c.Now().Add(time.Hour))
		after, err := p.svc.Reconcile(p.ctx, m.ID)
		must(t, err)
		if after.Clean || after.Cost.Reused != 0 || after.Summary.Classes[reconcile.Divergence] != 1 {
			t.Fatalf("after a rewrite of old windows: clean %v, cost %+v, classes %v", after.Clean, after.Cost, after.Summary.Classes)
		}
		// Only day 3 differs, and in it only the key-range segment holding the changed order is
		// held and compared record by record, not the window's 48 records.
		w3 := after.Windows[3]
		if after.Cost.Deep != 1 || after.Cost.Kept < 2 || after.Cost.Kept >= 48 || w3.Differing != 1 || w3.Old.Rows != 24 || w3.New.Rows != 24 {
			t.Fatalf("bisection: deep %d, kept %d, day 3 %+v", after.Cost.Deep, after.Cost.Kept, w3)
		}
	})
}

// TestCanonicalFormAcrossTypes: the same facts in a PostgreSQL table and in an Iceberg table
// written by iceberg-go, over integers of two widths, booleans, dates, timestamps with and without
// a zone, decimals with trailing zeros, text and NULLs in every column, compare clean: the
// figures PostgreSQL computes in SQL equal the ones Tidemark computes from Iceberg's values. One
// changed value in one type at a time is then found, in its column.
func TestCanonicalFormAcrossTypes(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		mon := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
		c := &clock{t: mon.AddDate(0, 0, 3)}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		tbls, err := tables.New(db, cat, tables.WithClock(c.Now), tables.WithWarehouseRoots(os.TempDir()))
		must(t, err)
		ft := newFactTables(t, ctx, tbls)
		facts, changes := canonicalFacts(mon)
		ft.write(facts)
		newTable, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: ft.tbl.MetadataLocation()})
		must(t, err)
		old, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "pg", Name: "facts"})
		must(t, err)
		svc := mustReconcile(t, db, cat, tbls, nil, reconcile.WithClock(c.Now), reconcile.WithConnection("shop", ft.pg))
		m, err := svc.Create(ctx, reconcile.CreateInput{OldAssetID: old.Asset.ID, NewAssetID: newTable.AssetID, Owner: "o", Spec: reconcile.Spec{
			KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"n", "ok", "d", "local", "amount", "name"}, WindowSeconds: 86400, Since: mon,
			DedupOld: reconcile.FirstWins, DedupNew: reconcile.FirstWins, Cutover: reconcile.CutoverRule{MinCleanRuns: 3, MinDays: 7},
			Old: reconcile.SourceSpec{Kind: reconcile.SourcePostgres, Connection: "shop", Table: "public.facts"}, New: reconcile.SourceSpec{Kind: reconcile.SourceIceberg}}})
		must(t, err)
		r, err := svc.Reconcile(ctx, m.ID)
		must(t, err)
		if !r.Clean || r.Cost.Counted != 4 || r.Cost.Kept != 0 {
			t.Fatalf("the same facts: clean %v, cost %+v, causes %v; want clean, PostgreSQL's figures equal to Iceberg's", r.Clean, r.Cost, r.Causes)
		}
		for _, tc := range changes {
			changed := slices.Clone(facts)
			tc.change(&changed[0])
			ft.write(changed)
			// Restore the old side: write put the changed facts in both; the new side keeps them.
			_, err := ft.pg.ExecContext(ctx, `TRUNCATE public.facts`)
			must(t, err)
			for _, f := range facts {
				ft.oldSide(f)
			}
			c.Set(c.Now().Add(time.Minute))
			r, err := svc.Reconcile(ctx, m.ID)
			must(t, err)
			w := r.Windows[0]
			if r.Clean || w.Differing != 1 || !slices.Equal(w.DifferingColumns, []string{tc.column}) {
				t.Fatalf("%s changed: clean %v, Monday %+v", tc.column, r.Clean, w)
			}
		}
	})
}

// fact is one row of TestCanonicalFormAcrossTypes, a value of each type; nil is NULL.
type fact struct {
	id     int64
	at     time.Time
	n      *int32
	ok     *bool
	d      *time.Time
	local  *time.Time
	amount *int64 // ten-thousandths
	name   *string
}

// factChange changes one fact's value in column.
type factChange struct {
	column string
	change func(*fact)
}

// canonicalFacts are the facts compared, from mon, and the changes made to the first of them,
// one column at a time.
func canonicalFacts(mon time.Time) ([]fact, []factChange) {
	i32 := func(v int32) *int32 { return &v }
	b := func(v bool) *bool { return &v }
	tm := func(v time.Time) *time.Time { return &v }
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	facts := []fact{
		{1, mon.Add(time.Hour), i32(-7), b(true), tm(mon), tm(mon.Add(90 * time.Minute)), i64(125000), str("plain")},
		{2, mon.Add(23*time.Hour + 59*time.Minute + 59*time.Second + 999999*time.Microsecond), i32(0), b(false), tm(mon.AddDate(-26, 0, 0)),
			tm(time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC)), i64(-1000), str("naïve café 東京 'quoted' \\back")},
		{3, mon.Add(30 * time.Hour), nil, nil, nil, nil, nil, nil},
		{4, mon.Add(50 * time.Hour), i32(2147483647), b(true), tm(mon.AddDate(0, 0, 2)), tm(mon.Add(50 * time.Hour)), i64(0), str("")},
	}
	changes := []factChange{
		{"n", func(f *fact) { f.n = i32(-8) }},
		{"ok", func(f *fact) { f.ok = b(false) }},
		{"d", func(f *fact) { f.d = tm(mon.AddDate(0, 0, 1)) }},
		{"local", func(f *fact) { f.local = tm(f.local.Add(time.Microsecond)) }},
		{"amount", func(f *fact) { f.amount = i64(125001) }},
		{"name", func(f *fact) { f.name = nil }},
	}
	return facts, changes
}

// factTables are the two sides holding the facts: public.facts in PostgreSQL (old) and db.facts
// in Iceberg (new), registered with tbls.
type factTables struct {
	t    *testing.T
	ctx  context.Context
	pg   *sql.DB
	tbl  *table.Table
	tbls *tables.Service
}

// newFactTables creates both sides, empty.
func newFactTables(t *testing.T, ctx context.Context, tbls *tables.Service) *factTables {
	t.Helper()
	pg, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	must(t, err)
	t.Cleanup(func() { pg.Close() })
	_, err = pg.ExecContext(ctx, `CREATE TABLE public.facts (id bigint, at timestamptz, n int, ok boolean, d date, local timestamp,
			amount numeric(12,4), name text)`)
	must(t, err)
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 6, Name: "local", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 7, Name: "amount", Type: iceberg.DecimalTypeOf(12, 4)},
		iceberg.NestedField{ID: 8, Name: "name", Type: iceberg.PrimitiveTypes.String})
	lake := tablestest.NewLake(t)
	tbl, err := lake.Cat.CreateTable(ctx, table.Identifier{"db", "facts"}, schema)
	must(t, err)
	return &factTables{t: t, ctx: ctx, pg: pg, tbl: tbl, tbls: tbls}
}

// oldSide inserts f into the PostgreSQL side.
func (ft *factTables) oldSide(f fact) {
	ft.t.Helper()
	var amount any
	if f.amount != nil {
		amount = fmt.Sprintf("%d.%04d", *f.amount/10000, abs(*f.amount%10000))
		if *f.amount < 0 && *f.amount > -10000 {
			amount = fmt.Sprintf("-0.%04d", abs(*f.amount))
		}
	}
	_, err := ft.pg.ExecContext(ft.ctx, `INSERT INTO public.facts VALUES ($1, $2, $3, $4, $5::date, $6::timestamp, $7, $8)`, f.id, f.at,
		f.n, f.ok, dateArg(f.d), localArg(f.local), amount, f.name)
	must(ft.t, err)
}

// write replaces both sides' rows with fs and registers the Iceberg side's new metadata.
func (ft *factTables) write(fs []fact) {
	ft.t.Helper()
	_, err := ft.pg.ExecContext(ft.ctx, `TRUNCATE public.facts`)
	must(ft.t, err)
	sc, err := table.SchemaToArrowSchema(ft.tbl.Schema(), nil, false, false)
	must(ft.t, err)
	rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer rb.Release()
	for _, f := range fs {
		ft.oldSide(f)
		rb.Field(0).(*array.Int64Builder).Append(f.id)
		rb.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(f.at.UnixMicro()))
		appendOr(rb.Field(2), f.n == nil, func() { rb.Field(2).(*array.Int32Builder).Append(*f.n) })
		appendOr(rb.Field(3), f.ok == nil, func() { rb.Field(3).(*array.BooleanBuilder).Append(*f.ok) })
		appendOr(rb.Field(4), f.d == nil, func() { rb.Field(4).(*array.Date32Builder).Append(arrow.Date32FromTime(*f.d)) })
		appendOr(rb.Field(5), f.local == nil, func() { rb.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(f.local.UnixMicro())) })
		appendOr(rb.Field(6), f.amount == nil, func() { rb.Field(6).(*array.Decimal128Builder).Append(decimal128.FromI64(*f.amount)) })
		appendOr(rb.Field(7), f.name == nil, func() { rb.Field(7).(*array.StringBuilder).Append(*f.name) })
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	must(ft.t, err)
	ft.tbl, err = ft.tbl.Overwrite(ft.ctx, rdr, nil)
	must(ft.t, err)
	_, _, err = ft.tbls.Register(ft.ctx, tables.RegisterInput{MetadataLocation: ft.tbl.MetadataLocation()})
	must(ft.t, err)
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func appendOr(b array.Builder, isNull bool, fn func()) {
	if isNull {
		b.AppendNull()
		return
	}
	fn()
}

func dateArg(d *time.Time) any {
	if d == nil {
		return nil
	}
	return d.Format(time.DateOnly)
}

func localArg(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Format("2006-01-02 15:04:05.999999")
}
