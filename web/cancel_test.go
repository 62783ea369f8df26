package web_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/web"
)

// testClock is the cleanup bot's clock: the second scan must come a gap after the first.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestCancelledApprovalNotProposedAgain: real orphan files of a real Iceberg table, confirmed by
// two scans, proposed by the bot; an admin approves them in the browser with the typed count and
// cancels inside the stop window. The files then read "not deleted (approval cancelled)", and
// the bot's next round does not propose them again: a cancel holds like a rejection.
func TestCancelledApprovalNotProposedAgain(t *testing.T) {
	bin := chromium(t)
	ctx := context.Background()
	db := storagetest.Open(t, storagetest.Backends[0])
	lake := tablestest.NewLake(t)
	tbl := lake.Append(lake.Create("db.events", nil), tablestest.Rows(0, 3, time.Now()))
	clk := &testClock{t: time.Now().UTC()}
	var svc *cleanup.Service
	var tbls *tables.Service
	srv, _ := newUIWith(t, db, func(c *web.Config) {
		var err error
		tbls, err = tables.New(db, c.Catalog, tables.WithWarehouseRoots(lake.Dir),
			tables.WithConnections(tables.NewCatalogConnection(tablestest.Name, "", nil, lake.Cat)))
		if err != nil {
			t.Fatal(err)
		}
		c.Tables = tbls
		svc = mustCleanup(t, db, c.Catalog, tbls, cleanup.WithClock(clk.Now), cleanup.WithStopWindow(5*time.Minute))
		c.Cleanup = svc
	})
	rep, err := tbls.Sync(ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	asset := rep.Connections[0].Added[0].AssetID
	for _, name := range []string{"a", "b", "c"} {
		lake.WriteFile(tbl, "data/orphan-"+name+".parquet", 100, clk.Now().Add(-100*time.Hour))
	}
	round := func() []cleanup.Proposal {
		t.Helper()
		if _, err := svc.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := svc.Proposals(ctx, cleanup.ProposalFilter{AssetID: asset, Kind: cleanup.KindOrphanFiles, State: "open", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	for range 2 {
		if _, err := svc.Scan(ctx, asset, cleanup.ScanOptions{}); err != nil {
			t.Fatal(err)
		}
		clk.Add(cleanup.DefaultMinGap)
	}
	open := round()
	if len(open) != 1 || open[0].Evidence.Files != 3 {
		t.Fatalf("after two scans: %+v, want one proposal of 3 files", open)
	}
	id := open[0].ID.String()

	token, _, err := auth.NewStore(db.Client, nil).Create(ctx, "alice", []auth.Scope{auth.ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	bctx := chromiumContext(t, bin)
	must, text, click := browserOps(t, bctx)
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/signin"), chromedp.WaitVisible(chromedp.ID("token")), chromedp.SendKeys(chromedp.ID("token"), token)))
	click("#signin-submit")
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/proposals/"+id), chromedp.WaitVisible(chromedp.ID("files"))))
	click("#approve")
	must(chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("confirm-files"), "3")))
	click("#confirm-approve")
	if state := text("#proposal-state"); state != "approved" {
		t.Fatalf("after approving: %q", state)
	}
	click("#cancel")
	if state := text("#proposal-state"); state != "cancelled" {
		t.Fatalf("after cancelling: %q", state)
	}
	if files := text("#files"); strings.Count(files, "not deleted (approval cancelled)") != 3 || strings.Contains(files, "pending") {
		t.Fatalf("a cancelled approval's files read %q, want each not deleted (approval cancelled)", files)
	}
	shot(t, bctx, "proposal-cancelled")

	// The next round, an hour on, with the files still there and still unreferenced: not proposed again.
	clk.Add(time.Hour)
	if again := round(); len(again) != 0 {
		t.Fatalf("the bot proposed the cancelled files again: %+v", again)
	}
	must(chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/proposals?state=open"), chromedp.WaitVisible(chromedp.CSS("main"))))
	if list := text("main"); strings.Contains(list, "db.events") {
		t.Fatalf("the open proposals list the cancelled table again: %q", list)
	}
}
