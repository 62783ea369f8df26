package restcatalog_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
)

// localPath is a file URI or path as the disk names it.
func localPath(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:") }

// filesUnder lists the files on disk under a table location.
func filesUnder(t *testing.T, loc string) []string {
	t.Helper()
	dir := localPath(loc)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return diskFiles(t, dir)
}

// purgeProposals are the purge proposals of an asset (any state).
func purgeProposals(t *testing.T, s *testServer, asset uuid.UUID) []cleanup.Proposal {
	t.Helper()
	ps, err := s.App.Cleanup.Proposals(context.Background(), cleanup.ProposalFilter{Kind: cleanup.KindPurge, AssetID: asset, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// proposalPaths are the local paths of a proposal's file list.
func proposalPaths(t *testing.T, s *testServer, id uuid.UUID) []string {
	t.Helper()
	fs, err := s.App.Cleanup.ProposalFiles(context.Background(), id, cleanup.FileFilter{Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = localPath(f.Path)
	}
	return out
}

// TestPurgeThroughTheBot: a drop with purgeRequested leads to one purge proposal (however often
// the bot runs, and on two replicas at once, one of which never saw the drop), nothing is deleted
// before a person approves it with the typed counts, nor before the retire grace; then exactly
// the dropped table's files go, metadata files first. A table created afterwards at the very same
// location (its files in the same directories) keeps every file, including one of the dropped
// table's data files it committed; a table re-created under the dropped name keeps its own; a
// drop without purge proposes nothing.
func TestPurgeThroughTheBot(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		var deletions, crashAt int // the executor crashes before its crashAt-th deletion
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now), cleanup.WithFault(func(point string) error {
				if point == "orphan_file" {
					if deletions++; deletions == crashAt {
						return errors.New("killed")
					}
				}
				return nil
			}))
		})
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		cat := s.client(t)

		// The table to purge, with two commits.
		a := create(t, cat, "p", "a")
		a = s.append(t, a, 0, 3)
		a = s.append(t, a, 3, 3)
		aID := assetOf(t, s, a)
		aLoc := a.Location()
		aFiles := filesUnder(t, aLoc)
		var aData []string
		records := map[string]int64{}
		for p, f := range s.lake.Files(a, *a.CurrentSnapshot()) {
			aData = append(aData, localPath(p))
			records[localPath(p)] = f[1]
		}
		slices.Sort(aData)
		if len(aFiles) < 8 || len(aData) != 2 {
			t.Fatalf("the table to purge has %d files, %d data files: %v", len(aFiles), len(aData), aFiles)
		}
		// A table dropped without purge.
		d := create(t, cat, "p", "d")
		d = s.append(t, d, 0, 2)
		dID := assetOf(t, s, d)
		dFiles := filesUnder(t, d.Location())
		if err := cat.DropTable(ctx, table.Identifier{"p", "d"}); err != nil {
			t.Fatal(err)
		}

		if err := cat.(icecat.PurgeableTable).PurgeTable(ctx, table.Identifier{"p", "a"}); err != nil {
			t.Fatalf("purge: %v", err)
		}
		if got := filesUnder(t, aLoc); !slices.Equal(got, aFiles) {
			t.Fatalf("the drop deleted files: %d before, %d after", len(aFiles), len(got))
		}
		// The drop told the bot at once: the proposal is open before any round of it.
		if ps := purgeProposals(t, s, aID); len(ps) != 1 || ps[0].State != "open" {
			t.Fatalf("right after the purge-drop: %+v, want one open purge proposal", ps)
		}

		// The location is free now: a new table takes it (its files in the same directories) and
		// commits one of the purged table's data files as its own.
		b := create(t, cat, "p", "b", icecat.WithLocation(aLoc))
		b = s.append(t, b, 100, 4)
		b = s.lake.AddFiles(b, "file://"+aData[0])
		bWant := 4 + records[aData[0]]
		bRows, err := s.lake.Intact(b)
		if err != nil || bRows != bWant {
			t.Fatalf("table b before the purge: %d rows, %v", bRows, err)
		}
		// And the dropped name is taken again, by a new table.
		a2 := create(t, cat, "p", "a")
		a2 = s.append(t, a2, 0, 2)
		if assetOf(t, s, a2) == aID {
			t.Fatal("the re-created table has the purged table's asset")
		}
		a2Files := filesUnder(t, a2.Location())
		keep := slices.DeleteFunc(filesUnder(t, aLoc), func(p string) bool { return slices.Contains(aFiles, p) })
		keep = append(keep, aData[0]) // b references it

		// Two replicas at once, one of them never having seen the drop (as after a crash right
		// after it); then the bot again and the immediate trigger: one proposal.
		other, err := app.Open(ctx, db, app.Config{Tables: []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: s.Warehouse})},
			Cleanup: []cleanup.Option{cleanup.WithClock(clock.Now)}})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := other.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, svc := range []*cleanup.Service{s.App.Cleanup, other.Cleanup} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = svc.Propose(ctx)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Cleanup.ProposePurges(ctx); err != nil {
			t.Fatal(err)
		}
		ps := purgeProposals(t, s, aID)
		if len(ps) != 1 || ps[0].State != "open" || !ps[0].ConfirmsFiles() || ps[0].Severity != "high" {
			t.Fatalf("purge proposals of the dropped table: %+v", ps)
		}
		if got := purgeProposals(t, s, dID); len(got) != 0 {
			t.Fatalf("a drop without purge got a purge proposal: %+v", got)
		}
		p := ps[0]
		ev := p.Evidence
		if ev.Purge == nil || ev.Purge.DroppedBy != "token:engine" || ev.Purge.KeptReferenced != 0 || ev.Purge.FromInventory == 0 ||
			ev.TableUUID != a.Metadata().TableUUID().String() || !strings.Contains(ev.Summary, "purgeRequested") {
			t.Fatalf("evidence: %+v %+v", ev, ev.Purge)
		}

		// Exactly the dropped table's files, metadata first: listed at the drop, before b took
		// the location and one of them, so the executor's re-read must keep that one.
		listed := proposalPaths(t, s, p.ID)
		want := slices.Clone(aFiles)
		if got := slices.Sorted(slices.Values(listed)); !slices.Equal(got, want) {
			t.Fatalf("listed %d files:\n%v\nwant the dropped table's %d:\n%v", len(got), got, len(want), want)
		}
		if ev.Files != int64(len(want)) {
			t.Fatalf("evidence says %d files, the list has %d", ev.Files, len(want))
		}
		firstData := slices.IndexFunc(listed, func(p string) bool { return strings.Contains(p, "/data/") })
		lastMeta := -1
		for i, p := range listed {
			if strings.HasSuffix(p, ".metadata.json") {
				lastMeta = i
			}
		}
		if firstData < 0 || lastMeta < 0 || lastMeta > firstData {
			t.Fatalf("metadata files are not listed before data files: %v", listed)
		}

		// Nothing is deleted before approval, even long after the grace period.
		clock.Add(8 * 24 * time.Hour)
		if rep, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil); err != nil || rep.Deleted != 0 {
			t.Fatalf("execute before approval: %+v %v", rep, err)
		}
		if got := filesUnder(t, aLoc); len(got) != len(aFiles)+len(keep)-1 {
			t.Fatalf("files went before approval: %d left", len(got))
		}
		clock.Add(-8 * 24 * time.Hour)

		// The approval names the counts.
		alice := catalog.WithActor(ctx, "token:alice")
		if _, err := s.App.Cleanup.ApproveConfirmed(alice, p.ID, cleanup.Approval{}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("approve without counts: %v", err)
		}
		n := int64(len(want))
		full, err := s.App.Cleanup.GetProposal(ctx, p.ID)
		if err != nil || full.FileCount != n || full.FileBytes != ev.Bytes {
			t.Fatalf("proposal counts %d files (%d bytes), want %d (%d bytes) (%v)", full.FileCount, full.FileBytes, n, ev.Bytes, err)
		}
		bytes, wrong := full.FileBytes, n-1
		if _, err := s.App.Cleanup.ApproveConfirmed(alice, p.ID, cleanup.Approval{Files: &wrong, Bytes: &bytes}); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("approve with a wrong count: %v", err)
		}
		if _, err := s.App.Cleanup.ApproveConfirmed(alice, p.ID, cleanup.Approval{Files: &n, Bytes: &bytes}); err != nil {
			t.Fatal(err)
		}

		// Within the retire grace after the drop it waits.
		rep, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil)
		if err != nil || rep.Deleted != 0 || rep.Waiting != 1 {
			t.Fatalf("execute within the grace: %+v %v", rep, err)
		}
		if got := filesUnder(t, aLoc); len(got) != len(aFiles)+len(keep)-1 {
			t.Fatalf("files went within the grace: %d left", len(got))
		}

		// A crash after three deletions: only metadata files went (what remains points to
		// nothing missing); the rerun finishes.
		clock.Add(8 * 24 * time.Hour)
		crashAt = 4
		if _, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil); err == nil || !strings.Contains(err.Error(), "injected crash") {
			t.Fatalf("execute with a crash: %v", err)
		}
		now := filesUnder(t, aLoc)
		var gone []string
		for _, p := range aFiles {
			if !slices.Contains(now, p) {
				gone = append(gone, p)
			}
		}
		if len(gone) != 3 || slices.ContainsFunc(gone, func(p string) bool { return !strings.HasSuffix(p, ".metadata.json") }) {
			t.Fatalf("after a crash after three deletions, gone: %v", gone)
		}
		// The data file b committed as its own is skipped: referenced right before its deletion.
		if rep, err = s.App.Cleanup.Execute(ctx, uuid.Nil, nil); err != nil || rep.Executed != 1 || rep.Deleted != n-4 || rep.Skipped != 1 {
			t.Fatalf("execute after the crash: %+v %v", rep, err)
		}
		done, err := s.App.Cleanup.GetProposal(ctx, p.ID)
		if err != nil || done.State != "executed" || done.Files["deleted"] != int(n)-1 {
			t.Fatalf("after execution: %+v %v", done, err)
		}
		left := filesUnder(t, aLoc)
		slices.Sort(keep)
		if !slices.Equal(left, keep) {
			t.Fatalf("left at the location:\n%v\nwant table b's files:\n%v", left, keep)
		}
		if got := filesUnder(t, a2.Location()); !slices.Equal(got, a2Files) {
			t.Fatalf("the re-created table lost files: %v, had %v", got, a2Files)
		}
		if got := filesUnder(t, d.Location()); !slices.Equal(got, dFiles) {
			t.Fatalf("the table dropped without purge lost files")
		}
		for _, tb := range []struct {
			name string
			rows int64
		}{{"b", bWant}, {"a", 2}} {
			tbl, err := cat.LoadTable(ctx, table.Identifier{"p", tb.name})
			if err != nil {
				t.Fatal(err)
			}
			if rows, err := s.lake.Intact(tbl); err != nil || rows != tb.rows {
				t.Fatalf("table %s after the purge: %d rows, %v", tb.name, rows, err)
			}
		}
		// Done once: the bot proposes nothing more for it.
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		if got := purgeProposals(t, s, aID); len(got) != 1 {
			t.Fatalf("purge proposals after execution: %d", len(got))
		}
	})
}

// TestPurgeStandsOnlyWhileTheTableIsGone: a purged table registered again from its last
// metadata keeps every file: its approved purge stops before deleting anything, and a later
// purge's open proposal is withdrawn when the table comes back before anyone decides. Each drop
// with purgeRequested is its own purge, with its own proposal.
func TestPurgeStandsOnlyWhileTheTableIsGone(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now))
		})
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		cat := s.client(t)
		ident := table.Identifier{"q", "t"}
		tbl := create(t, cat, "q", "t")
		tbl = s.append(t, tbl, 0, 3)
		id := assetOf(t, s, tbl)
		files := filesUnder(t, tbl.Location())
		last := tbl.MetadataLocation()
		purge := func() cleanup.Proposal {
			t.Helper()
			before := len(purgeProposals(t, s, id))
			if err := cat.(icecat.PurgeableTable).PurgeTable(ctx, ident); err != nil {
				t.Fatalf("purge: %v", err)
			}
			if now := len(purgeProposals(t, s, id)); now != before+1 {
				t.Fatalf("right after the purge-drop: %d purge proposals, had %d; want the drop to propose at once", now, before)
			}
			if _, err := s.App.Cleanup.Propose(ctx); err != nil { // and a round adds none
				t.Fatal(err)
			}
			ps := purgeProposals(t, s, id)
			if len(ps) != before+1 || ps[0].State != "open" {
				t.Fatalf("after a purge: %d purge proposals, had %d: %+v", len(ps), before, ps)
			}
			return ps[0]
		}
		register := func() {
			t.Helper()
			back, err := cat.(interface {
				RegisterTable(context.Context, table.Identifier, string) (*table.Table, error)
			}).RegisterTable(ctx, ident, last)
			if err != nil {
				t.Fatalf("register again: %v", err)
			}
			if assetOf(t, s, back) != id {
				t.Fatal("the table registered again has another asset")
			}
		}

		first := purge()
		full, err := s.App.Cleanup.GetProposal(ctx, first.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Cleanup.ApproveConfirmed(catalog.WithActor(ctx, "token:alice"), first.ID,
			cleanup.Approval{Files: &full.FileCount, Bytes: &full.FileBytes}); err != nil {
			t.Fatal(err)
		}
		register() // during the grace period
		clock.Add(8 * 24 * time.Hour)
		rep, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil)
		if err != nil || rep.Stopped != 1 || rep.Deleted != 0 {
			t.Fatalf("execute the purge of a table registered again: %+v %v", rep, err)
		}
		if got, err := s.App.Cleanup.GetProposal(ctx, first.ID); err != nil || got.State != "stopped" || !strings.Contains(got.Reason, "registered again") {
			t.Fatalf("the purge of a table registered again: %s (%s) %v", got.State, got.Reason, err)
		}
		if got := filesUnder(t, tbl.Location()); !slices.Equal(got, files) {
			t.Fatalf("files went: %d of %d left", len(got), len(files))
		}

		second := purge() // a new drop: a new purge
		if second.ID == first.ID || second.Evidence.Purge.DropCommit == first.Evidence.Purge.DropCommit {
			t.Fatal("the second purge reuses the first one's proposal")
		}
		register() // before anyone decides
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := s.App.Cleanup.GetProposal(ctx, second.ID); err != nil || got.State != "withdrawn" {
			t.Fatalf("the open purge of a table registered again: %s (%s) %v", got.State, got.Reason, err)
		}
		loaded, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if rows, err := s.lake.Intact(loaded); err != nil || rows != 3 {
			t.Fatalf("the table registered again: %d rows, %v", rows, err)
		}
		if got := filesUnder(t, tbl.Location()); !slices.Equal(got, files) {
			t.Fatalf("files went: %d of %d left", len(got), len(files))
		}
	})
}
