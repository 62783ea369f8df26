package tables_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/tables"
)

// lake is a real Iceberg warehouse in a temp dir with iceberg-go's SQL catalog on a SQLite file.
type lake struct {
	t         *testing.T
	ctx       context.Context
	dir       string
	warehouse string
	cat       *sqlcat.Catalog
}

const lakeName = "lake"

func newLake(t *testing.T) *lake {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	wh := filepath.Join(dir, "warehouse")
	cat, err := sqlcat.NewCatalog(lakeName, db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + wh})
	if err != nil {
		t.Fatal(err)
	}
	l := &lake{t: t, ctx: context.Background(), dir: dir, warehouse: wh, cat: cat}
	if err := cat.CreateNamespace(l.ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return l
}

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 3, Name: "region", Type: iceberg.PrimitiveTypes.String},
)

func hourSpec() *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_hour", Transform: iceberg.HourTransform{}})
	return &s
}

func (l *lake) create(ident string, spec *iceberg.PartitionSpec) *table.Table {
	l.t.Helper()
	var opts []icecat.CreateTableOpt
	if spec != nil {
		opts = append(opts, icecat.WithPartitionSpec(spec))
	}
	tbl, err := l.cat.CreateTable(l.ctx, strings.Split(ident, "."), testSchema, opts...)
	if err != nil {
		l.t.Fatalf("create %s: %v", ident, err)
	}
	return tbl
}

type row struct {
	id     int64
	ts     time.Time
	region string
}

func (l *lake) record(tbl *table.Table, rows []row) array.RecordReader {
	l.t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		l.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(r.region)
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		l.t.Fatal(err)
	}
	return rdr
}

func (l *lake) append(tbl *table.Table, rows []row) *table.Table {
	l.t.Helper()
	out, err := tbl.Append(l.ctx, l.record(tbl, rows), nil)
	if err != nil {
		l.t.Fatalf("append: %v", err)
	}
	return out
}

// rows makes n rows starting at id from, one per hour from start.
func rows(from, n int, start time.Time) []row {
	out := make([]row, n)
	for i := range out {
		out[i] = row{id: int64(from + i), ts: start.Add(time.Duration(i) * time.Hour), region: []string{"eu", "us"}[i%2]}
	}
	return out
}

// files lists what iceberg-go itself says a snapshot references (live entries), as
// path -> size/records, for comparing with the service's listing.
func (l *lake) files(tbl *table.Table, snap table.Snapshot) map[string][2]int64 {
	l.t.Helper()
	fs, err := tbl.FS(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		l.t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, m := range mfs {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				l.t.Fatal(err)
			}
			out[e.DataFile().FilePath()] = [2]int64{e.DataFile().FileSizeBytes(), e.DataFile().Count()}
		}
	}
	return out
}

// diskFiles lists every file under the warehouse.
func (l *lake) diskFiles() []string {
	l.t.Helper()
	var out []string
	err := filepath.WalkDir(l.warehouse, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newService(t *testing.T, db *storage.DB, c *clock, opts ...tables.Option) (*tables.Service, *catalog.Catalog) {
	t.Helper()
	cat := catalog.New(db.Client, catalog.WithClock(c.Now))
	svc, err := tables.New(db.Client, cat, append([]tables.Option{tables.WithClock(c.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return svc, cat
}

// listed pages through the service's file listing of a snapshot.
func listed(t *testing.T, svc *tables.Service, id uuid.UUID, snap int64, pageSize int) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	cursor := ""
	for {
		p, err := svc.Files(context.Background(), id, &snap, cursor, pageSize)
		if err != nil {
			t.Fatalf("files of snapshot %d: %v", snap, err)
		}
		for _, f := range p.Files {
			if _, dup := out[f.Path]; dup {
				t.Fatalf("file %s listed twice", f.Path)
			}
			out[f.Path] = [2]int64{f.Size, f.Records}
		}
		if p.Next == "" {
			return out
		}
		cursor = p.Next
	}
}
