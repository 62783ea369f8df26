package restcatalog_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/storage"
	"github.com/tidemark/tidemark/ent/storage/storagetest"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestApprovedExpiryRacingAWriter: a streaming writer commits to a served table every 200 ms
// (and, to make the race certain, right before each of the executor's first two commits); the
// approved expiry re-reads, revalidates and commits through the same compare-and-swap, without
// a new approval, and every append stays.
func TestApprovedExpiryRacingAWriter(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		var s *server
		var forced atomic.Int32
		var writer func()
		s = newServerWith(t, db, func(c *app.Config, _ *handlers.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithFault(func(point string) error {
				if point == "before_expire_commit" && forced.Add(1) <= 2 {
					writer()
				}
				return nil
			}))
		})
		if err := s.App.Lineage.Open(ctx); err != nil { // the bot judges nothing before lineage is in
			t.Fatal(err)
		}
		cat := s.client(t)
		ident := table.Identifier{"stream", "clicks"}
		if err := cat.CreateNamespace(ctx, table.Identifier{"stream"}, nil); err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.CreateTable(ctx, ident, tablestest.Schema, retrying)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			tbl = s.append(t, tbl, i, 1)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "2", cleanup.PropertySnapshotMaxAge: "1ms"}); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		id := assetOf(t, s, tbl)
		if _, err := s.App.Tables.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // snapshots age by the wall clock
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := s.App.Cleanup.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindExpireSnapshots, State: "open", Limit: 10})
		if err != nil || len(ps) != 1 {
			t.Fatalf("expiry proposals %+v (err %v), want one", ps, err)
		}
		approved := ps[0].Evidence.Snapshots
		if _, err := s.App.Cleanup.Approve(catalog.WithActor(ctx, "token:alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}

		wcat := s.client(t) // the streaming job's own client
		var mu sync.Mutex
		appended := 0
		writer = func() {
			mu.Lock()
			defer mu.Unlock()
			cur, err := wcat.LoadTable(ctx, ident)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := cur.Append(ctx, s.lake.Record(cur, tablestest.Rows(1000+appended, 1, time.Now())), nil); err != nil {
				t.Error(err)
				return
			}
			appended++
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					writer()
				}
			}
		}()
		_, err = s.App.Cleanup.Execute(ctx, uuid.Nil, nil)
		time.Sleep(300 * time.Millisecond) // one more commit from the writer after the expiry
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if forced.Load() < 3 {
			t.Fatalf("the executor committed on attempt %d; the writer was to win the first two races", forced.Load())
		}
		p, err := s.App.Cleanup.GetProposal(ctx, ps[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.State == "failed" || p.State == "stopped" {
			t.Fatalf("the approved expiry ended %s: %+v", p.State, p)
		}
		final, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		for _, sn := range final.Metadata().Snapshots() {
			if slices.Contains(approved, sn.SnapshotID) {
				t.Fatalf("approved snapshot %d was not expired", sn.SnapshotID)
			}
		}
		var rows int64
		for _, f := range s.lake.Files(final, *final.CurrentSnapshot()) {
			rows += f[1]
		}
		mu.Lock()
		defer mu.Unlock()
		if rows != int64(5+appended) {
			t.Fatalf("the table holds %d rows, want %d (5 appends and the writer's %d): an append was lost", rows, 5+appended, appended)
		}
	})
}
