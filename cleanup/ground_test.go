package cleanup_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestExpiryStaysOnItsOwnGround is issue 42's first reproduction, at the executor: a table
// whose expired snapshots name another live table's data file and a file outside every table's
// location. An approved expiry deletes neither (the other table references its file; the
// stray file is not on the table's ground), and the other table still reads: its proposal never
// lists them, and one opened before proposals listed their files skips them and says why.
func TestExpiryStaysOnItsOwnGround(t *testing.T) {
	for name, unlisted := range map[string]bool{"listed": false, "unlisted": true} {
		t.Run(name, func(t *testing.T) {
			storagetest.ForEach(t, func(t *testing.T, db *storage.DB) { expiryOnItsOwnGround(t, db, unlisted) })
		})
	}
}

func expiryOnItsOwnGround(t *testing.T, db *storage.DB, unlisted bool) {
	e := newEnv(t, db)
	victim := e.lake.Append(e.lake.Create("db.victim", nil), tablestest.Rows(0, 3, time.Now()))
	if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 1 {
		t.Fatalf("sync the victim: %+v %v", rep, err)
	}
	stray := filepath.Join(t.TempDir(), "stray.parquet") // under the roots, outside every table
	must(t, os.WriteFile(stray, []byte("not the table's"), 0o644))
	old := time.Now().Add(-200 * time.Hour)
	must(t, os.Chtimes(stray, old, old))

	// The hostile writer: a snapshot off the main branch whose manifest list is the victim's,
	// with a statistics file outside every table. Only that snapshot references them, and it
	// is about to expire.
	cur := e.tbl.CurrentSnapshot()
	schema := e.tbl.Metadata().CurrentSchema().ID
	hostile := table.Snapshot{SnapshotID: cur.SnapshotID + 4242, ParentSnapshotID: &cur.SnapshotID,
		SequenceNumber: e.tbl.Metadata().LastSequenceNumber() + 1, TimestampMs: time.Now().UnixMilli(),
		ManifestList: victim.CurrentSnapshot().ManifestList, Summary: &table.Summary{Operation: table.OpAppend}, SchemaID: &schema}
	_, _, err := e.lake.Cat.CommitTable(e.ctx, table.Identifier{"db", "events"}, nil, []table.Update{
		table.NewAddSnapshotUpdate(&hostile),
		table.NewSetStatisticsUpdate(table.StatisticsFile{SnapshotID: hostile.SnapshotID, StatisticsPath: stray, FileSizeInBytes: 15, BlobMetadata: []table.BlobMetadata{}}),
	})
	must(t, err)
	e.tbl, err = e.lake.Cat.LoadTable(e.ctx, table.Identifier{"db", "events"})
	must(t, err)
	victimFiles := []string{victim.CurrentSnapshot().ManifestList}
	for p := range e.lake.Files(victim, *victim.CurrentSnapshot()) {
		victimFiles = append(victimFiles, p)
	}

	ps := proposeExpiry(t, e)
	if len(ps) != 1 {
		t.Fatalf("want one expiry proposal, got %+v", ps)
	}
	if unlisted {
		stripList(t, e, db, ps[0])
	}
	if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(300 * time.Hour)
	r, err := e.svc.Execute(e.ctx, uuid.Nil, nil)
	if err != nil || r.Executed != 1 {
		t.Fatalf("execute: %+v %v", r, err)
	}
	for _, p := range append(victimFiles, stray) {
		if !exists(strings.TrimPrefix(p, "file://")) {
			t.Fatalf("the expiry deleted %s, which is not its table's own file", p)
		}
	}
	if n, err := e.lake.Intact(victim); err != nil || n == 0 {
		t.Fatalf("the victim no longer reads: %d rows, %v", n, err)
	}
	if unlisted {
		if r.Skipped < 2 {
			t.Fatalf("the two foreign files should be reported as skipped: %+v", r)
		}
		got, err := e.svc.GetProposal(e.ctx, ps[0].ID)
		must(t, err)
		if why := "not on the table's own ground"; !strings.Contains(string(got.Outcome), why) {
			t.Errorf("the outcome does not say %q: %s", why, got.Outcome)
		}
		return
	}
	// Neither was ever on the proposal's file list: the approver was not asked to delete them.
	listed, err := e.svc.ProposalFiles(e.ctx, ps[0].ID, cleanup.FileFilter{})
	must(t, err)
	for _, f := range listed {
		if slices.Contains(victimFiles, f.Path) || strings.TrimPrefix(f.Path, "file://") == stray {
			t.Fatalf("the expiry proposal lists %s, which is not its table's own file", f.Path)
		}
		if f.State != "deleted" {
			t.Errorf("listed %s: %s (%s)", f.Path, f.State, f.Detail)
		}
	}
	if len(listed) == 0 || r.Deleted != int64(len(listed)) {
		t.Fatalf("deleted %d files of a list of %d", r.Deleted, len(listed))
	}
}

// TestScanKeepsFilesOtherTablesReference: another table (elsewhere) commits a file that lies
// under this table's location. Two scans of this table never confirm it as an orphan, and an
// approved proposal deletes only the real orphan: every known table's references count,
// whatever its location.
func TestScanKeepsFilesOtherTablesReference(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		intruder := e.lake.Append(e.lake.Create("db.intruder", nil), tablestest.Rows(0, 3, time.Now()))
		if rep, err := e.tables.Sync(e.ctx, nil); err != nil || rep.Added != 1 {
			t.Fatalf("sync the intruder: %+v %v", rep, err)
		}
		lodged := e.lake.WriteFile(e.tbl, "data/lodged.parquet", 100, e.clock.Now().Add(-100*time.Hour))
		intruder = e.lake.AddFiles(intruder, "file://"+lodged)
		if _, err := e.tables.Refresh(e.ctx, assetOf(t, e, "db.intruder")); err != nil {
			t.Fatal(err)
		}
		orphans := confirmOrphans(t, e, 1) // fails unless exactly the one real orphan is confirmed
		e.propose()
		ps := e.proposals(cleanup.KindOrphanFiles, "open")
		if len(ps) != 1 || ps[0].Evidence.Files != 1 {
			t.Fatalf("orphan proposal: %+v", ps)
		}
		if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		if r, err := e.svc.Execute(e.ctx, ps[0].ID, nil); err != nil || r.Deleted != 1 {
			t.Fatalf("execute: %+v %v", r, err)
		}
		if exists(orphans[0]) || !exists(lodged) {
			t.Fatalf("the orphan should be gone (%v) and the intruder's file kept (%v)", exists(orphans[0]), exists(lodged))
		}
		if err := e.lake.Missing(intruder); err != nil {
			t.Fatalf("the intruder lost a file: %v", err)
		}
	})
}

// assetOf is the asset of a synced table by its catalog name.
func assetOf(t *testing.T, e *env, name string) uuid.UUID {
	t.Helper()
	ts, _, err := e.tables.List(e.ctx, uuid.Nil, 100)
	must(t, err)
	for _, tb := range ts {
		if strings.HasSuffix(tb.Identifier, name) {
			return tb.AssetID
		}
	}
	t.Fatalf("no table %s", name)
	return uuid.Nil
}

// TestCrashMidRetirementFiles: a retirement killed in the middle of its file step, at every
// point, has deleted a prefix of metadata first: while any metadata file is left, every manifest
// list, manifest and data file is too; while a manifest list is left, every manifest and data
// file. The rerun deletes the rest.
func TestCrashMidRetirementFiles(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		for crashAt := 1; ; crashAt++ {
			calls := 0
			e := newEnv(t, db, cleanup.WithFault(func(point string) error {
				if point == "orphan_file" {
					if calls++; calls == crashAt {
						return errors.New("killed")
					}
				}
				return nil
			}))
			files := retireToFileStep(t, e)
			if crashAt > len(files) {
				return
			}
			if _, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err == nil || !strings.Contains(err.Error(), "injected crash") {
				t.Fatalf("crash at file %d: %v", crashAt, err)
			}
			left := e.lake.DiskFiles()
			if len(left) != len(files)-(crashAt-1) {
				t.Fatalf("crash at file %d: %d of %d files left", crashAt, len(left), len(files))
			}
			rank := func(p string) int {
				switch base := filepath.Base(p); {
				case strings.HasSuffix(base, ".metadata.json"):
					return 0
				case strings.HasPrefix(base, "snap-"):
					return 1
				case strings.HasSuffix(base, ".avro"):
					return 2
				}
				return 3
			}
			lowest := 4
			for _, p := range left {
				lowest = min(lowest, rank(p))
			}
			for _, p := range files {
				if rank(p) > lowest && !slices.Contains(left, p) {
					t.Fatalf("crash at file %d: %s is gone while a file that points to it (rank %d) is left: %v", crashAt, p, lowest, left)
				}
			}
			if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Executed != 1 {
				t.Fatalf("rerun after a crash at file %d: %+v %v", crashAt, r, err)
			}
			if left := e.lake.DiskFiles(); len(left) != 0 {
				t.Fatalf("rerun after a crash at file %d left %v", crashAt, left)
			}
		}
	})
}

// retireToFileStep approves the retirement of the unused table and runs it up to its file step
// (the metadata step, then the grace period); it returns the files on disk.
func retireToFileStep(t *testing.T, e *env) []string {
	t.Helper()
	e.clock.Add(100 * 24 * time.Hour)
	e.propose()
	ps := e.proposals(cleanup.KindUnusedAsset, "open")
	if len(ps) != 1 {
		t.Fatalf("unused proposals: %+v", ps)
	}
	if _, err := e.svc.Approve(e.person("alice"), ps[0].ID, "retire it"); err != nil {
		t.Fatal(err)
	}
	if r, err := e.svc.Execute(e.ctx, uuid.Nil, nil); err != nil || r.Waiting != 1 {
		t.Fatalf("metadata step: %+v %v", r, err)
	}
	e.clock.Add(8 * 24 * time.Hour)
	return e.lake.DiskFiles()
}

// TestRefCheckMissingThenPresent: a file missing at a reference check's first look and back
// by its second (a slow copy, a storage hiccup) is not a dangling reference.
func TestRefCheckMissingThenPresent(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		e := newEnv(t, db)
		victim := strings.TrimPrefix(liveFiles(t, e, e.tbl.CurrentSnapshot())[0], "file://")
		for back := 200 * time.Millisecond; ; back *= 2 {
			must(t, os.Rename(victim, victim+".away"))
			done := make(chan struct{})
			go func() {
				defer close(done)
				time.Sleep(back)
				must(t, os.Rename(victim+".away", victim))
			}()
			r, err := e.svc.CheckRefs(e.ctx, e.id, cleanup.RefCheckOptions{RecheckDelay: 10 * back, Fresh: true})
			<-done
			must(t, err)
			if r.MissingFirst == 0 && back < 10*time.Second {
				continue // the first look came after the file was back: try again, slower
			}
			if r.MissingFirst != 1 || r.DanglingCount != 0 || !r.Rechecked {
				t.Fatalf("missing at the first look, present at the second: %d missing first, %d dangling, rechecked %v", r.MissingFirst, r.DanglingCount, r.Rechecked)
			}
			return
		}
	})
}
