// Package tablestest builds real Apache Iceberg tables for tests: iceberg-go's SQL catalog on a
// SQLite file and a warehouse in a temp dir, written with iceberg-go.
package tablestest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	_ "github.com/lib/pq"  // a SQL catalog on PostgreSQL
	_ "modernc.org/sqlite" // a SQL catalog on SQLite
)

// Lake is a real Iceberg warehouse in a temp dir with iceberg-go's SQL catalog on a SQLite file.
type Lake struct {
	t         testing.TB
	ctx       context.Context
	Dir       string
	Warehouse string // local path of the warehouse
	Cat       *sqlcat.Catalog
}

// Name is the SQL catalog name.
const Name = "lake"

// NewLake creates the catalog (with namespace db) on a SQLite file and the warehouse, both
// under t.TempDir().
func NewLake(t testing.TB) *Lake {
	t.Helper()
	dir := t.TempDir()
	return NewLakeOn(t, dir, "sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
}

// NewLakeOn creates the catalog (with namespace db) in the database dsn names ("sqlite" or
// "postgres" driver) and the warehouse under dir.
func NewLakeOn(t testing.TB, dir, driver, dsn string) *Lake {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dialect := sqlcat.SQLite
	if driver == "postgres" {
		dialect = sqlcat.Postgres
	}
	wh := filepath.Join(dir, "warehouse")
	cat, err := sqlcat.NewCatalog(Name, db, dialect, iceberg.Properties{"warehouse": "file://" + wh})
	if err != nil {
		t.Fatal(err)
	}
	l := &Lake{t: t, ctx: context.Background(), Dir: dir, Warehouse: wh, Cat: cat}
	if err := cat.CreateNamespace(l.ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return l
}

// Schema is the tables' schema: id, ts (timestamptz), region.
var Schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 3, Name: "region", Type: iceberg.PrimitiveTypes.String},
)

// HourSpec partitions by hour(ts).
func HourSpec() *iceberg.PartitionSpec {
	s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "ts_hour", Transform: iceberg.HourTransform{}})
	return &s
}

// Create creates a table ("db.name") in namespace db.
func (l *Lake) Create(ident string, spec *iceberg.PartitionSpec, opts ...icecat.CreateTableOpt) *table.Table {
	l.t.Helper()
	if spec != nil {
		opts = append(opts, icecat.WithPartitionSpec(spec))
	}
	tbl, err := l.Cat.CreateTable(l.ctx, strings.Split(ident, "."), Schema, opts...)
	if err != nil {
		l.t.Fatalf("create %s: %v", ident, err)
	}
	return tbl
}

// Row is one row of Schema.
type Row struct {
	ID     int64
	TS     time.Time
	Region string
}

// Record builds an arrow reader of rows in the table's schema.
func (l *Lake) Record(tbl *table.Table, rows []Row) array.RecordReader {
	l.t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		l.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.ID)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(r.TS.UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(r.Region)
	}
	rec := b.NewRecordBatch()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		l.t.Fatal(err)
	}
	return rdr
}

// Append commits rows and returns the new table.
func (l *Lake) Append(tbl *table.Table, rows []Row) *table.Table {
	l.t.Helper()
	out, err := tbl.Append(l.ctx, l.Record(tbl, rows), nil)
	if err != nil {
		l.t.Fatalf("append: %v", err)
	}
	return out
}

// Rows makes n rows starting at id from, one per hour from start.
func Rows(from, n int, start time.Time) []Row {
	out := make([]Row, n)
	for i := range out {
		out[i] = Row{ID: int64(from + i), TS: start.Add(time.Duration(i) * time.Hour), Region: []string{"eu", "us"}[i%2]}
	}
	return out
}

// Files lists what iceberg-go itself says a snapshot references (live entries), as
// path -> size, records, content (0 data, 1 position deletes, 2 equality deletes), for comparing with the service's listing.
func (l *Lake) Files(tbl *table.Table, snap table.Snapshot) map[string][3]int64 {
	l.t.Helper()
	fs, err := tbl.FS(l.ctx)
	if err != nil {
		l.t.Fatal(err)
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		l.t.Fatal(err)
	}
	out := map[string][3]int64{}
	for _, m := range mfs {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				l.t.Fatal(err)
			}
			df := e.DataFile()
			out[df.FilePath()] = [3]int64{df.FileSizeBytes(), df.Count(), int64(df.ContentType())}
		}
	}
	return out
}

// DiskFiles lists every file under the warehouse.
func (l *Lake) DiskFiles() []string {
	l.t.Helper()
	var out []string
	err := filepath.WalkDir(l.Warehouse, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// AddFiles commits data files that already exist (or are named only) to an unpartitioned
// table, by path as given, without reading them: the way a writer commits files it wrote
// earlier.
func (l *Lake) AddFiles(tbl *table.Table, paths ...string) *table.Table {
	l.t.Helper()
	var files []iceberg.DataFile
	for _, p := range paths {
		size := int64(1)
		if st, err := os.Stat(strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:")); err == nil {
			size = st.Size()
		}
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, p, iceberg.ParquetFile, nil, nil, nil, 1, size)
		if err != nil {
			l.t.Fatal(err)
		}
		files = append(files, b.Build())
	}
	txn := tbl.NewTransaction()
	if err := txn.AddDataFiles(l.ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
		l.t.Fatalf("add files: %v", err)
	}
	out, err := txn.Commit(l.ctx)
	if err != nil {
		l.t.Fatalf("commit added files: %v", err)
	}
	return out
}

// Path is the local path of a table-relative file ("data/x.parquet").
func Path(tbl *table.Table, rel string) string {
	return strings.TrimPrefix(tbl.Location(), "file://") + "/" + rel
}

// WriteFile writes a file of n bytes at a table-relative path with the given modification time.
func (l *Lake) WriteFile(tbl *table.Table, rel string, n int, mtime time.Time) string {
	l.t.Helper()
	p := Path(tbl, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// Missing returns the first file a reader of the table would miss: its metadata file, or a
// retained snapshot's manifest list, manifest, data or delete file.
func (l *Lake) Missing(tbl *table.Table) error {
	exists := func(p string) error {
		_, err := os.Stat(strings.TrimPrefix(p, "file://"))
		return err
	}
	if err := exists(tbl.MetadataLocation()); err != nil {
		return err
	}
	fs, err := tbl.FS(l.ctx)
	if err != nil {
		return err
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		if err := exists(snap.ManifestList); err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		mfs, err := snap.Manifests(fs)
		if err != nil {
			return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range mfs {
			if err := exists(m.FilePath()); err != nil {
				return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
			}
			for e, err := range m.Entries(fs, true) {
				if err != nil {
					return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
				}
				if err := exists(e.DataFile().FilePath()); err != nil {
					return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
				}
			}
		}
	}
	return nil
}

// Intact checks Missing, then reads the current snapshot's rows and returns how many.
func (l *Lake) Intact(tbl *table.Table) (int64, error) {
	if err := l.Missing(tbl); err != nil {
		return 0, err
	}
	if tbl.CurrentSnapshot() == nil {
		return 0, nil
	}
	at, err := tbl.Scan().ToArrowTable(l.ctx)
	if err != nil {
		return 0, fmt.Errorf("scan rows: %w", err)
	}
	defer at.Release()
	return at.NumRows(), nil
}
