package web_test

import (
	"context"
	"fmt"
	"os"
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

// TestHealthLeadsWithDanglingReference: a table whose layout figures raise nothing, but one of
// whose data files is gone (a reference check found it missing twice and the bot opened a
// dangling_reference finding), is not called reasonable: the health section leads with the
// failing queries, names the missing file and links the finding.
func TestHealthLeadsWithDanglingReference(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		lake := tablestest.NewLake(t)
		first := lake.Append(lake.Create("db.customers", nil), tablestest.Rows(0, 3, time.Now()))
		tbl := lake.Append(first, tablestest.Rows(3, 3, time.Now()))
		kept := lake.Files(tbl, *first.CurrentSnapshot()) // the first append's file stays
		var svc *cleanup.Service
		var tbls *tables.Service
		srv, _ := newUIWith(t, db, func(c *web.Config) {
			tbls, svc = c.Tables, mustCleanup(t, db, c.Catalog, c.Tables)
			c.Cleanup = svc
		})
		reg, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation()})
		if err != nil {
			t.Fatal(err)
		}
		page := readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+reg.AssetID.String()))
		if !strings.Contains(page, "the layout looks reasonable") || strings.Contains(page, `id="health-finding"`) {
			t.Fatalf("a sound small table: the health section should find the layout reasonable and show no finding:\n%s", page)
		}
		var gone string
		for _, f := range lake.DiskFiles() {
			if strings.HasSuffix(f, ".parquet") && !keptHas(kept, f) {
				gone = f
			}
		}
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		if r, err := svc.CheckRefs(ctx, reg.AssetID, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond}); err != nil || r.DanglingCount != 1 {
			t.Fatalf("reference check: %v, %d dangling", err, r.DanglingCount)
		}
		if _, err := svc.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := svc.Proposals(ctx, cleanup.ProposalFilter{AssetID: reg.AssetID, Kind: cleanup.KindDangling, State: "open", Limit: 1})
		if err != nil || len(ps) != 1 {
			t.Fatalf("open dangling_reference findings: %v, %v", ps, err)
		}
		page = readBody(mustGet(t, srv.Client(), srv.URL+"/assets/"+reg.AssetID.String()))
		finding, health := strings.Index(page, `id="health-finding"`), strings.Index(page, `id="health"`)
		if finding < 0 || health < 0 || finding > health {
			t.Fatalf("the health section does not lead with the finding (finding at %d, figures at %d):\n%s", finding, health, page)
		}
		lead := page[finding:health]
		for _, want := range []string{"Queries on this table fail", "1 file that storage does not have", `href="/proposals/` + ps[0].ID.String() + `"`, gone[strings.LastIndex(gone, "/")+1:]} {
			if !strings.Contains(lead, want) {
				t.Errorf("the finding at the head of the health section lacks %q:\n%s", want, lead)
			}
		}
		if strings.Contains(page, "the layout looks reasonable") {
			t.Error("the page calls the layout reasonable beside an open dangling reference")
		}
		// The finding's page offers the remedies, naming the snapshot to roll back to, not Reject.
		fp := readBody(mustGet(t, srv.Client(), srv.URL+"/proposals/"+ps[0].ID.String()))
		rollback := fmt.Sprintf("roll the table back to snapshot <code>%d</code>", first.CurrentSnapshot().SnapshotID)
		if !strings.Contains(fp, `id="dangling-remedy"`) || !strings.Contains(fp, rollback) || !strings.Contains(fp, "Restore the missing files") || strings.Contains(fp, `id="reject"`) {
			t.Errorf("the finding's page lacks the remedies (%q) or still offers Reject:\n%s", rollback, fp)
		}
		if n := strings.Count(strings.ToLower(fp), "restore the missing files"); n != 1 {
			t.Errorf("the finding's page gives its remedies %d times, want once", n)
		}
	})
}

// keptHas reports whether a file on disk is one of the listed (URI) paths.
func keptHas(kept map[string][3]int64, disk string) bool {
	for p := range kept {
		if strings.HasSuffix(p, disk) || strings.HasSuffix(disk, p[strings.LastIndex(p, "/"):]) {
			return true
		}
	}
	return false
}
