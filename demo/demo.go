// Package demo fills an empty Tidemark with a demo worth browsing: a real Iceberg warehouse,
// lineage, usage across a rename, scans and the proposals they lead to.
package demo

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
	"github.com/tidemark/tidemark/versions"
)

// sequences are captured OpenLineage event sequences (see testdata/openlineage/SOURCES.md);
// the lineage and handler tests read them from here too.
//
//go:embed sequences
var demoSequences embed.FS

// demoSchema is the demo tables' schema.
var demoSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

// Setup fills an empty Tidemark with true things to look at, under <dataDir>/demo: a real
// Iceberg warehouse written with iceberg-go (an hourly-partitioned table of tiny files, a table
// renamed through its catalog after being read under its old name, a table nobody read for
// months, leftover orphan files, a data file deleted by hand), the OpenLineage sequences from
// testdata plus lineage between the tables, usage across the rename, a bad append and what it
// poisoned (versionStory), two cleanup scans and the proposals they lead to. It returns the Iceberg catalog configuration to serve with; a second
// run finds it done and only returns the path.
func Setup(ctx context.Context, store *storage.DB, dataDir string, log *slog.Logger) (string, error) {
	dir, err := filepath.Abs(filepath.Join(dataDir, "demo"))
	if err != nil {
		return "", err
	}
	cfgPath := filepath.Join(dir, "catalogs.json")
	if _, err := os.Stat(filepath.Join(dir, "ready")); err == nil {
		return cfgPath, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	log.Info("demo: building a warehouse and filling the catalog", "dir", dir)
	b := &builder{ctx: catalog.WithActor(ctx, "tidemark-demo"), store: store, log: log, dir: dir, cfgPath: cfgPath,
		now: time.Now().UTC(), tbls: map[string]*table.Table{}, ids: map[string]uuid.UUID{}}
	defer b.close()
	for _, step := range []func() error{b.warehouse, b.catalogPast, b.lineage, b.usageAcrossRename, b.versionStory, b.leftovers} {
		if err := step(); err != nil {
			return "", err
		}
	}
	opened, err := b.scanAndPropose()
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready"), []byte(b.now.Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	log.Info("demo ready", "tables", len(b.ids), "proposals", opened, "took", time.Since(start).Round(time.Millisecond).String())
	return cfgPath, nil
}

// builder holds what the demo's steps share.
type builder struct {
	ctx     context.Context
	store   *storage.DB
	log     *slog.Logger
	dir     string
	cfgPath string
	now     time.Time

	cdb   *sql.DB
	lake  *sqlcat.Catalog
	tbls  map[string]*table.Table // by short name
	ids   map[string]uuid.UUID    // asset IDs by short name
	conns []*tables.Connection
	cat   *catalog.Catalog
	use   *usage.Service
	lin   *lineage.Service
	live  *tables.Service
	vers  *versions.Service
}

func (b *builder) close() {
	for _, c := range b.conns {
		c.Close()
	}
	if b.cdb != nil {
		b.cdb.Close()
	}
}

func (b *builder) loc(name string) string {
	return strings.TrimPrefix(b.tbls[name].Location(), "file://")
}

// warehouse writes the Iceberg tables through a SQL catalog on SQLite: an hourly-partitioned
// table of tiny files, orders (renamed later), a table nobody reads, customers.
func (b *builder) warehouse() error {
	ctx := b.ctx
	catDSN := "file:" + filepath.Join(b.dir, "iceberg.db") + "?_pragma=busy_timeout(5000)"
	var err error
	if b.cdb, err = sql.Open("sqlite", catDSN); err != nil {
		return err
	}
	wh := "file://" + filepath.Join(b.dir, "warehouse")
	if b.lake, err = sqlcat.NewCatalog("lake", b.cdb, sqlcat.SQLite, iceberg.Properties{"warehouse": wh}); err != nil {
		return err
	}
	if err := b.lake.CreateNamespace(ctx, table.Identifier{"db"}, nil); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`{"connections":[{"name":"lake","type":"sql","dialect":"sqlite","uri":%q,"warehouse":%q}]}`, catDSN, wh)
	if err := os.WriteFile(b.cfgPath, []byte(cfg), 0o644); err != nil {
		return err
	}
	now := b.now
	hour := now.Truncate(time.Hour)
	create := func(name string, spec *iceberg.PartitionSpec) error {
		var opts []icecat.CreateTableOpt
		if spec != nil {
			opts = append(opts, icecat.WithPartitionSpec(spec))
		}
		t, err := b.lake.CreateTable(ctx, table.Identifier{"db", name}, demoSchema, opts...)
		b.tbls[name] = t
		return err
	}
	appendRows := func(name string, n int, from time.Time, step time.Duration) error {
		t, err := b.tbls[name].Append(ctx, demoRecords(b.tbls[name], n, from, step), nil)
		if err == nil {
			b.tbls[name] = t
		}
		return err
	}
	hourly := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_hour", Transform: iceberg.HourTransform{}})
	steps := []func() error{
		func() error { return create("events_hourly", &hourly) },
		func() error { return appendRows("events_hourly", 120, hour.Add(-120*time.Hour), time.Hour) },
		func() error { return appendRows("events_hourly", 120, hour.Add(-120*time.Hour), time.Hour) },
		func() error { return create("orders", nil) },
		func() error { return appendRows("orders", 500, now.Add(-30*24*time.Hour), time.Hour) },
		func() error { return appendRows("orders", 200, now.Add(-5*24*time.Hour), time.Minute) },
		func() error { return create("legacy_exports", nil) },
		func() error { return appendRows("legacy_exports", 50, now.Add(-200*24*time.Hour), time.Hour) },
		func() error { return create("customers", nil) },
		func() error { return appendRows("customers", 20, now.Add(-60*24*time.Hour), time.Hour) },
		func() error { return appendRows("customers", 20, now.Add(-30*24*time.Hour), time.Hour) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("demo: write tables: %w", err)
		}
	}
	return nil
}

// catalogPast has the catalog learn of the tables 150 days ago (so legacy_exports is old enough
// to be proposed as unused), with their owners; then builds the live services.
func (b *builder) catalogPast() error {
	ctx, store, log := b.ctx, b.store, b.log
	past := b.now.Add(-150 * 24 * time.Hour)
	pastCat, err := catalog.New(store, catalog.WithClock(func() time.Time { return past }), catalog.WithLogger(log))
	if err != nil {
		return err
	}
	if b.conns, err = tablesConnections(b.cfgPath); err != nil {
		return err
	}
	pastTables, err := tables.New(store, pastCat, tables.WithClock(func() time.Time { return past }), tables.WithConnections(b.conns...))
	if err != nil {
		return err
	}
	if _, err := pastTables.Sync(ctx, nil); err != nil {
		return err
	}
	if b.cat, err = catalog.New(store, catalog.WithLogger(log),
		catalog.WithChangeHook(func(ctx context.Context, ids []uuid.UUID, _ map[uuid.UUID]catalog.Summary) {
			b.use.NamesChanged(ctx, ids)
		})); err != nil {
		return err
	}
	for name := range b.tbls {
		ref, ok, err := b.cat.Lookup(ctx, catalog.SpaceDataset, "iceberg://lake", "db."+name)
		if err != nil || !ok {
			return fmt.Errorf("demo: table %s not synced: %v", name, err)
		}
		b.ids[name] = ref.ID
	}
	owners := map[string]string{"events_hourly": "team-platform", "orders": "team-sales", "legacy_exports": "team-finance", "customers": "team-sales"}
	for name, o := range owners {
		if _, err := b.cat.SetOwner(ctx, b.ids[name], catalog.AnyVersion, catalog.OwnerInput{Principal: o, Role: "owner"}); err != nil {
			return err
		}
	}
	if _, err := b.cat.Update(ctx, b.ids["orders"], catalog.AnyVersion, catalog.UpdateInput{Description: ptr("Orders as they were placed, one row per order; loaded hourly from the landing zone.")}); err != nil {
		return err
	}
	if b.use, err = usage.New(store, b.cat, usage.WithLogger(log)); err != nil {
		return err
	}
	if b.lin, err = lineage.New(store, b.cat, lineage.WithLogger(log), lineage.WithCompletedRuns(app.UsageOfRuns(b.use))); err != nil {
		return err
	}
	if err := b.lin.Open(ctx); err != nil {
		return err
	}
	if b.vers, err = versions.New(store, b.cat, versions.WithLogger(log)); err != nil {
		return err
	}
	// Its syncs record every snapshot the tables show, as serve's do.
	b.live, err = tables.New(store, b.cat, tables.WithConnections(b.conns...), tables.WithLogger(log), tables.WithVersions(b.vers))
	return err
}

// lineage ingests the captured OpenLineage sequences, and jobs between the demo tables;
// completed runs count as usage, as in serve.
func (b *builder) lineage() error {
	ctx, now, loc := b.ctx, b.now, b.loc
	if err := ingestSequences(ctx, b.lin); err != nil {
		return err
	}
	events := []string{
		demoRun("spark", "load_orders", now.Add(-2*time.Hour), []string{`{"namespace":"s3://landing","name":"orders/2026-11-29.csv"}`}, []string{fmt.Sprintf(`{"namespace":"file","name":%q}`, loc("orders"))}),
		demoRun("spark", "sessionize_events", now.Add(-90*time.Minute), []string{`{"namespace":"kafka://events","name":"clickstream"}`}, []string{fmt.Sprintf(`{"namespace":"file","name":%q}`, loc("events_hourly"))}),
		demoRun("airflow", "daily_revenue", now.Add(-time.Hour), []string{
			fmt.Sprintf(`{"namespace":"file","name":%q,"facets":{"catalog":{"_producer":"demo","_schemaURL":"demo","framework":"iceberg","type":"sql","name":"lake"},"symlinks":{"_producer":"demo","_schemaURL":"demo","identifiers":[{"namespace":"lake","name":"db.orders","type":"TABLE"}]}}}`, loc("orders")),
			fmt.Sprintf(`{"namespace":"file","name":%q}`, loc("customers"))},
			[]string{`{"namespace":"postgres://warehouse:5432","name":"analytics.public.daily_revenue"}`}),
	}
	for _, ev := range events {
		if _, err := b.lin.Ingest(ctx, []byte(ev)); err != nil {
			return fmt.Errorf("demo: ingest a lineage event: %w", err)
		}
	}
	return nil
}

// usageAcrossRename: orders is read under its name for four weeks; then the engine renames it in
// the Iceberg catalog and alice reads it under the new name before Tidemark's next sync: the
// read waits, and the sync (which finds the rename) attributes it to the same asset.
func (b *builder) usageAcrossRename() error {
	ctx, now := b.ctx, b.now
	var recs []usage.Record
	for d := 28; d >= 1; d-- {
		for i, who := range []string{"alice", "bob", "reporting-bot"} {
			if (d+i)%3 == 0 {
				continue
			}
			recs = append(recs, usage.Record{Namespace: "iceberg://lake", Name: "db.orders", Kind: "read", Actor: who,
				At: now.Add(-time.Duration(d)*24*time.Hour + time.Duration(i)*time.Hour), QueryID: fmt.Sprintf("demo-orders-%d-%d", d, i), Source: "trino"})
		}
		recs = append(recs, usage.Record{Namespace: "iceberg://lake", Name: "db.events_hourly", Kind: "read", Actor: "dashboards",
			At: now.Add(-time.Duration(d) * 24 * time.Hour), QueryID: fmt.Sprintf("demo-events-%d", d), Source: "trino"})
	}
	if _, err := b.use.Record(ctx, recs); err != nil {
		return err
	}
	if _, err := b.lake.RenameTable(ctx, table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
		return err
	}
	if _, err := b.use.Record(ctx, []usage.Record{{Namespace: "iceberg://lake", Name: "db.sales_orders", Kind: "read", Actor: "alice",
		At: now.Add(-10 * time.Minute), QueryID: "demo-sales-1", Source: "trino"}}); err != nil {
		return err
	}
	_, err := b.live.Sync(ctx, nil)
	return err
}

// leftovers: files a crashed job wrote ten days ago and never committed; and a data file
// someone deleted by hand.
func (b *builder) leftovers() error {
	old := b.now.Add(-10 * 24 * time.Hour)
	for name, n := range map[string]int{"events_hourly": 3, "orders": 2} {
		for i := range n {
			p := filepath.Join(b.loc(name), "data", fmt.Sprintf("leftover-%d.parquet", i))
			if err := os.WriteFile(p, make([]byte, 64<<10*(i+1)), 0o644); err != nil {
				return err
			}
			if err := os.Chtimes(p, old, old); err != nil {
				return err
			}
		}
	}
	return deleteOneDataFile(b.ctx, b.tbls["customers"])
}

// scanAndPropose scans every table twice, two hours apart (the first one dated back: two passes
// must be two moments), checks every table's references, then runs the bot's proposals; it
// returns how many it opened.
func (b *builder) scanAndPropose() (int, error) {
	ctx, store, log := b.ctx, b.store, b.log
	clean, err := cleanup.New(store, b.cat, b.live, cleanup.WithLogger(log),
		cleanup.WithUsage(b.use, func(ctx context.Context, id uuid.UUID) ([]uuid.UUID, error) {
			return b.lin.Downstream(ctx, id, app.UnusedDownstreamDepth)
		}))
	if err != nil {
		return 0, err
	}
	earlier, err := cleanup.New(store, b.cat, b.live, cleanup.WithLogger(log),
		cleanup.WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
	if err != nil {
		return 0, err
	}
	names := make([]string, 0, len(b.ids))
	for n := range b.ids {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, svc := range []*cleanup.Service{earlier, clean} {
		for _, n := range names {
			if _, err := svc.Scan(ctx, b.ids[n], cleanup.ScanOptions{}); err != nil {
				return 0, fmt.Errorf("demo: scan %s: %w", n, err)
			}
		}
	}
	// A reference check of each table, so the hand-deleted file is a finding when the demo is
	// ready rather than after the first scheduled check (the file is gone: no need to wait the
	// minute a missing file is normally given before its second check).
	for _, n := range names {
		if _, err := clean.CheckRefs(ctx, b.ids[n], cleanup.RefCheckOptions{RecheckDelay: time.Millisecond}); err != nil {
			return 0, fmt.Errorf("demo: reference check of %s: %w", n, err)
		}
	}
	rep, err := clean.Propose(ctx)
	return rep.Opened, err
}

func ptr[T any](v T) *T { return &v }

func tablesConnections(path string) ([]*tables.Connection, error) {
	_, conns, err := tables.LoadConfig(path)
	return conns, err
}

// demoRecords builds rows id, ts, amount: n rows, step apart from from.
func demoRecords(t *table.Table, n int, from time.Time, step time.Duration) array.RecordReader {
	return signedRecords(t, n, from, step, 1)
}

// signedRecords is demoRecords with every amount multiplied by sign (-1: a bad load).
func signedRecords(t *table.Table, n int, from time.Time, step time.Duration, sign float64) array.RecordReader {
	sc, err := table.SchemaToArrowSchema(t.Schema(), nil, false, false)
	if err != nil {
		panic(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(from.Add(time.Duration(i) * step).UnixMicro()))
		b.Field(2).(*array.Float64Builder).Append(sign * float64(i%97) * 1.25)
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return rdr
}

func demoRun(ns, job string, at time.Time, inputs, outputs []string) string {
	return fmt.Sprintf(`{"eventType":"COMPLETE","eventTime":%q,"run":{"runId":%q},"job":{"namespace":%q,"name":%q},"inputs":[%s],"outputs":[%s],"producer":"https://github.com/tidemark/tidemark/demo","schemaURL":"https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"}`,
		at.Format(time.RFC3339), uuid.New(), ns, job, strings.Join(inputs, ","), strings.Join(outputs, ","))
}

// ingestSequences posts the captured OpenLineage sequences in order.
func ingestSequences(ctx context.Context, lin *lineage.Service) error {
	return fs.WalkDir(demoSequences, "sequences", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == "sequences" {
			return err
		}
		entries, err := fs.ReadDir(demoSequences, p)
		if err != nil {
			return err
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(seqNum(a.Name()), seqNum(b.Name())) })
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := demoSequences.ReadFile(p + "/" + e.Name())
			if err != nil {
				return err
			}
			var probe json.RawMessage
			if json.Unmarshal(b, &probe) != nil {
				continue
			}
			if _, err := lin.Ingest(ctx, b); err != nil {
				return fmt.Errorf("demo: ingest %s/%s: %w", p, e.Name(), err)
			}
		}
		return fs.SkipDir
	})
}

func seqNum(name string) int {
	n := 0
	fmt.Sscanf(name, "%d", &n)
	return n
}

// deleteOneDataFile removes one data file the table references, as a careless hand would.
func deleteOneDataFile(ctx context.Context, t *table.Table) error {
	fsys, err := t.FS(ctx)
	if err != nil {
		return err
	}
	mfs, err := t.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		return err
	}
	for e, err := range mfs[0].Entries(fsys, true) {
		if err != nil {
			return err
		}
		return os.Remove(strings.TrimPrefix(e.DataFile().FilePath(), "file://"))
	}
	return nil
}
