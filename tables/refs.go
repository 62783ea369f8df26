package tables

import (
	"context"
	"errors"
	"fmt"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// RefKind says why a path is referenced.
type RefKind string

// What metadata can reference.
const (
	RefMetadata     RefKind = "metadata"      // the current metadata file or one in its metadata-log
	RefVersionHint  RefKind = "version_hint"  // metadata/version-hint.text
	RefStatistics   RefKind = "statistics"    // statistics and partition-statistics files
	RefManifestList RefKind = "manifest_list" // a retained snapshot's manifest list
	RefManifest     RefKind = "manifest"      // a manifest of a retained snapshot
	RefDataFile     RefKind = "data_file"     // an entry of a data manifest
	RefDeleteFile   RefKind = "delete_file"   // an entry of a delete manifest
)

// Refs describes the metadata a reference walk read.
type Refs struct {
	Location          string
	MetadataLocation  string
	Registered        bool // registered by metadata location: newer commits are not seen
	CurrentSnapshotID *int64
	Report            RefreshReport
}

// Live is an open table for the cleanup scans: its IO and current metadata, loaded fresh.
type Live struct {
	Table *table.Table
	IO    icebergio.IO // to list and delete with
	Refs  Refs
	read  icebergio.IO // the same, guarded: what the reference walks read through
}

// Open loads a table's current metadata and IO (through its connection, else its registered
// metadata location).
func (s *Service) Open(ctx context.Context, id uuid.UUID) (*Live, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	tbl, err := s.load(ctx, row)
	if err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, s.recordError(ctx, id, fmt.Errorf("tables: open the table's file IO: %w", err))
	}
	l := &Live{Table: tbl, IO: unguard(fs), read: guard(fs, nil, s.limit), Refs: Refs{Location: tbl.Location(), MetadataLocation: tbl.MetadataLocation(), Registered: row.Connection == "" && row.Warehouse == ""}}
	if c := tbl.CurrentSnapshot(); c != nil {
		v := c.SnapshotID
		l.Refs.CurrentSnapshotID = &v
	}
	l.Refs.Report.AssetID = id
	return l, nil
}

// WalkReferences calls fn with every path the table's metadata references: metadata files
// (current and logged), the version hint, statistics files, and for every retained snapshot
// its manifest list, manifests, and every manifest entry whatever its status (an entry marked
// deleted still names a file an older snapshot may need). Manifests are read through the
// cache, so a repeated walk reads only manifests it has not read before. A manifest shared by
// several snapshots is walked once.
func (s *Service) WalkReferences(ctx context.Context, l *Live, fn func(path string, kind RefKind) error) (Refs, error) {
	meta := l.Table.Metadata()
	emit := func(p string, k RefKind) error {
		if p == "" {
			return nil
		}
		return fn(p, k)
	}
	if err := emit(l.Table.MetadataLocation(), RefMetadata); err != nil {
		return l.Refs, err
	}
	for m := range meta.PreviousFiles() {
		if err := emit(m.MetadataFile, RefMetadata); err != nil {
			return l.Refs, err
		}
	}
	if err := emit(strings.TrimRight(meta.Location(), "/")+"/metadata/version-hint.text", RefVersionHint); err != nil {
		return l.Refs, err
	}
	err := s.WalkSnapshotReferences(ctx, l, func(int64) bool { return true }, emit)
	return l.Refs, err
}

// WalkSnapshotReferences calls fn with the statistics files of the retained snapshots pick
// selects, and each one's manifest list, manifests and every manifest entry whatever its status
// (an entry marked deleted still names a file an older snapshot may need). A manifest shared by
// several snapshots is walked once.
func (s *Service) WalkSnapshotReferences(ctx context.Context, l *Live, pick func(snapshotID int64) bool, fn func(path string, kind RefKind) error) error {
	meta := l.Table.Metadata()
	emit := func(p string, k RefKind) error {
		if p == "" {
			return nil
		}
		return fn(p, k)
	}
	for st := range meta.Statistics() {
		if pick(st.SnapshotID) {
			if err := emit(st.StatisticsPath, RefStatistics); err != nil {
				return err
			}
		}
	}
	for st := range meta.PartitionStatistics() {
		if pick(st.SnapshotID) {
			if err := emit(st.StatisticsPath, RefStatistics); err != nil {
				return err
			}
		}
	}
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.read, nil }, s.clock, &l.Refs.Report)
	r.lz4 = s.lz4
	seen := map[string]bool{}
	for _, snap := range meta.Snapshots() {
		if !pick(snap.SnapshotID) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(snap.ManifestList, RefManifestList); err != nil {
			return err
		}
		refs, err := r.manifests(ctx, snap)
		if err != nil {
			return err // names the snapshot and its manifest list
		}
		for _, ref := range refs {
			if seen[ref.Path] {
				continue
			}
			seen[ref.Path] = true
			if err := emit(ref.Path, RefManifest); err != nil {
				return err
			}
			es, err := r.entries(ctx, snap, ref)
			if err != nil {
				return fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
			}
			kind := RefDataFile
			if ref.Content != 0 {
				kind = RefDeleteFile
			}
			for _, e := range es {
				if err := emit(e.Path, kind); err != nil {
					return err
				}
			}
		}
		l.Refs.Report.Snapshots++
	}
	return nil
}

// CurrentFile is a live file of the current snapshot.
type CurrentFile struct {
	SnapshotID int64
	Manifest   string
	Path       string
	Size       int64
	Content    string
}

// WalkCurrentFiles calls fn with every live data and delete file of the current snapshot, from
// its manifests (through the cache).
func (s *Service) WalkCurrentFiles(ctx context.Context, l *Live, fn func(CurrentFile) error) error {
	cur := l.Table.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.read, nil }, s.clock, &l.Refs.Report)
	r.lz4 = s.lz4
	refs, err := r.manifests(ctx, *cur)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		es, err := r.entries(ctx, *cur, ref)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !e.live() {
				continue
			}
			if err := fn(CurrentFile{SnapshotID: cur.SnapshotID, Manifest: ref.Path, Path: e.Path, Size: e.Size, Content: contentName(e.Content)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// KeepError says why a snapshot approved for removal must stay.
type KeepError struct{ Reason string }

func (e *KeepError) Error() string { return e.Reason }

// RemoveSnapshots removes exactly the given snapshots from a table in one commit through its
// catalog connection, after checking that none is the current snapshot or the head of a branch
// or tag; the commit asserts the table-uuid and every ref's head, so a concurrent writer makes
// it fail rather than expire something else. Snapshots already gone are skipped. It returns the
// table after the commit (nil when nothing was left to remove) and the IDs it removed. It
// deletes no file.
func (s *Service) RemoveSnapshots(ctx context.Context, id uuid.UUID, l *Live, ids []int64) (*Live, []int64, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if (row.Connection == "" && row.Warehouse == "") || row.GoneAt != nil {
		return nil, nil, &KeepError{Reason: "the table has no catalog to commit to (registered by metadata location, or dropped): expire its snapshots in the engine that writes it"}
	}
	meta := l.Table.Metadata()
	heads := map[int64]string{}
	var reqs []table.Requirement
	reqs = append(reqs, table.AssertTableUUID(meta.TableUUID()))
	for name, ref := range meta.Refs() {
		heads[ref.SnapshotID] = name
		v := ref.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(name, &v))
	}
	var remove []int64
	for _, sid := range ids {
		if meta.SnapshotByID(sid) == nil {
			continue
		}
		if name, ok := heads[sid]; ok {
			return nil, nil, &KeepError{Reason: fmt.Sprintf("snapshot %d is now the head of %q: it stays", sid, name)}
		}
		if c := meta.CurrentSnapshot(); c != nil && c.SnapshotID == sid {
			return nil, nil, &KeepError{Reason: fmt.Sprintf("snapshot %d is now the current snapshot: it stays", sid)}
		}
		remove = append(remove, sid)
	}
	if len(remove) == 0 {
		return nil, nil, nil
	}
	updates := []table.Update{table.NewRemoveSnapshotsUpdate(remove, false)}
	if row.Warehouse != "" {
		// Served by Tidemark: the same compare-and-swap every engine's commit goes through.
		w, err := s.servedThrough(row)
		if err != nil {
			return nil, nil, err
		}
		if err := w.CommitServedRow(ctx, row, reqs, updates); err != nil {
			return nil, nil, fmt.Errorf("tables: commit the removal of %d snapshots: %w", len(remove), err)
		}
	} else {
		c := s.connection(row.Connection)
		if c == nil {
			return nil, nil, fmt.Errorf("tables: the Iceberg catalog connection %q is no longer configured", row.Connection)
		}
		cat, err := c.Catalog(ctx)
		if err != nil {
			return nil, nil, err
		}
		if _, _, err := cat.CommitTable(ctx, splitIdent(row.Identifier), reqs, updates); err != nil {
			return nil, nil, fmt.Errorf("tables: commit the removal of %d snapshots: %w", len(remove), err)
		}
		// A served table's expiry marks them in its commit (package warehouse).
		s.markRemoved(ctx, id, remove)
	}
	post, err := s.Open(ctx, id)
	if err != nil {
		return nil, remove, err
	}
	if _, err := s.Refresh(ctx, id); err != nil {
		s.log.Warn("could not refresh the table after expiring snapshots", "asset_id", id, "err", err)
	}
	return post, remove, nil
}

// CurrentStructure returns the files the current snapshot is read through: the current
// metadata file, the manifest list and its manifests (paths from the manifest cache, which
// holds immutable manifest lists). Content is "metadata", "manifest_list" or "manifest". A
// manifest list that cannot be read yields what was found and the error.
func (s *Service) CurrentStructure(ctx context.Context, l *Live) ([]CurrentFile, error) {
	out := []CurrentFile{{Path: l.Table.MetadataLocation(), Content: "metadata"}}
	cur := l.Table.CurrentSnapshot()
	if cur == nil {
		return out, nil
	}
	out = append(out, CurrentFile{SnapshotID: cur.SnapshotID, Path: cur.ManifestList, Content: "manifest_list"})
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.read, nil }, s.clock, &l.Refs.Report)
	r.lz4 = s.lz4
	refs, err := r.manifests(ctx, *cur)
	if err != nil {
		return out, err
	}
	for _, ref := range refs {
		out = append(out, CurrentFile{SnapshotID: cur.SnapshotID, Manifest: cur.ManifestList, Path: ref.Path, Content: "manifest"})
	}
	return out, nil
}

// IsCommitConflict reports whether a commit failed because the table changed since it was read
// (another writer won the race for the pointer): re-read, revalidate and retry.
func IsCommitConflict(err error) bool {
	if errors.Is(err, table.ErrCommitFailed) { // a served table's conflict is one too (see Served)
		return true
	}
	// iceberg-go's SQL catalog returns a failed requirement (the table moved since it was read)
	// as the requirement's own error, unwrapped; REST catalogs answer 409 (ErrCommitFailed).
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "requirement failed")
}
