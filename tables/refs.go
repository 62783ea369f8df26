package tables

import (
	"context"
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
	IO    icebergio.IO
	Refs  Refs
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
		return nil, s.recordError(ctx, id, fmt.Errorf("open the table's file IO: %w", err))
	}
	l := &Live{Table: tbl, IO: fs, Refs: Refs{Location: tbl.Location(), MetadataLocation: tbl.MetadataLocation(), Registered: row.Connection == ""}}
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
	for st := range meta.Statistics() {
		if err := emit(st.StatisticsPath, RefStatistics); err != nil {
			return l.Refs, err
		}
	}
	for st := range meta.PartitionStatistics() {
		if err := emit(st.StatisticsPath, RefStatistics); err != nil {
			return l.Refs, err
		}
	}
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.IO, nil }, s.clock, &l.Refs.Report)
	seen := map[string]bool{}
	for _, snap := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return l.Refs, err
		}
		if err := emit(snap.ManifestList, RefManifestList); err != nil {
			return l.Refs, err
		}
		refs, err := r.manifests(ctx, snap)
		if err != nil {
			return l.Refs, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, ref := range refs {
			if seen[ref.Path] {
				continue
			}
			seen[ref.Path] = true
			if err := emit(ref.Path, RefManifest); err != nil {
				return l.Refs, err
			}
			es, err := r.entries(ctx, snap, ref)
			if err != nil {
				return l.Refs, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
			}
			kind := RefDataFile
			if ref.Content != 0 {
				kind = RefDeleteFile
			}
			for _, e := range es {
				if err := emit(e.Path, kind); err != nil {
					return l.Refs, err
				}
			}
		}
		l.Refs.Report.Snapshots++
	}
	return l.Refs, nil
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
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.IO, nil }, s.clock, &l.Refs.Report)
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
