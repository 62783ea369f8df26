package tables

// The files every retained snapshot and ref references, by manifest: what a by-key check of a
// table's references walks.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// RetainedSnapshot is a snapshot a table's metadata keeps, with the branches and tags whose
// head it is and the manifests its manifest list names.
type RetainedSnapshot struct {
	ID           int64
	ManifestList string
	Current      bool
	Refs         []string
	Manifests    []string
}

// RetainedManifest is one distinct manifest of the retained snapshots, with the snapshots
// whose manifest lists name it.
type RetainedManifest struct {
	Path      string
	Snapshots []int64
	snap      table.Snapshot // one of them, to read it through
	ref       manifestRef
}

// Retained is the reference structure of a table's retained snapshots, read from their
// manifest lists (through the manifest cache: manifest lists and manifests are immutable).
type Retained struct {
	MetadataLocation string
	Snapshots        []RetainedSnapshot // oldest first
	Manifests        []RetainedManifest // by path
	// Unreadable are the manifest lists that could not be read, with why: their manifests are
	// not in Manifests.
	Unreadable map[string]error
	r          *reader
}

// Retained reads the manifest lists of every snapshot the table's metadata keeps. A manifest
// list that cannot be read is recorded in Unreadable, not an error: a missing list is a
// dangling reference the caller reports.
func (s *Service) Retained(ctx context.Context, l *Live) (*Retained, error) {
	meta := l.Table.Metadata()
	heads := map[int64][]string{}
	for name, ref := range meta.Refs() {
		heads[ref.SnapshotID] = append(heads[ref.SnapshotID], name)
	}
	var cur int64 = -1
	if c := meta.CurrentSnapshot(); c != nil {
		cur = c.SnapshotID
	}
	r := newReader(s.db, func(context.Context) (icebergio.IO, error) { return l.read, nil }, s.clock, &l.Refs.Report)
	r.lz4 = s.lz4
	out := &Retained{MetadataLocation: l.Table.MetadataLocation(), Unreadable: map[string]error{}, r: r}
	byPath := map[string]*RetainedManifest{}
	for _, snap := range meta.Snapshots() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		refs := heads[snap.SnapshotID]
		slices.Sort(refs)
		rs := RetainedSnapshot{ID: snap.SnapshotID, ManifestList: snap.ManifestList, Current: snap.SnapshotID == cur, Refs: refs}
		mrefs, err := r.manifests(ctx, snap)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out.Unreadable[snap.ManifestList] = err
			out.Snapshots = append(out.Snapshots, rs)
			continue
		}
		for _, m := range mrefs {
			rs.Manifests = append(rs.Manifests, m.Path)
			rm := byPath[m.Path]
			if rm == nil {
				rm = &RetainedManifest{Path: m.Path, snap: snap, ref: m}
				byPath[m.Path] = rm
			}
			rm.Snapshots = append(rm.Snapshots, snap.SnapshotID)
		}
		out.Snapshots = append(out.Snapshots, rs)
	}
	for _, rm := range byPath {
		out.Manifests = append(out.Manifests, *rm)
	}
	slices.SortFunc(out.Manifests, func(a, b RetainedManifest) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Files returns the live data and delete files a retained manifest lists (its added and
// existing entries), read through the cache.
func (rt *Retained) Files(ctx context.Context, m RetainedManifest) ([]CurrentFile, error) {
	es, err := rt.r.entries(ctx, m.snap, m.ref)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", m.Path, err)
	}
	out := make([]CurrentFile, 0, len(es))
	for _, e := range es {
		if e.live() {
			out = append(out, CurrentFile{SnapshotID: m.snap.SnapshotID, Manifest: m.Path, Path: e.Path, Size: e.Size, Content: contentName(e.Content)})
		}
	}
	return out, nil
}
