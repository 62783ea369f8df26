package cleanup_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// expiryList is an expiry proposal's file list: the files, their local paths and their bytes.
func expiryList(t *testing.T, e *env, id uuid.UUID) ([]cleanup.ProposalFile, []string, int64) {
	t.Helper()
	fs, err := e.svc.ProposalFiles(e.ctx, id, cleanup.FileFilter{})
	must(t, err)
	var paths []string
	var bytes int64
	for _, f := range fs {
		paths = append(paths, localPath(f.Path))
		bytes += f.Size
	}
	slices.Sort(paths)
	return fs, paths, bytes
}

func localPath(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:") }

// removedSince is what was on disk before and is not now.
func removedSince(before, after []string) []string {
	var out []string
	for _, p := range before {
		if _, found := slices.BinarySearch(after, p); !found {
			out = append(out, p)
		}
	}
	return out
}

// TestExpiryListsItsFiles: an expiry proposal lists the exact files its execution deletes,
// with their sizes and modification times as storage has them, and its evidence totals them;
// it is approved only with the typed count and bytes; executing it deletes exactly the list
// (compared with the disk before and after) and leaves every file a retained snapshot needs.
func TestExpiryListsItsFiles(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		// An overwrite before the expiring snapshots end: its manifests are theirs alone too.
		var err error
		e.tbl, err = e.tbl.Overwrite(e.ctx, e.lake.Record(e.tbl, tablestest.Rows(50, 3, time.Now())), nil)
		must(t, err)
		ps := proposeExpiry(t, e)
		if len(ps) != 1 {
			t.Fatalf("expiry proposals: %+v", ps)
		}
		p := ps[0]
		fs, listed, bytes := expiryList(t, e, p.ID)
		if len(fs) == 0 || !p.Evidence.FileList || p.Evidence.Files != int64(len(fs)) || p.Evidence.Bytes != bytes {
			t.Fatalf("evidence %+v for a list of %d files (%d bytes)", p.Evidence, len(fs), bytes)
		}
		if want := fmt.Sprintf("%d files (%s)", len(fs), cleanup.BytesText(bytes)); !strings.Contains(p.Evidence.Summary, want) {
			t.Fatalf("the summary does not say %q: %s", want, p.Evidence.Summary)
		}
		for _, f := range fs {
			st, err := os.Stat(localPath(f.Path))
			if err != nil || st.Size() != f.Size || f.ModifiedAt == nil || f.ModifiedAt.Sub(st.ModTime()).Abs() > time.Millisecond || f.State != "pending" {
				t.Fatalf("listed %+v; on disk %v %v", f, st, err)
			}
		}
		// The approval names the count and bytes it deletes; the service-level Approve (tests,
		// the CLI) checks nothing, as for orphan_files.
		got, err := e.svc.GetProposal(e.ctx, p.ID)
		must(t, err)
		if !got.ConfirmsFiles() || got.FileCount != int64(len(fs)) || got.FileBytes != bytes {
			t.Fatalf("proposal: confirms %v, %d files, %d bytes", got.ConfirmsFiles(), got.FileCount, got.FileBytes)
		}
		n, wrong := int64(len(fs)), int64(len(fs)-1)
		for _, a := range []cleanup.Approval{{}, {Files: &n}, {Files: &wrong, Bytes: &bytes}, {Files: &n, Bytes: &wrong}} {
			if _, err := e.svc.ApproveConfirmed(e.person("alice"), p.ID, a); !errors.Is(err, catalog.ErrInvalid) {
				t.Fatalf("approved with %+v: %v", a, err)
			}
		}
		if _, err := e.svc.ApproveConfirmed(e.person("alice"), p.ID, cleanup.Approval{Files: &n, Bytes: &bytes}); err != nil {
			t.Fatal(err)
		}
		before := e.lake.DiskFiles()
		e.clock.Add(100 * time.Hour) // older than the age threshold
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Deleted != int64(len(fs)) || r.Bytes != bytes || r.Skipped != 0 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if deleted := removedSince(before, e.lake.DiskFiles()); !slices.Equal(deleted, listed) {
			t.Fatalf("deleted %v\nlisted  %v", deleted, listed)
		}
		if fs, _, _ = expiryList(t, e, p.ID); slices.ContainsFunc(fs, func(f cleanup.ProposalFile) bool { return f.State != "deleted" }) {
			t.Fatalf("journal: %+v", fs)
		}
		if rc := e.checkRefs(); rc.DanglingCount != 0 {
			t.Fatalf("dangling after expiry: %d", rc.DanglingCount)
		}
	})
}

// TestExpiryKeepsAFileReferencedAgain: a listed file a commit references again between the
// approval and the execution is journaled as skipped, with the reason, and stays; the others
// are deleted.
func TestExpiryKeepsAFileReferencedAgain(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		ps := proposeExpiry(t, e)
		fs, listed, _ := expiryList(t, e, ps[0].ID)
		if len(fs) < 2 {
			t.Fatalf("the list: %+v", fs)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		again := fs[0]
		e.tbl = e.lake.AddFiles(e.tbl, again.Path) // a writer commits the file again
		before := e.lake.DiskFiles()
		e.clock.Add(100 * time.Hour)
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Deleted != int64(len(fs)-1) {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if !exists(localPath(again.Path)) {
			t.Fatalf("the file referenced again was deleted: %s", again.Path)
		}
		want := slices.DeleteFunc(slices.Clone(listed), func(p string) bool { return p == localPath(again.Path) })
		if deleted := removedSince(before, e.lake.DiskFiles()); !slices.Equal(deleted, want) {
			t.Fatalf("deleted %v\nwant    %v", deleted, want)
		}
		skipped, err := e.svc.ProposalFiles(e.ctx, ps[0].ID, cleanup.FileFilter{State: "skipped"})
		must(t, err)
		if len(skipped) != 1 || skipped[0].Path != again.Path || !strings.Contains(skipped[0].Detail, "referenced again since the approval") {
			t.Fatalf("skipped: %+v", skipped)
		}
		if rc := e.checkRefs(); rc.DanglingCount != 0 {
			t.Fatalf("dangling after expiry: %d", rc.DanglingCount)
		}
	})
}

// TestExpiryResumesAfterItsCommit: a crash right after the expiry commit leaves the listed
// files pending; the next run finds the snapshots gone and deletes exactly the list.
func TestExpiryResumesAfterItsCommit(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		crashed := false
		e := newEnv(t, db, cleanup.WithFault(func(point string) error {
			if point == "after_expire_commit" && !crashed {
				crashed = true
				return errors.New("killed")
			}
			return nil
		}))
		ps := proposeExpiry(t, e)
		_, listed, _ := expiryList(t, e, ps[0].ID)
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		before := e.lake.DiskFiles()
		e.clock.Add(100 * time.Hour)
		if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err == nil || !crashed {
			t.Fatalf("no crash: %v", err)
		}
		if deleted := removedSince(before, e.lake.DiskFiles()); len(deleted) != 0 {
			t.Fatalf("deleted before the journal: %v", deleted)
		}
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Deleted != int64(len(listed)) {
			t.Fatalf("execute after the crash: %+v %v", r, err)
		}
		if deleted := removedSince(before, e.lake.DiskFiles()); !slices.Equal(deleted, listed) {
			t.Fatalf("deleted %v\nlisted  %v", deleted, listed)
		}
	})
}

// TestExpiryWithoutAList: an expiry proposal opened before proposals listed their files (no
// file_list in its evidence, no files) needs no typed count, and its execution still finds
// and deletes the files only the removed snapshots referenced.
func TestExpiryWithoutAList(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		ps := proposeExpiry(t, e)
		_, listed, bytes := expiryList(t, e, ps[0].ID)
		stripList(t, e, db, ps[0])
		if _, err := e.svc.ApproveConfirmed(e.person("alice"), ps[0].ID, cleanup.Approval{}); err != nil {
			t.Fatalf("approving an expiry without a list: %v", err)
		}
		before := e.lake.DiskFiles()
		e.clock.Add(100 * time.Hour)
		r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
		if err != nil || r.Executed != 1 || r.Bytes != bytes {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if deleted := removedSince(before, e.lake.DiskFiles()); !slices.Equal(deleted, listed) {
			t.Fatalf("deleted %v\nwant    %v", deleted, listed)
		}
		if p, _ := db.Client.Proposal.Get(e.ctx, ps[0].ID); p.State != proposal.StateExecuted {
			t.Fatalf("state %s", p.State)
		}
	})
}

// stripList makes an expiry proposal what a version before file lists opened: no file_list in
// its evidence, no files.
func stripList(t *testing.T, e *env, db *storage.DB, p cleanup.Proposal) {
	t.Helper()
	ev := p.Evidence
	ev.FileList, ev.Files, ev.Bytes, ev.MonthlyCost, ev.AgeThreshold = false, 0, 0, 0, ""
	body, err := json.Marshal(ev)
	must(t, err)
	_, err = db.SQL.ExecContext(e.ctx, "UPDATE proposals SET evidence = $1 WHERE id = $2", string(body), p.ID.String())
	must(t, err)
	_, err = db.Client.ProposalFile.Delete().Where(proposalfile.ProposalID(p.ID)).Exec(e.ctx)
	must(t, err)
}
