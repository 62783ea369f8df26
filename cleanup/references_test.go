package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
)

// FuzzMetadataUUID: a metadata file found under a table location is outside input; reading its
// table-uuid never panics, and what it returns is a UUID.
func FuzzMetadataUUID(f *testing.F) {
	f.Add([]byte(`{"format-version":2,"table-uuid":"9C12D441-03FE-4693-9A96-A0705DDF69C1","location":"s3://b/t"}`))
	f.Add([]byte(`{"location":"x","snapshots":[{"a":[1,2,{"b":null}]}],"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`))
	f.Add([]byte(`{"table-uuid":42}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"format-version":2`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		p := filepath.Join(dir, "00001-x.metadata.json")
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
		id, err := metadataUUID(icebergio.LocalFS{}, p)
		if err != nil {
			return
		}
		u, perr := uuid.Parse(id)
		if perr != nil || u.String() != id {
			t.Fatalf("returned %q, not a lower-case UUID", id)
		}
	})
}

func TestMetadataUUID(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"first key":     {`{"table-uuid":"9C12D441-03FE-4693-9A96-A0705DDF69C1"}`, "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
		"after arrays":  {`{"schemas":[{"fields":[]}],"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`, "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
		"missing":       {`{"location":"s3://b/t"}`, ""},
		"not a uuid":    {`{"table-uuid":"orders"}`, ""},
		"not an object": {`"x"`, ""},
		"truncated":     {`{"location":"s3://b/t",`, ""},
	} {
		p := filepath.Join(dir, name+".metadata.json")
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := metadataUUID(icebergio.LocalFS{}, p)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"/wh/db/t/data/a.parquet", "file:///wh/db/t/data/a.parquet"},
		{"file:/wh/db/t/data/a.parquet", "file:///wh/db/t/data/a.parquet"},
		{"file:///wh/db/t//data/./a.parquet", "/wh/db/t/data/a.parquet"},
		{"s3a://lake/wh/a.parquet", "s3://lake/wh/a.parquet"},
		{"s3n://lake/wh/a.parquet", "S3://LAKE/wh/a.parquet"},
	} {
		ka, _ := normalize(tc.a)
		kb, _ := normalize(tc.b)
		if ka != kb {
			t.Errorf("%q and %q normalize to %q and %q", tc.a, tc.b, ka, kb)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"file://otherhost/wh/a.parquet", "/wh/a.parquet"},
		{"s3://lake-a/wh/a.parquet", "s3://lake-b/wh/a.parquet"},
		{"gs://lake/wh/a.parquet", "s3://lake/wh/a.parquet"},
		{"s3://lake/wh/A.parquet", "s3://lake/wh/a.parquet"},
	} {
		ka, pa := normalize(tc.a)
		kb, pb := normalize(tc.b)
		if ka == kb {
			t.Errorf("%q and %q both normalize to %q", tc.a, tc.b, ka)
		}
		if strings.HasSuffix(tc.a, "A.parquet") != (pa != pb) {
			t.Errorf("path parts of %q and %q: %q, %q", tc.a, tc.b, pa, pb)
		}
	}
}

// FuzzNormalize: normalizing is idempotent and never loses the scheme separator.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"/a/b", "file:/a", "file:///a/../b", "s3a://B/k", "s3://b", "hdfs://nn:8020/x/", "", "://", "file://h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		k, po := normalize(p)
		if !strings.Contains(k, "://") || !strings.HasPrefix(po, "/") {
			t.Fatalf("normalize(%q) = %q, %q", p, k, po)
		}
		if k2, _ := normalize(k); k2 != k {
			t.Fatalf("not idempotent: %q -> %q -> %q", p, k, k2)
		}
	})
}

func TestOverlaps(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"s3://b/wh/db.db/orders", "s3://b/wh/db.db/orders", true},
		{"s3://b/wh/db.db/orders/", "s3a://B/wh/db.db/orders", true},
		{"s3://b/wh/db.db/orders", "s3://b/wh/db.db/orders/nested", true},
		{"s3://b/wh", "s3://b/wh/db.db/orders", true},
		{"s3://b/wh/db.db/orders", "s3://b/wh/db.db/orders_v2", false},
		{"s3://b/wh/db.db/orders", "s3://other/wh/db.db/orders", false},
		{"file:///tmp/wh/t", "/tmp/wh/t/data", true},
		{"file:///tmp/wh/t", "file:///tmp/wh/u", false},
	} {
		if got := overlaps(tc.a, tc.b); got != tc.want {
			t.Errorf("overlaps(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := overlaps(tc.b, tc.a); got != tc.want {
			t.Errorf("overlaps(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}
