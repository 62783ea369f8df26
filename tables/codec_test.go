package tables

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// gzipJSON is how the cache was written before the binary form: rows written so are still read.
func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

var codecEntries = []entry{
	{Path: "s3://b/db/t/data/ts_hour=2023-01-01-00/00000-0-a.parquet", Content: 0, Status: 1, Format: "PARQUET", Size: 4 << 20, Records: 41943, SpecID: 0, Snapshot: 7,
		Partition: []partValue{{FieldID: 1000, Value: int64(465000)}, {FieldID: 1001, Value: "eu-west"}}},
	{Path: "s3://b/db/t/data/ts_hour=2023-01-01-00/00000-1-b.parquet", Content: 0, Status: 2, Format: "PARQUET", Size: 1, Records: 1, SpecID: 0, Snapshot: -1,
		Partition: []partValue{{FieldID: 1000, Value: int64(-3)}, {FieldID: 1001, Value: nil}}},
	{Path: "s3://b/db/t/data/deletes.avro", Content: 1, Status: 0, Format: "AVRO", Size: 0, Records: 0, SpecID: 3, Snapshot: math.MaxInt64},
	{Path: "other", Format: "ORC", Partition: []partValue{{FieldID: 1, Value: true}, {FieldID: 2, Value: false}, {FieldID: 3, Value: 1e-06}, {FieldID: 4, Value: ""}}},
	{Path: "other2", Format: "ORC", Partition: []partValue{{FieldID: 1, Value: nil}, {FieldID: 2, Value: int64(math.MinInt64)}, {FieldID: 3, Value: 2.5}, {FieldID: 4, Value: "x"}}},
	{Path: "other3", Format: "ORC", Partition: []partValue{{FieldID: 1, Value: int64(7)}, {FieldID: 2, Value: int64(math.MaxInt64)}, {FieldID: 3, Value: "y"}, {FieldID: 4, Value: int64(0)}}},
}

func TestCodecRoundTrip(t *testing.T) {
	got, err := decodeEntries(encodeEntries(codecEntries))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, codecEntries) {
		t.Errorf("entries:\n got %#v\nwant %#v", got, codecEntries)
	}
	if got, err := decodeEntries(encodeEntries(nil)); err != nil || len(got) != 0 {
		t.Errorf("no entries: %v, %v", got, err)
	}
	refs := []manifestRef{{Path: "s3://b/db/t/metadata/a-m0.avro", Length: 9000, Content: 0, SpecID: 0, Added: 1},
		{Path: "s3://b/db/t/metadata/b-m0.avro", Length: 1, Content: 1, SpecID: 2, Added: -5}}
	gotRefs, err := decodeRefs(encodeRefs(refs))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotRefs, refs) {
		t.Errorf("refs:\n got %#v\nwant %#v", gotRefs, refs)
	}
}

// TestCodecReadsGzipJSON: a cache row written before the binary form decodes to what a fresh
// read gives, so a manifest's partition keys are the same whichever way it came.
func TestCodecReadsGzipJSON(t *testing.T) {
	blob, err := gzipJSON(codecEntries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeEntries(blob)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, codecEntries) {
		t.Errorf("entries:\n got %#v\nwant %#v", got, codecEntries)
	}
	refs := []manifestRef{{Path: "m.avro", Length: 3, Content: 1, SpecID: 2, Added: 4}}
	if blob, err = gzipJSON(refs); err != nil {
		t.Fatal(err)
	}
	if got, err := decodeRefs(blob); err != nil || !reflect.DeepEqual(got, refs) {
		t.Errorf("refs: %v, %v", got, err)
	}
}

// TestCodecRefusesDamage: every truncation of a record, and a record of an unknown format, is
// an error, not a panic or a shorter manifest.
func TestCodecRefusesDamage(t *testing.T) {
	b := encodeEntries(codecEntries)
	for n := range len(b) {
		if _, err := decodeEntries(b[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(b))
		}
	}
	if _, err := decodeEntries(append(b, 0)); err == nil {
		t.Error("trailing byte: no error")
	}
	if _, err := decodeEntries([]byte{9, 0}); err == nil {
		t.Error("unknown format: no error")
	}
}

// FuzzCodecPaths: paths stored against the previous one (shared prefix and suffix) come back
// as they were, whatever they share.
func FuzzCodecPaths(f *testing.F) {
	f.Add("s3://b/t/data/00001.parquet", "s3://b/t/data/00002.parquet", "")
	f.Add("aXa", "aa", "a")
	f.Add("abcabc", "abc", "abcabcabc")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		refs := []manifestRef{{Path: a}, {Path: b}, {Path: c}, {Path: a}}
		got, err := decodeRefs(encodeRefs(refs))
		if err != nil || !reflect.DeepEqual(got, refs) {
			t.Fatalf("got %+v, %v; want %+v", got, err, refs)
		}
	})
}

func FuzzDecodeEntries(f *testing.F) {
	f.Add(encodeEntries(codecEntries))
	f.Add([]byte{codecV2, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := decodeEntries(b)
		if err != nil {
			return
		}
		// What decodes encodes back to a record that decodes to the same (compared encoded,
		// since a NaN partition value is not DeepEqual to itself).
		once := encodeEntries(es)
		again, err := decodeEntries(once)
		if err != nil || !bytes.Equal(encodeEntries(again), once) {
			t.Fatalf("re-encoding changed the entries: %v", err)
		}
	})
}

// TestCacheWriteKeepsRowsCachedMeanwhile: a batch holding a row that a concurrent refresh
// cached first still writes its other rows, and leaves the one already there as it was.
func TestCacheWriteKeepsRowsCachedMeanwhile(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		now := func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
		first := newReader(db.Client, nil, now, nil)
		if err := first.write(ctx, []cacheRow{{path: "m1.avro", entries: 1, blob: encodeEntries(codecEntries[:1])},
			{list: true, path: "l1.avro", blob: encodeRefs(nil)}}); err != nil {
			t.Fatal(err)
		}
		r := newReader(db.Client, nil, now, nil)
		r.batch = true
		for _, row := range []cacheRow{
			{path: "m1.avro", entries: 4, blob: encodeEntries(codecEntries)},
			{path: "m2.avro", entries: 2, blob: encodeEntries(codecEntries[:2])},
			{list: true, path: "l1.avro", blob: encodeRefs([]manifestRef{{Path: "m1.avro"}})},
			{list: true, path: "l2.avro", blob: encodeRefs([]manifestRef{{Path: "m2.avro"}})},
		} {
			if err := r.store(ctx, row); err != nil {
				t.Fatal(err)
			}
		}
		if n := db.Client.IcebergManifest.Query().CountX(ctx); n != 1 {
			t.Fatalf("%d manifests cached before the flush, want 1", n)
		}
		if err := r.flush(ctx); err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]int{"m1.avro": 1, "m2.avro": 2} {
			if err := r.lookup(ctx, []string{path}); err != nil {
				t.Fatal(err)
			}
			es, err := r.entries(ctx, table.Snapshot{}, manifestRef{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(es, codecEntries[:want]) {
				t.Errorf("%s: %d entries, want %d", path, len(es), want)
			}
		}
		if n := db.Client.IcebergManifestList.Query().CountX(ctx); n != 2 {
			t.Errorf("%d manifest lists cached, want 2", n)
		}
	})
}

// TestCacheWriteLarge: manifest rows large enough for insertLZ4 (on PostgreSQL, compressed with
// lz4) are written and read back, also when one of them was cached meanwhile and when the
// database refuses lz4.
func TestCacheWriteLarge(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		now := func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
		big := make([]entry, 8000)
		for i := range big {
			big[i] = entry{Path: fmt.Sprintf("s3://b/db/t/data/%08x.parquet", uint32(i)*2654435761), Format: "PARQUET", Size: int64(i), Records: 1}
		}
		rows := []cacheRow{{path: "m1.avro", entries: len(big), blob: encodeEntries(big)}, {path: "m2.avro", entries: len(big), blob: encodeEntries(big)}}
		if len(rows[0].blob) < lz4Bytes {
			t.Fatalf("a row of %d bytes does not take insertLZ4 (from %d)", len(rows[0].blob), lz4Bytes)
		}
		first := newReader(db.Client, nil, now, nil)
		if err := first.write(ctx, []cacheRow{{path: "m1.avro", entries: 1, blob: encodeEntries(codecEntries[:1])}}); err != nil {
			t.Fatal(err)
		}
		for _, try := range []string{"with one cached meanwhile", "again"} {
			r := newReader(db.Client, nil, now, nil)
			// Tried on SQLite too, which refuses the setting as a server without lz4 would.
			r.lz4 = &lz4Probe{asked: true, ok: true}
			if err := r.write(ctx, rows); err != nil {
				t.Fatalf("%s: %v", try, err)
			}
			if r.lz4.ok != (db.Dialect == dialect.Postgres) {
				t.Errorf("%s: after the write, lz4 is tried: %v", try, r.lz4.ok)
			}
		}
		r := newReader(db.Client, nil, now, nil)
		for path, want := range map[string][]entry{"m1.avro": codecEntries[:1], "m2.avro": big} {
			if err := r.lookup(ctx, []string{path}); err != nil {
				t.Fatal(err)
			}
			es, err := r.entries(ctx, table.Snapshot{}, manifestRef{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(es, want) {
				t.Errorf("%s: %d entries, want %d", path, len(es), len(want))
			}
		}
		if db.Dialect != dialect.Postgres {
			return
		}
		var lz4 bool
		if err := db.SQL.QueryRowContext(ctx, "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'").Scan(&lz4); err != nil {
			t.Fatal(err)
		}
		if lz4 {
			var method string
			if err := db.SQL.QueryRowContext(ctx, "SELECT pg_column_compression(entries) FROM iceberg_manifests WHERE path = 'm2.avro'").Scan(&method); err != nil {
				t.Fatal(err)
			}
			if method != "lz4" {
				t.Errorf("m2.avro stored with %q compression, want lz4", method)
			}
		}
	})
}
