package cleanup_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/usage"
)

// scanAll scans every live known table once.
func scanAll(t *testing.T, e *env, svc *tables.Service) []cleanup.Report {
	t.Helper()
	ts, _, err := svc.List(e.ctx, uuid.Nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []cleanup.Report
	for _, tb := range ts {
		if tb.GoneAt != nil {
			continue
		}
		r, err := e.svc.Scan(e.ctx, tb.AssetID, cleanup.ScanOptions{})
		if err != nil {
			t.Fatalf("scan %s: %v", tb.Identifier, err)
		}
		out = append(out, r)
	}
	return out
}

// approveAll approves every open executable proposal, as a careless person would.
func approveAll(t *testing.T, e *env) int {
	t.Helper()
	n := 0
	for _, p := range e.proposals("", "open") {
		if !p.Executable {
			continue
		}
		if _, err := e.svc.Approve(e.person("alice"), p.ID, "approve everything"); err != nil {
			t.Fatalf("approve %s: %v", p.Kind, err)
		}
		n++
	}
	return n
}

func loadIntact(t *testing.T, e *env, ident string, rows int64) {
	t.Helper()
	tbl, err := e.lake.Cat.LoadTable(e.ctx, strings.Split(ident, "."))
	if err != nil {
		t.Fatalf("%s no longer loads: %v", ident, err)
	}
	n, err := e.lake.Intact(tbl)
	if err != nil || n != rows {
		t.Fatalf("%s: %d rows (want %d): %v", ident, n, rows, err)
	}
}

// TestSharedLocationStory is the seeds' rename story: db.orders is renamed to db.sales_orders
// (its files stay in .../db.db/orders), a new db.orders is created in the same directory. Both
// tables are scanned twice, the bot's proposals are all approved and executed, and the renamed
// table, unused, is retired through its grace period. Every table still in the catalog loads
// with all its files and rows; the true orphan is gone; the retirement deleted none of the new
// table's files.
func TestSharedLocationStory(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		orders := e.lake.Append(e.lake.Create("db.orders", nil), tablestest.Rows(0, 3, time.Now()))
		orders = e.lake.Append(orders, tablestest.Rows(3, 3, time.Now()))
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 1 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		if _, err := e.lake.Cat.RenameTable(e.ctx, table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		fresh := e.lake.Append(e.lake.Create("db.orders", nil), tablestest.Rows(10, 2, time.Now()))
		if fresh.Location() != orders.Location() {
			t.Fatalf("the story needs one location: %s and %s", fresh.Location(), orders.Location())
		}
		orphan := e.lake.WriteFile(fresh, "data/leftover-of-a-crashed-job.parquet", 100, e.clock.Now().Add(-200*time.Hour))
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Renamed != 1 || rep.Added != 1 {
			t.Fatalf("rename sync: %+v %v", rep, err)
		}
		// A hundred days on, every table file is old; the new db.orders and db.events are read.
		e.clock.Add(100 * 24 * time.Hour)
		recordRead(t, e, "db.orders", e.clock.Now().Add(-time.Hour), "q-orders")
		recordRead(t, e, "db.events", e.clock.Now().Add(-time.Hour), "q-events")

		for range 2 {
			for _, r := range scanAll(t, e, e.tables) {
				if r.Location == fresh.Location() && (len(r.SharedWith) != 1 || len(r.Foreign) != 0) {
					t.Fatalf("scan of %s: shared with %+v, foreign %+v", r.Location, r.SharedWith, r.Foreign)
				}
			}
			e.clock.Add(2 * time.Hour)
		}
		e.propose()
		for _, p := range e.proposals(cleanup.KindOrphanFiles, "open") {
			if p.Evidence.Files != 1 {
				t.Fatalf("orphan proposal lists %d files, want the one true orphan: %s", p.Evidence.Files, p.Evidence.Summary)
			}
		}
		if n := approveAll(t, e); n < 2 { // the orphan (from either table) and the unused sales_orders
			t.Fatalf("approved %d proposals", n)
		}
		if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil {
			t.Fatal(err)
		}
		loadIntact(t, e, "db.orders", 2)
		loadIntact(t, e, "db.events", 10)
		if exists(orphan) {
			t.Fatal("the true orphan is still there")
		}
		// The grace period passes; the scans go on; the retirement deletes its files.
		for range 4 {
			e.clock.Add(2 * 24 * time.Hour)
			scanAll(t, e, e.tables)
			e.propose()
			approveAll(t, e)
			if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil {
				t.Fatal(err)
			}
			loadIntact(t, e, "db.orders", 2)
			loadIntact(t, e, "db.events", 10)
		}
		retired := e.proposals(cleanup.KindUnusedAsset, "executed")
		if len(retired) != 1 {
			t.Fatalf("the unused sales_orders was not retired: %+v", e.proposals(cleanup.KindUnusedAsset, ""))
		}
		p, err := e.svc.GetProposal(e.ctx, retired[0].ID)
		if err != nil || p.Files["deleted"] == 0 {
			t.Fatalf("retirement journal: %+v %v", p.Files, err)
		}
		// What is left in the directory is exactly what db.orders needs.
		for _, f := range e.lake.DiskFiles() {
			if strings.Contains(f, "/sales_orders") {
				t.Fatalf("left behind: %s", f)
			}
		}
	})
}

// TestForeignTenant: the same story with only one of the two tables registered (by metadata
// location, no catalog connection): its scans name the other table, confirm nothing there,
// and the bot opens a non-executable shared_location proposal instead of deleting.
func TestForeignTenant(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		lake := tablestest.NewLake(t)
		old := lake.Append(lake.Create("db.orders", nil), tablestest.Rows(0, 3, time.Now()))
		if _, err := lake.Cat.RenameTable(context.Background(), table.Identifier{"db", "orders"}, table.Identifier{"db", "sales_orders"}); err != nil {
			t.Fatal(err)
		}
		fresh := lake.Append(lake.Create("db.orders", nil), tablestest.Rows(10, 2, time.Now()))
		c := &clock{t: time.Now().UTC()}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		tbls, err := tables.New(db, cat, tables.WithClock(c.Now), tables.WithWarehouseRoots(os.TempDir()))
		must(t, err)
		ctx := context.Background()
		reg, _, err := tbls.Register(ctx, tables.RegisterInput{MetadataLocation: fresh.MetadataLocation()})
		must(t, err)
		svc := mustCleanup(t, db, cat, tbls, cleanup.WithClock(c.Now))
		c.Add(100 * 24 * time.Hour)
		var last cleanup.Report
		for range 3 {
			last, err = svc.Scan(ctx, reg.AssetID, cleanup.ScanOptions{})
			must(t, err)
			if last.Confirmed != 0 || len(last.Foreign) == 0 || last.Foreign[0].TableUUID != old.Metadata().TableUUID().String() {
				t.Fatalf("scan with a foreign tenant: confirmed %d, foreign %+v", last.Confirmed, last.Foreign)
			}
			c.Add(2 * time.Hour)
		}
		if !strings.Contains(last.Summary, old.Metadata().TableUUID().String()) {
			t.Fatalf("the report does not name the other table: %s", last.Summary)
		}
		if _, err := svc.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := svc.Proposals(ctx, cleanup.ProposalFilter{Limit: 10})
		must(t, err)
		if len(ps) != 1 || ps[0].Kind != cleanup.KindSharedLocation || ps[0].Executable || ps[0].Severity != "high" {
			t.Fatalf("proposals: %+v", ps)
		}
		if _, err := svc.Approve(catalog.WithActor(ctx, "token:alice"), ps[0].ID, ""); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("approving a shared_location proposal: %v", err)
		}
		for _, tb := range []*table.Table{old, fresh} {
			if _, err := lake.Intact(tb); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReadAfterApproval: a read posted after an unused-asset proposal was approved stops the
// execution; the table stays in its catalog. A read that arrives during the grace period stops
// the file step; the files stay.
func TestReadAfterApproval(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		e.clock.Add(100 * 24 * time.Hour)
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 || ps[0].Evidence.TableUUID == "" || ps[0].Evidence.MetadataLocation == "" {
			t.Fatalf("unused proposals: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire"); err != nil {
			t.Fatal(err)
		}
		// A query log arrives late: a read from yesterday, posted after the approval.
		recordRead(t, e, "db.events", e.clock.Now().Add(-24*time.Hour), "late-q")
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Stopped != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		p, _ := e.svc.GetProposal(e.ctx, ps[0].ID)
		if p.State != "stopped" || !strings.Contains(p.Reason, "read 1 times") || p.Steps[len(p.Steps)-1].Step != "stopped" {
			t.Fatalf("proposal: %s %q %+v", p.State, p.Reason, p.Steps)
		}
		if ok, _ := e.lake.Cat.CheckTableExists(e.ctx, table.Identifier{"db", "events"}); !ok {
			t.Fatal("the table was dropped although it was read")
		}
		if a, _ := e.cat.Get(e.ctx, e.id); a.Status == catalog.StatusDeleted {
			t.Fatal("the asset was deleted although it was read")
		}

		// Later, unused again: approved, retired; a read arrives in the grace period.
		e.clock.Add(100 * 24 * time.Hour)
		e.propose()
		ps = e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 {
			t.Fatalf("unused proposals: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire"); err != nil {
			t.Fatal(err)
		}
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Waiting != 1 {
			t.Fatalf("metadata step: %+v %v", r, err)
		}
		files := e.lake.DiskFiles()
		// The read happened before the drop; its log is posted only now.
		res, err := e.usage.Record(e.ctx, []usage.Record{{Namespace: "iceberg://lake", Name: "db.events", Kind: "read", Actor: "bob",
			At: e.clock.Now().Add(-time.Hour), QueryID: "late-2", Source: "trino"}})
		if err != nil || res[0].Status != usage.StatusAccepted {
			t.Fatalf("late read: %+v %v", res, err)
		}
		e.clock.Add(8 * 24 * time.Hour)
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Stopped != 1 || r.Deleted != 0 {
			t.Fatalf("file step: %+v %v", r, err)
		}
		if !slices.Equal(e.lake.DiskFiles(), files) {
			t.Fatal("files were deleted although the asset was read")
		}
	})
}

// TestRestoredDuringGrace: a retired table registered again during the grace period keeps
// its files.
func TestRestoredDuringGrace(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		e.clock.Add(100 * 24 * time.Hour)
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire"); err != nil {
			t.Fatal(err)
		}
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Waiting != 1 {
			t.Fatalf("metadata step: %+v %v", r, err)
		}
		// Someone needed it after all: the table is registered again by its metadata location.
		if _, _, err := e.tables.Register(e.ctx, tables.RegisterInput{MetadataLocation: e.tbl.MetadataLocation()}); err != nil {
			t.Fatal(err)
		}
		e.clock.Add(8 * 24 * time.Hour)
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Stopped != 1 || r.Deleted != 0 {
			t.Fatalf("file step: %+v %v", r, err)
		}
		if n, err := e.lake.Intact(e.tbl); err != nil || n != 10 {
			t.Fatalf("the restored table: %d rows, %v", n, err)
		}
	})
}

// TestRejectionSticks: a rejected proposal is not reopened by the next evaluations; only a
// file beyond the rejected set opens a new one, listing just that file.
func TestRejectionSticks(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		recordRead(t, e, "db.events", e.clock.Now(), "q-1")
		paths := confirmOrphans(t, e, 2)
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if _, err := e.svc.Reject(e.person("alice"), ps[0].ID, "those files belong to a backfill in progress"); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			e.clock.Add(2 * time.Hour)
			e.scan(cleanup.ScanOptions{})
			if r := e.propose(); r.Opened != 0 {
				t.Fatalf("the bot reopened a rejected proposal: %+v", r)
			}
		}
		rejected := e.proposals(cleanup.KindOrphanFiles, "rejected")
		if len(rejected) != 1 || rejected[0].Reason != "those files belong to a backfill in progress" || rejected[0].DecidedBy != "token:alice" {
			t.Fatalf("rejected: %+v", rejected)
		}
		// A new orphan, beyond the rejected set: proposed alone.
		extra := e.lake.WriteFile(e.tbl, "data/orphan-new.parquet", 7, e.clock.Now().Add(-100*time.Hour))
		for range 2 {
			e.clock.Add(2 * time.Hour)
			e.scan(cleanup.ScanOptions{})
		}
		if r := e.propose(); r.Opened != 1 {
			t.Fatalf("after a new orphan: %+v", r)
		}
		ps = e.proposals(cleanup.KindOrphanFiles, "open")
		if len(ps) != 1 || ps[0].Evidence.Files != 1 || ps[0].Evidence.Reopens == nil || *ps[0].Evidence.Reopens != rejected[0].ID {
			t.Fatalf("reopened proposal: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("bob"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil {
			t.Fatal(err)
		}
		if exists(extra) == true || !exists(paths[0]) || !exists(paths[1]) {
			t.Fatal("the execution did not delete exactly the file beyond the rejected set")
		}
		// An exemption from orphan cleanup holds the same way.
		must(t, e.svc.Exempt(e.person("alice"), e.id, true, "hands off", cleanup.KindOrphanFiles))
		e.clock.Add(91 * 24 * time.Hour) // the rejection's quiet period is over
		recordRead(t, e, "db.events", e.clock.Now(), "q-2")
		for range 2 {
			e.clock.Add(2 * time.Hour)
			e.scan(cleanup.ScanOptions{})
		}
		if r := e.propose(); r.Opened != 0 || len(e.proposals(cleanup.KindOrphanFiles, "open")) != 0 {
			t.Fatalf("an exempt table got an orphan proposal: %+v", r)
		}
		must(t, e.svc.Exempt(e.person("alice"), e.id, false, ""))
		if r := e.propose(); r.Opened != 1 {
			t.Fatalf("after the quiet period and the exemption: %+v", r)
		}
	})
}

// TestRewrittenAfterConfirmation: a confirmed orphan rewritten (same size, new mtime) between
// approval and execution is not deleted: the age is checked again right before the delete.
func TestRewrittenAfterConfirmation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		paths := confirmOrphans(t, e, 2)
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		now := e.clock.Now()
		must(t, os.Chtimes(paths[1], now, now))
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Deleted != 1 || r.Skipped != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if exists(paths[0]) || !exists(paths[1]) {
			t.Fatal("the rewritten file was deleted, or the old one kept")
		}
	})
}

// TestFailedWalkDoesNotConfirm: a walk that lists a candidate and then fails does not count:
// the next complete walk starts the chain again.
func TestFailedWalkDoesNotConfirm(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		// Named to be listed first in data/, so the failing walk sees it before it fails.
		e.lake.WriteFile(e.tbl, "data/0000-early-orphan.parquet", 10, e.clock.Now().Add(-100*time.Hour))
		if r := e.scan(cleanup.ScanOptions{}); r.Candidates != 1 {
			t.Fatalf("first scan: %d candidates", r.Candidates)
		}
		e.clock.Add(2 * time.Hour)
		e.list.set("/data", 1, false)
		if r := e.scan(cleanup.ScanOptions{}); r.Confirmed != 0 || len(r.Holes) != 1 {
			t.Fatalf("failing scan: confirmed %d, holes %+v", r.Confirmed, r.Holes)
		}
		e.list.set("", 0, false)
		e.clock.Add(2 * time.Hour)
		if r := e.scan(cleanup.ScanOptions{}); r.Confirmed != 0 {
			t.Fatalf("the walk after a failed one confirmed %d", r.Confirmed)
		}
		if r := e.propose(); r.Opened != 0 {
			t.Fatalf("proposed after a failed walk: %+v", r)
		}
		e.clock.Add(2 * time.Hour)
		if r := e.scan(cleanup.ScanOptions{}); r.Confirmed != 1 {
			t.Fatalf("two complete walks later: confirmed %d", r.Confirmed)
		}
	})
}

// TestWithdrawnIsNeverExecuted: a proposal the bot withdrew is not executed, by the bot's
// executor or on request, though its remaining files still look like orphans.
func TestWithdrawnIsNeverExecuted(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		recordRead(t, e, "db.events", e.clock.Now(), "q-1")
		paths := confirmOrphans(t, e, 2)
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		must(t, os.Remove(paths[1])) // someone else removed one: the evidence changed
		e.clock.Add(2 * time.Hour)
		e.scan(cleanup.ScanOptions{})
		if r := e.propose(); r.Withdrawn != 1 {
			t.Fatalf("propose: %+v", r)
		}
		// The bot then proposes the remaining file anew; withdraw-and-reopen must not run the old one.
		for _, p := range e.proposals(cleanup.KindOrphanFiles, "open") {
			if _, err := e.svc.Reject(e.person("alice"), p.ID, "not now"); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Proposals != 0 || r.Deleted != 0 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if _, err := e.svc.Execute(e.ctx, ps[0].ID, nil); !errors.Is(err, catalog.ErrConflict) {
			t.Fatalf("executing a withdrawn proposal by ID: %v", err)
		}
		if !exists(paths[0]) {
			t.Fatal("a withdrawn proposal's file was deleted")
		}
	})
}

// TestWorldReReadBeforeDeletion: between approval and execution, another table in the same
// location commits one of the approved orphans as its own data file, and a table of a catalog
// Tidemark does not know moves into a second location. The executor re-reads both: the file
// another table references stays, and the location with a stranger is not touched at all.
func TestWorldReReadBeforeDeletion(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		recordRead(t, e, "db.events", e.clock.Now(), "q-1")
		other := e.lake.Append(e.lake.Create("db.other", nil), tablestest.Rows(0, 2, time.Now()))
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 1 {
			t.Fatalf("sync: %+v %v", rep, err)
		}
		otherID := mustLookup(t, e, "db.other")
		recordRead(t, e, "db.other", e.clock.Now(), "q-2")
		paths := confirmOrphans(t, e, 3)
		leftover := e.lake.WriteFile(other, "data/leftover.parquet", 9, e.clock.Now().Add(-100*time.Hour))
		for range 2 {
			if _, err := e.svc.Scan(e.ctx, otherID, cleanup.ScanOptions{}); err != nil {
				t.Fatal(err)
			}
			e.clock.Add(2 * time.Hour)
		}
		e.propose()
		if n := approveAll(t, e); n != 2 {
			t.Fatalf("approved %d proposals, want the two orphan proposals", n)
		}
		// A table at db.events' location adopts one approved orphan as its data file.
		adopter := e.lake.Create("db.adopter", nil, icecat.WithLocation(e.tbl.Location()))
		adopter = e.lake.AddFiles(adopter, "file://"+paths[0])
		if _, err := e.tables.Sync(e.ctx, nil); err != nil {
			t.Fatal(err)
		}
		// A stranger moves into db.other's location.
		dir := t.TempDir()
		strangers := tablestest.NewLakeOn(t, dir, "sqlite", "file:"+filepath.Join(dir, "s.db"))
		stranger := strangers.Append(strangers.Create("db.stranger", nil, icecat.WithLocation(other.Location())), tablestest.Rows(0, 1, time.Now()))

		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Stopped != 1 || r.Deleted != 2 || r.Skipped != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if !exists(paths[0]) || exists(paths[1]) || exists(paths[2]) || !exists(leftover) {
			t.Fatal("the executor did not re-read who references what before deleting")
		}
		if err := e.lake.Missing(adopter); err != nil { // its file is not Parquet: check presence only
			t.Fatal(err)
		}
		if _, err := strangers.Intact(stranger); err != nil {
			t.Fatal(err)
		}
		stopped := e.proposals(cleanup.KindOrphanFiles, "stopped")
		if len(stopped) != 1 || stopped[0].AssetID != otherID || !strings.Contains(stopped[0].Reason, stranger.Metadata().TableUUID().String()) {
			t.Fatalf("stopped: %+v", stopped)
		}
		// Nothing is proposed there again while the stranger stays.
		e.clock.Add(2 * time.Hour)
		if r := e.propose(); len(e.proposals(cleanup.KindOrphanFiles, "open")) != 0 {
			t.Fatalf("proposed again over a stranger: %+v", r)
		}
	})
}

func mustLookup(t *testing.T, e *env, name string) uuid.UUID {
	t.Helper()
	ref, ok, err := e.cat.Lookup(e.ctx, catalog.SpaceDataset, "iceberg://lake", name)
	if err != nil || !ok {
		t.Fatalf("%s: %v", name, err)
	}
	return ref.ID
}

// TestRetirementDeletesOnlyWhatItKnows: retiring a table deletes what its last metadata
// referenced and its confirmed orphans; an old file in its location that no scan confirmed
// stays (it may be another writer's), and so does one confirmed but rewritten since.
func TestRetirementDeletesOnlyWhatItKnows(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		confirmed := confirmOrphans(t, e, 2)
		e.clock.Add(100 * 24 * time.Hour)
		unconfirmed := e.lake.WriteFile(e.tbl, "data/written-by-someone-else.parquet", 10, e.clock.Now().Add(-100*time.Hour))
		e.propose()
		ps := e.proposals(cleanup.KindUnusedAsset, "open")
		if len(ps) != 1 {
			t.Fatalf("unused proposals: %+v", ps)
		}
		_, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire")
		must(t, err)
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Waiting != 1 {
			t.Fatalf("metadata step: %+v %v", r, err)
		}
		e.clock.Add(8 * 24 * time.Hour)
		now := e.clock.Now()
		must(t, os.Chtimes(confirmed[1], now, now)) // rewritten during the grace period
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 {
			t.Fatalf("file step: %+v %v", r, err)
		}
		if !exists(unconfirmed) || exists(confirmed[0]) || !exists(confirmed[1]) {
			t.Fatalf("after retirement: unconfirmed kept %v, confirmed orphan deleted %v, rewritten kept %v",
				exists(unconfirmed), !exists(confirmed[0]), exists(confirmed[1]))
		}
		for _, f := range e.lake.DiskFiles() {
			if f != unconfirmed && f != confirmed[1] {
				t.Fatalf("left behind, though the retired table referenced it: %s", f)
			}
		}
	})
}

// TestUnreadableWorldWaits: when the tables around an approved proposal cannot be read (here
// the table was renamed in its catalog and not synced yet), nothing is deleted and the proposal
// waits; after the sync it runs.
func TestUnreadableWorldWaits(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		recordRead(t, e, "db.events", e.clock.Now(), "q-1")
		paths := confirmOrphans(t, e, 1)
		e.propose()
		approveAll(t, e)
		if _, err := e.lake.Cat.RenameTable(e.ctx, table.Identifier{"db", "events"}, table.Identifier{"db", "events_v2"}); err != nil {
			t.Fatal(err)
		}
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Waiting != 1 || r.Failed != 0 || r.Deleted != 0 || !exists(paths[0]) {
			t.Fatalf("execute before the sync: %+v %v", r, err)
		}
		if ps := e.proposals(cleanup.KindOrphanFiles, "executing"); len(ps) != 1 {
			t.Fatalf("the proposal does not wait: %+v", e.proposals(cleanup.KindOrphanFiles, ""))
		}
		if _, err := e.tables.Sync(e.ctx, nil); err != nil {
			t.Fatal(err)
		}
		if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Executed != 1 || r.Deleted != 1 || exists(paths[0]) {
			t.Fatalf("execute after the sync: %+v %v", r, err)
		}
	})
}

// TestTooSoonWalkStillForgets: a walk too soon after the last one confirms nothing, but what it
// did not see unreferenced is forgotten: a file gone during it and back after it (same size and
// time) starts again.
func TestTooSoonWalkStillForgets(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		mt := e.clock.Now().Add(-100 * time.Hour)
		x := e.lake.WriteFile(e.tbl, "data/x.parquet", 10, mt)
		y := e.lake.WriteFile(e.tbl, "data/y.parquet", 10, mt)
		e.scan(cleanup.ScanOptions{})
		must(t, os.Remove(x))
		e.clock.Add(10 * time.Minute)
		if r := e.scan(cleanup.ScanOptions{}); r.TooSoonShards == 0 || r.Confirmed != 0 {
			t.Fatalf("second scan: too soon %d, confirmed %d", r.TooSoonShards, r.Confirmed)
		}
		e.lake.WriteFile(e.tbl, "data/x.parquet", 10, mt)
		e.clock.Add(time.Hour)
		r := e.scan(cleanup.ScanOptions{})
		if r.Confirmed != 1 || !strings.HasSuffix(r.ConfirmedSample[0], "/data/y.parquet") {
			t.Fatalf("third scan confirmed %d %v, want only %s", r.Confirmed, r.ConfirmedSample, y)
		}
	})
}
