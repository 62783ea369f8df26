package restcatalog_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestIcebergJS: a second real client, the npm package iceberg-js (1.0.0, run by node), creates a
// namespace and a table, loads it and commits to it; iceberg-go then reads what it committed.
// It needs node and `npm ci --prefix restcatalog/testdata/icebergjs` (.ci/run does both); it
// skips without them only outside CI.
func TestIcebergJS(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "icebergjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "iceberg-js")); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs node and iceberg-js: install node and run npm ci --prefix restcatalog/testdata/icebergjs (node: %v, module: %v)", err, serr)
		}
		t.Skip("node or iceberg-js is missing: run npm ci --prefix restcatalog/testdata/icebergjs to run this test")
	}
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		cmd := exec.Command(node, filepath.Join(dir, "client.mjs"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ICEBERG_URI="+s.URL+"/iceberg", "ICEBERG_WAREHOUSE=main", "ICEBERG_TOKEN="+s.Token)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("iceberg-js client failed: %v\n%s", err, stderr)
		}
		var got struct {
			TableUUID string `json:"table_uuid"`
			Before    string `json:"metadata_location_before"`
			After     string `json:"metadata_location_after"`
			Property  string `json:"property"`
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("iceberg-js printed %q: %v", out, err)
		}
		if got.Before == got.After || got.Property != "iceberg-js" {
			t.Fatalf("iceberg-js's commit did not move the table: %+v", got)
		}
		// iceberg-go sees the same table, at the metadata iceberg-js committed.
		tbl, err := s.client(t).LoadTable(context.Background(), table.Identifier{"js_ns", "events"})
		if err != nil {
			t.Fatal(err)
		}
		if tbl.Metadata().TableUUID().String() != got.TableUUID || tbl.MetadataLocation() != got.After || tbl.Properties()["writer"] != "iceberg-js" {
			t.Fatalf("iceberg-go loads %s at %s (%v), iceberg-js committed %+v", tbl.Metadata().TableUUID(), tbl.MetadataLocation(), tbl.Properties(), got)
		}
		assetOf(t, s, tbl) // the table created by iceberg-js is an asset
	})
}
