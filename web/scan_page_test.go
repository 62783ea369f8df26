package web_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/web"
)

// TestScanPageShowsUnreachedShards: a scan stopped after its first shard shows every planned
// shard on its page: the one it never reached is listed as a hole, and the coverage line counts
// it, so the page never reads as if the scan covered the table.
func TestScanPageShowsUnreachedShards(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lake := tablestest.NewLake(t)
		tbl := lake.Append(lake.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
		var svc *cleanup.Service
		var tbls *tables.Service
		stop, cancel := context.WithCancel(ctx)
		srv, _ := newUIWith(t, db, func(c *web.Config) {
			tbls = c.Tables
			svc = mustCleanup(t, db, c.Catalog, c.Tables, cleanup.WithShardParallel(1), cleanup.WithShardHook(func(string) { cancel() }))
			c.Cleanup = svc
		})
		reg, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := svc.Scan(stop, reg.AssetID, cleanup.ScanOptions{})
		if !errors.Is(err, context.Canceled) || len(rep.Planned) != 2 {
			t.Fatalf("scan: %v, planned %v", err, rep.Planned)
		}
		unreached := rep.Planned[1]
		res, err := http.Get(srv.URL + "/scans/" + rep.ScanID.String())
		if err != nil {
			t.Fatal(err)
		}
		body := readBody(res)
		holes := body[strings.Index(body, `id="holes"`)+1:]
		for _, want := range []string{"2 shards planned: 1 walked to completion, 0 failed or stopped, 1 not reached"} {
			if !strings.Contains(body, want) {
				t.Errorf("the scan page lacks %q", want)
			}
		}
		if res.StatusCode != 200 || !strings.Contains(holes, "<code>"+unreached+"</code> not reached") {
			t.Errorf("the unreached shard %s is not a hole on the page (%d):\n%s", unreached, res.StatusCode, body)
		}
	})
}
