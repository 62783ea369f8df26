package tables

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
)

// FilesPage is one page of the live files a snapshot references.
type FilesPage struct {
	SnapshotID int64
	Files      []File
	Next       string // cursor of the next page, "" on the last
}

// Files lists the live data and delete files a snapshot (nil: the current one) references, in
// manifest-list then manifest order, read through the manifest cache.
func (s *Service) Files(ctx context.Context, id uuid.UUID, snapshotID *int64, cursor string, limit int) (FilesPage, error) {
	row, err := s.row(ctx, id)
	if err != nil {
		return FilesPage{}, err
	}
	in, err := s.Inspection(ctx, id)
	if err != nil {
		return FilesPage{}, err
	}
	var snap *Snapshot
	for i := range in.Snapshots {
		sn := &in.Snapshots[i]
		if (snapshotID == nil && sn.Current) || (snapshotID != nil && sn.ID == *snapshotID) {
			snap = sn
		}
	}
	if snap == nil {
		if snapshotID == nil {
			return FilesPage{Files: []File{}}, nil // no current snapshot: an empty table
		}
		return FilesPage{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("table %s has no retained snapshot %d (as of its last refresh)", id, *snapshotID)}
	}
	mi, ei, err := parseFilesCursor(cursor, snap.ID)
	if err != nil {
		return FilesPage{}, err
	}
	tsnap, err := s.tableSnapshot(ctx, row, snap)
	if err != nil {
		return FilesPage{}, err
	}
	r := newReader(s.db, s.locationFS(s.propsFor(row), row.MetadataLocation, s.rootsFor(row)), s.clock, nil)
	r.lz4 = s.lz4
	refs, err := r.manifests(ctx, tsnap)
	if err != nil {
		return FilesPage{}, s.recordError(ctx, id, err)
	}
	specs := map[int32]Spec{}
	for _, sp := range in.Specs {
		specs[int32(sp.ID)] = sp
	}
	page := FilesPage{SnapshotID: snap.ID, Files: []File{}}
	for ; mi < len(refs); mi, ei = mi+1, 0 {
		es, err := r.entries(ctx, tsnap, refs[mi])
		if err != nil {
			return FilesPage{}, s.recordError(ctx, id, err)
		}
		for ; ei < len(es); ei++ {
			e := es[ei]
			if !e.live() {
				continue
			}
			if len(page.Files) == limit {
				page.Next = fmt.Sprintf("%d:%d:%d", snap.ID, mi, ei)
				return page, nil
			}
			page.Files = append(page.Files, toFile(e, refs[mi].Path, specs[e.SpecID]))
		}
	}
	return page, nil
}

// tableSnapshot is enough of an iceberg-go snapshot for the reader; snapshots of v1 tables
// that embed manifest paths instead of a list need the metadata file.
func (s *Service) tableSnapshot(ctx context.Context, row *ent.IcebergTable, snap *Snapshot) (table.Snapshot, error) {
	if snap.ManifestList != "" {
		return table.Snapshot{SnapshotID: snap.ID, ManifestList: snap.ManifestList}, nil
	}
	tbl, err := table.NewFromLocation(ctx, splitIdent(row.Identifier), row.MetadataLocation, s.locationFS(s.propsFor(row), row.MetadataLocation, s.rootsFor(row)), nil)
	if err != nil {
		return table.Snapshot{}, s.recordError(ctx, row.ID, err)
	}
	ts := tbl.Metadata().SnapshotByID(snap.ID)
	if ts == nil {
		return table.Snapshot{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("snapshot %d is no longer in %s: refresh the table", snap.ID, row.MetadataLocation)}
	}
	return *ts, nil
}

// rootsFor is where a table's files may be read from: anywhere its catalog says for a table of
// a connection, under the warehouse roots for one registered by metadata location.
func (s *Service) rootsFor(row *ent.IcebergTable) roots {
	if row.Connection != "" {
		return nil
	}
	return s.roots
}

// propsFor is the IO properties a table's files are read with: its connection's, its served
// warehouse's (a warehouse may have its own), or the configured ones.
func (s *Service) propsFor(row *ent.IcebergTable) iceberg.Properties {
	if c := s.connection(row.Connection); c != nil {
		return c.Props
	}
	if row.Warehouse != "" {
		for _, w := range s.warehouses {
			if w.Name == row.Warehouse {
				return w.Props
			}
		}
	}
	return s.ioProps
}

func parseFilesCursor(c string, snapshotID int64) (int, int, error) {
	if c == "" {
		return 0, 0, nil
	}
	bad := &catalog.Error{Kind: catalog.ErrInvalid, Field: "cursor", Message: "cursor is not one this server returned for this snapshot: start again without it"}
	parts := strings.Split(c, ":")
	if len(parts) != 3 {
		return 0, 0, bad
	}
	sid, err1 := strconv.ParseInt(parts[0], 10, 64)
	mi, err2 := strconv.Atoi(parts[1])
	ei, err3 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || sid != snapshotID || mi < 0 || ei < 0 {
		return 0, 0, bad
	}
	return mi, ei, nil
}

func toFile(e entry, manifest string, spec Spec) File {
	f := File{Path: e.Path, Content: contentName(e.Content), Format: e.Format, Size: e.Size, Records: e.Records,
		SpecID: e.SpecID, Manifest: manifest, Added: e.Snapshot}
	if len(e.Partition) > 0 {
		f.Partition = map[string]any{}
		for _, pv := range e.Partition {
			name := strconv.Itoa(pv.FieldID)
			for _, sf := range spec.Fields {
				if sf.FieldID == pv.FieldID {
					name = sf.Name
				}
			}
			f.Partition[name] = pv.Value
		}
	}
	return f
}

func contentName(c int8) string {
	switch iceberg.ManifestEntryContent(c) {
	case iceberg.EntryContentData:
		return "data"
	case iceberg.EntryContentPosDeletes:
		return "position_deletes"
	case iceberg.EntryContentEqDeletes:
		return "equality_deletes"
	}
	return "unknown"
}
