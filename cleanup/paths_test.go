package cleanup

import (
	"strings"
	"testing"
)

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
