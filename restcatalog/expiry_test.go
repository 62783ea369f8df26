package restcatalog_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestApprovedExpiryRacingAWriter: a streaming writer commits to a served table every 200 ms
// (and, to make the race certain, right before each of the executor's first two commits); the
// approved expiry re-reads, revalidates and commits through the same compare-and-swap, without
// a new approval, and every append stays.
func TestApprovedExpiryRacingAWriter(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		r := newExpiryRace(t, db)
		cat := r.s.client(t)
		tbl := r.createTable(cat)
		id, approved := r.approveExpiry(tbl)

		r.wcat = r.s.client(t) // the streaming job's own client
		if err := r.executeWhileWriting(); err != nil {
			t.Fatal(err)
		}
		r.checkOutcome(cat, id, approved)
	})
}

// expiryRace is what TestApprovedExpiryRacingAWriter's executor and streaming writer share.
type expiryRace struct {
	t      *testing.T
	ctx    context.Context
	s      *testServer
	ident  table.Identifier
	forced atomic.Int32   // the executor's attempts to commit the expiry
	wcat   icecat.Catalog // the streaming job's own client
	mu     sync.Mutex     // guards appended
	// appended counts the writer's commits.
	appended int
}

// newExpiryRace starts a server whose executor lets the writer commit right before each of its
// first two attempts to commit the expiry.
func newExpiryRace(t *testing.T, db *storage.DB) *expiryRace {
	t.Helper()
	r := &expiryRace{t: t, ctx: context.Background(), ident: table.Identifier{"stream", "clicks"}}
	r.s = newServerWith(t, db, func(c *app.Config, _ *server.Config) {
		c.Cleanup = append(c.Cleanup, cleanup.WithFault(func(point string) error {
			if point == "before_expire_commit" && r.forced.Add(1) <= 2 {
				r.write()
			}
			return nil
		}))
	})
	if err := r.s.App.Lineage.Open(r.ctx); err != nil { // the bot judges nothing before lineage is in
		t.Fatal(err)
	}
	return r
}

// createTable creates stream.clicks with five appends, opted into expiring all but the two
// newest snapshots once they are a millisecond old.
func (r *expiryRace) createTable(cat icecat.Catalog) *table.Table {
	t, ctx, s := r.t, r.ctx, r.s
	t.Helper()
	if err := cat.CreateNamespace(ctx, table.Identifier{"stream"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, r.ident, tablestest.Schema, retrying)
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
	return tbl
}

// approveExpiry has the bot propose the expiry and a person approve it; it returns the
// proposal's ID and the snapshots approved for expiry.
func (r *expiryRace) approveExpiry(tbl *table.Table) (uuid.UUID, []int64) {
	t, ctx, s := r.t, r.ctx, r.s
	t.Helper()
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
	return ps[0].ID, approved
}

// write is the streaming writer's commit of one row.
func (r *expiryRace) write() {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, err := r.wcat.LoadTable(r.ctx, r.ident)
	if err != nil {
		r.t.Error(err)
		return
	}
	if _, err := cur.Append(r.ctx, r.s.lake.Record(cur, tablestest.Rows(1000+r.appended, 1, time.Now())), nil); err != nil {
		r.t.Error(err)
		return
	}
	r.appended++
}

// executeWhileWriting runs the executor while the writer commits every 200 ms, and until one
// more of its commits after the expiry; it returns the executor's error.
func (r *expiryRace) executeWhileWriting() error {
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
				r.write()
			}
		}
	}()
	_, err := r.s.App.Cleanup.Execute(r.ctx, uuid.Nil, nil)
	time.Sleep(300 * time.Millisecond) // one more commit from the writer after the expiry
	close(stop)
	<-done
	return err
}

// checkOutcome: the writer won the first two races, the expiry (proposal id) still went
// through, its approved snapshots are gone, and no append was lost.
func (r *expiryRace) checkOutcome(cat icecat.Catalog, id uuid.UUID, approved []int64) {
	t, ctx, s := r.t, r.ctx, r.s
	t.Helper()
	if r.forced.Load() < 3 {
		t.Fatalf("the executor committed on attempt %d; the writer was to win the first two races", r.forced.Load())
	}
	p, err := s.App.Cleanup.GetProposal(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p.State == "failed" || p.State == "stopped" {
		t.Fatalf("the approved expiry ended %s: %+v", p.State, p)
	}
	final, err := cat.LoadTable(ctx, r.ident)
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
	r.mu.Lock()
	defer r.mu.Unlock()
	if rows != int64(5+r.appended) {
		t.Fatalf("the table holds %d rows, want %d (5 appends and the writer's %d): an append was lost", rows, 5+r.appended, r.appended)
	}
}
