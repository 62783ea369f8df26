package tables

import "testing"

func TestLocationName(t *testing.T) {
	for _, tc := range []struct{ loc, ns, name string }{
		{"file:///tmp/wh/db/orders", "file", "/tmp/wh/db/orders"},
		{"file:/tmp/wh/db/orders/", "file", "/tmp/wh/db/orders"},
		{"/tmp/wh/db/orders", "file", "/tmp/wh/db/orders"},
		{"s3://lake/wh/db/orders", "s3://lake", "wh/db/orders"},
		{"s3a://lake/wh/db/orders/", "s3://lake", "wh/db/orders"},
		{"S3N://lake/wh", "s3://lake", "wh"},
		{"gs://bucket/x", "gs://bucket", "x"},
		{"hdfs://nn:8020/wh/orders", "hdfs://nn:8020", "/wh/orders"},
		{"abfss://c@acct.dfs.core.windows.net/wh/t", "abfss://c@acct.dfs.core.windows.net", "wh/t"},
	} {
		ns, name := LocationName(tc.loc)
		if ns != tc.ns || name != tc.name {
			t.Errorf("LocationName(%q) = %q, %q; want %q, %q", tc.loc, ns, name, tc.ns, tc.name)
		}
	}
}
