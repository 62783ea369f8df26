package restcatalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/server"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestLoadsAreReads: an iceberg-go program that only loads and scans a served table (iceberg-go
// sends no scan report) leaves one read on its asset, attributed to its token; a writer's load
// before its commit leaves none (the commit is its write); twenty anonymous scan reports leave
// none.
func TestLoadsAreReads(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		tbl := s.append(t, create(t, s.client(t), "u", "t"), 0, 5)
		reader, _, err := auth.NewStore(db.Client, nil).Create(ctx, "dashboards", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := icecat.Load(ctx, "reader", iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg", "token": reader, "warehouse": "main"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			loaded, err := rc.LoadTable(ctx, table.Identifier{"u", "t"})
			if err != nil {
				t.Fatal(err)
			}
			if i < 2 {
				got, err := loaded.Scan().ToArrowTable(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got.NumRows() != 5 {
					t.Fatalf("scan: %d rows", got.NumRows())
				}
				got.Release()
			}
		}
		// The writer (the admin token's client) loads, then commits: not a read.
		wt, err := s.client(t).LoadTable(ctx, table.Identifier{"u", "t"})
		if err != nil {
			t.Fatal(err)
		}
		s.append(t, wt, 5, 1)
		for range 20 {
			if code, body := s.do(t, "POST", "/iceberg/v1/main/namespaces/u/tables/t/metrics", "",
				`{"report-type":"scan-report","table-name":"u.t","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`, nil); code != 204 {
				t.Fatalf("anonymous report: %d %s", code, body)
			}
		}
		s.App.FlushLoads(ctx)
		asset := assetOf(t, s, tbl)
		reads := map[string]int{}
		evs, err := db.Client.UsageEvent.Query().Where(usageevent.AssetID(asset), usageevent.KindEQ(usageevent.KindRead)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			reads[e.Actor]++
		}
		if len(reads) != 1 || reads["token:dashboards"] != 1 {
			t.Fatalf("reads by actor %v, want exactly one, by token:dashboards (three loads in one hour count once; the writer's load and anonymous reports not at all)", reads)
		}
	})
}

// TestLoadsKeepTablesAlive: with a one-hour unused window, the unused-asset bot proposes the
// table nobody read (anonymous scan reports on it change nothing) and not the table a token
// only loaded and scanned.
func TestLoadsKeepTablesAlive(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		policy := cleanup.DefaultPolicy
		policy.UnusedWindow, policy.MinAssetAge = time.Hour, time.Millisecond
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) { c.Cleanup = append(c.Cleanup, cleanup.WithPolicy(policy)) })
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		read := s.append(t, create(t, s.client(t), "alive", "read"), 0, 2)
		idle := s.append(t, create(t, s.client(t), "alive", "idle"), 0, 2)
		reader, _, err := auth.NewStore(db.Client, nil).Create(ctx, "dashboards", []auth.Scope{auth.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := icecat.Load(ctx, "reader", iceberg.Properties{"type": "rest", "uri": s.URL + "/iceberg", "token": reader, "warehouse": "main"})
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := rc.LoadTable(ctx, read.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		got, err := loaded.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got.Release()
		for range 5 {
			s.do(t, "POST", "/iceberg/v1/main/namespaces/alive/tables/idle/metrics", "", `{"report-type":"scan-report","table-name":"alive.idle","snapshot-id":1,"filter":true,"schema-id":0,"projected-field-ids":[1],"projected-field-names":["id"],"metrics":{}}`, nil)
		}
		s.App.FlushLoads(ctx)
		time.Sleep(5 * time.Millisecond) // the assets are older than the minimum age
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := s.App.Cleanup.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindUnusedAsset, State: "open", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		proposed := map[uuid.UUID]bool{}
		for _, p := range ps {
			proposed[p.AssetID] = true
		}
		if !proposed[assetOf(t, s, idle)] || proposed[assetOf(t, s, read)] {
			t.Fatalf("unused proposals %v: want the idle table and not the one a token loaded", proposed)
		}
	})
}
