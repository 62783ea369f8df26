package cleanup_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// checkRefs runs a reference check that must end without error, with a short recheck delay.
func (e *env) checkRefs() cleanup.RefCheckReport {
	e.t.Helper()
	r, err := e.svc.CheckRefs(e.ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond})
	if err != nil {
		e.t.Fatalf("reference check: %v", err)
	}
	if r.State != "complete" {
		e.t.Fatalf("reference check %s: %s", r.State, r.Summary)
	}
	return r
}

// liveFiles are the data files a snapshot references, by path.
func liveFiles(t *testing.T, e *env, snap *table.Snapshot) []string {
	t.Helper()
	fs, err := e.tbl.FS(e.ctx)
	must(t, err)
	mfs, err := snap.Manifests(fs)
	must(t, err)
	var out []string
	for _, m := range mfs {
		for en, err := range m.Entries(fs, true) {
			must(t, err)
			out = append(out, en.DataFile().FilePath())
		}
	}
	slices.Sort(out)
	return out
}

// TestRefCheck: every retained snapshot's files are checked by key, never by a walk: a missing
// data file is found and checked twice, a missing manifest is found though its entries are in the
// manifest cache, and nothing is written.
func TestRefCheck(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		// Two appends: metadata, two manifest lists, two manifests, two data files.
		r := e.checkRefs()
		if r.DanglingCount != 0 || r.FilesChecked != 7 || r.Requests.Head != 7 || r.Units != 3 || r.UnitsChecked != 3 || len(r.Snapshots) != 2 {
			t.Fatalf("first check: %+v", r)
		}
		if ref := r.Refs; len(ref) != 1 || ref[0].Name != "main" || ref[0].ManifestsChecked != 2 || ref[0].FilesChecked == 0 {
			t.Fatalf("coverage of main: %+v", ref)
		}
		files := liveFiles(t, e, e.tbl.CurrentSnapshot())
		victim := files[0]
		must(t, os.Remove(strings.TrimPrefix(victim, "file://")))
		before := e.lake.DiskFiles()
		r = e.checkRefs()
		if r.DanglingCount != 1 || r.Dangling[0].Path != victim || r.Dangling[0].Content != "data" || !slices.Equal(r.Dangling[0].Refs, []string{"main"}) ||
			r.MissingFirst != 1 || !r.Rechecked || r.Requests.Head != 8 {
			t.Fatalf("a missing data file: %+v", r)
		}
		if !strings.Contains(r.Summary, "1 files were missing on the first check and 1 on the second: 1 dangling references") {
			t.Fatalf("summary: %s", r.Summary)
		}
		if after := e.lake.DiskFiles(); !slices.Equal(before, after) {
			t.Fatalf("the check wrote or removed files")
		}

		// A missing manifest is a dangling reference; its entries, cached, are still checked.
		fs, _ := e.tbl.FS(e.ctx)
		mfs, err := e.tbl.CurrentSnapshot().Manifests(fs)
		must(t, err)
		manifest := mfs[len(mfs)-1].FilePath()
		must(t, os.Remove(strings.TrimPrefix(manifest, "file://")))
		r = e.checkRefs()
		var got []string
		for _, d := range r.Dangling {
			got = append(got, d.Content)
		}
		slices.Sort(got)
		if r.DanglingCount != 2 || !slices.Equal(got, []string{"data", "manifest"}) || r.FilesChecked != 7 {
			t.Fatalf("after removing a manifest: %+v", r)
		}
	})
}

// TestRefCheckTagOnly: a file that only a tag's snapshot references (the current snapshot
// overwrote it) is checked, and its loss is reported with the tag that references it.
func TestRefCheckTagOnly(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		tagged := e.tbl.CurrentSnapshot().SnapshotID
		_, _, err := e.lake.Cat.CommitTable(e.ctx, table.Identifier{"db", "events"}, nil,
			[]table.Update{table.NewSetSnapshotRefUpdate("audit-2026", tagged, table.TagRef, 0, 0, 0)})
		must(t, err)
		e.tbl, err = e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
		must(t, err)
		old := liveFiles(t, e, e.tbl.SnapshotByID(tagged))
		e.tbl, err = e.tbl.Overwrite(e.ctx, e.lake.Record(e.tbl, tablestest.Rows(100, 3, time.Now())), nil)
		must(t, err)
		_, err = e.tables.Refresh(e.ctx, e.id)
		must(t, err)
		current := liveFiles(t, e, e.tbl.CurrentSnapshot())
		var tagOnly string
		for _, f := range old {
			if !slices.Contains(current, f) {
				tagOnly = f
				break
			}
		}
		if tagOnly == "" {
			t.Fatalf("the overwrite kept every old file: %v", current)
		}
		must(t, os.Remove(strings.TrimPrefix(tagOnly, "file://")))
		r := e.checkRefs()
		var found *cleanup.DanglingRef
		for i := range r.Dangling {
			if r.Dangling[i].Path == tagOnly {
				found = &r.Dangling[i]
			}
		}
		if found == nil || r.DanglingCount != 1 || !slices.Contains(found.Refs, "audit-2026") || slices.Contains(found.Refs, "main") {
			t.Fatalf("a file only the tag references: %+v", r.Dangling)
		}
		var tag *cleanup.RefCoverage
		for i := range r.Refs {
			if r.Refs[i].Name == "audit-2026" {
				tag = &r.Refs[i]
			}
		}
		if tag == nil || tag.SnapshotID != tagged || tag.ManifestsChecked != tag.Manifests || tag.FilesChecked == 0 {
			t.Fatalf("coverage of the tag: %+v", r.Refs)
		}
	})
}

// TestRefCheckResumes: a check stopped after its first unit says how far it got, counts only the
// files it checked and claims nothing of the rest; the next run resumes the same pass without
// checking the first unit again and finds the missing file. A check stopped during its second
// check of the missing files reports none as dangling (and none as fine) until it is resumed.
func TestRefCheckResumes(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		files := liveFiles(t, e, e.tbl.CurrentSnapshot())
		victim := files[len(files)-1]
		must(t, os.Remove(strings.TrimPrefix(victim, "file://")))

		ctx, cancel := context.WithCancel(e.ctx)
		stopAfter := func(units int) func(cleanup.RefCheckProgress) {
			return func(p cleanup.RefCheckProgress) {
				if p.UnitsDone >= units {
					cancel()
				}
			}
		}
		r1, err := e.svc.CheckRefs(ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: time.Millisecond, Progress: stopAfter(1)})
		if !errors.Is(err, context.Canceled) || r1.State != "stopped" || r1.UnitsChecked != 1 || r1.Units != 3 || r1.Rechecked || r1.DanglingCount != 0 {
			t.Fatalf("stopped check: %v %+v", err, r1)
		}
		// The structure unit: the metadata file and two manifest lists, each checked by a HEAD.
		if r1.FilesChecked != 3 || r1.Requests.Head != 3 || !strings.Contains(r1.Summary, "stopped before it finished: 2 units are not checked yet") ||
			strings.Contains(r1.Summary, "dangling references") {
			t.Fatalf("the stopped check's figures: checked %d, HEAD %d: %s", r1.FilesChecked, r1.Requests.Head, r1.Summary)
		}
		r2 := e.checkRefs()
		if r2.CheckID != r1.CheckID || r2.Runs != 2 || r2.Requests.Head != 4+1 || r2.FilesChecked != 7 || r2.DanglingCount != 1 || r2.Dangling[0].Path != victim {
			t.Fatalf("resumed check: %+v", r2)
		}

		// Stopped while waiting for the second check: nothing is called dangling, or fine.
		ctx, cancel = context.WithCancel(e.ctx)
		r3, err := e.svc.CheckRefs(ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: time.Hour, Fresh: true, Progress: func(p cleanup.RefCheckProgress) {
			if p.Phase == "rechecking" {
				cancel()
			}
		}})
		if !errors.Is(err, context.Canceled) || r3.State != "stopped" || r3.CheckID == r2.CheckID || r3.Rechecked || r3.MissingFirst != 1 || r3.DanglingCount != 0 ||
			!strings.Contains(r3.Summary, "1 files were missing on the first check; the second check has not run") {
			t.Fatalf("stopped during the second check: %v %+v", err, r3)
		}
		r4 := e.checkRefs()
		if r4.CheckID != r3.CheckID || r4.Requests.Head != 1 || r4.DanglingCount != 1 {
			t.Fatalf("resumed for its second check only: %+v", r4)
		}
	})
}

// TestRefChecksScheduled: the scheduler checks a table never checked, leaves it until the
// cadence has passed, resumes a stopped pass soon after, and runs apart from scans.
func TestRefChecksScheduled(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		opt := cleanup.RefCheckOptions{RecheckDelay: time.Millisecond}
		if n, err := e.svc.CheckRefsDue(e.ctx, 24*time.Hour, opt); err != nil || n != 1 {
			t.Fatalf("first round: %d %v", n, err)
		}
		if n, err := e.svc.CheckRefsDue(e.ctx, 24*time.Hour, opt); err != nil || n != 0 {
			t.Fatalf("not due yet: %d %v", n, err)
		}
		e.clock.Add(25 * time.Hour)
		ctx, cancel := context.WithCancel(e.ctx)
		stopped, err := e.svc.CheckRefs(ctx, e.id, cleanup.RefCheckOptions{Progress: func(cleanup.RefCheckProgress) { cancel() }})
		if !errors.Is(err, context.Canceled) || stopped.State != "stopped" {
			t.Fatalf("stopped: %v %+v", err, stopped)
		}
		if n, err := e.svc.CheckRefsDue(e.ctx, 24*time.Hour, opt); err != nil || n != 0 {
			t.Fatalf("resumed at once: %d %v", n, err) // within a lease period of its stop
		}
		e.clock.Add(cleanup.DefaultLeaseTTL)
		if n, err := e.svc.CheckRefsDue(e.ctx, 24*time.Hour, opt); err != nil || n != 1 {
			t.Fatalf("resume round: %d %v", n, err)
		}
		checks, err := e.svc.RefChecks(e.ctx, cleanup.RefCheckFilter{AssetID: e.id, Limit: 10})
		must(t, err)
		if len(checks) != 2 || checks[0].CheckID != stopped.CheckID || checks[0].State != "complete" || checks[0].Runs != 2 {
			t.Fatalf("checks: %+v", checks)
		}
		if scans, _ := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: e.id, Limit: 1}); len(scans) != 0 {
			t.Fatalf("a reference check ran a scan: %+v", scans)
		}
	})
}
