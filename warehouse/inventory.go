package warehouse

// The write-path inventory: what each commit's new snapshots wrote (manifest lists, manifests,
// data and delete files added and removed), read while the commit is prepared and recorded with
// its swap; and what a commit that did not happen staged, recorded as known leftovers.

import (
	"context"
	"fmt"
	"time"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/iceberginventoryfile"
	"github.com/tidemark/tidemark/tables"
)

// Inventory file kinds and changes.
const (
	kindMetadata     = "metadata"
	kindManifestList = "manifest_list"
	kindManifest     = "manifest"
	kindData         = "data"
	kindDelete       = "delete"

	changeAdded   = "added"
	changeRemoved = "removed"
	changeStaged  = "staged" // written for a commit that did not happen: a known leftover
	// changeSigned is a file written through a remote signature (Sign), recorded before the
	// signature was returned: written, not committed. A commit that adds the file settles it;
	// until one does, it is a known leftover like a staged file.
	changeSigned = "signed"
)

type inventoryFile struct {
	snapshot      int64
	path, kind    string
	change        string
	size, records int64
}

// readAdded reads what the snapshots a commit adds wrote: each new snapshot's manifest list, the
// manifests that snapshot added, and their entries (added and deleted files). Manifests are read
// only when the snapshot wrote them, so the cost follows the commit, not the table. Manifests
// the parent listed and the new list drops are recorded as removed.
func (s *Service) readAdded(ctx context.Context, w tables.Warehouse, p *plan) error {
	if p.kind == "register" {
		// The metadata file is the registrant's: its length, for the inventory, by one stat.
		if fsys, err := s.tables.WarehouseIO(ctx, w, p.updated.Location()); err == nil {
			p.size = fileSize(fsys, p.newLoc)
		}
		return nil
	}
	var fresh []table.Snapshot
	for _, snap := range p.updated.Snapshots() {
		if p.base == nil || p.base.SnapshotByID(snap.SnapshotID) == nil {
			fresh = append(fresh, snap)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	fsys, err := s.tables.WarehouseIO(ctx, w, p.updated.Location())
	if err != nil {
		return err
	}
	for _, snap := range fresh {
		if err := ctx.Err(); err != nil {
			return err
		}
		if snap.ManifestList == "" {
			continue
		}
		if err := p.ground.Check(snap.ManifestList, false); err != nil {
			return fmt.Errorf("snapshot %d's manifest list %w", snap.SnapshotID, err)
		}
		files, refs, err := readSnapshot(fsys, snap, p.ground.Check)
		if err != nil {
			return err
		}
		p.files = append(p.files, files...)
		p.keepList(snap.ManifestList, refs)
		if snap.ParentSnapshotID == nil {
			continue
		}
		parent := p.updated.SnapshotByID(*snap.ParentSnapshotID)
		if parent == nil || parent.ManifestList == "" {
			continue
		}
		prefs, err := s.listedBy(fsys, p, *parent)
		if err != nil {
			return err
		}
		listed := make(map[string]bool, len(refs))
		for _, r := range refs {
			listed[r.path] = true
		}
		for _, r := range prefs {
			if !listed[r.path] {
				p.files = append(p.files, inventoryFile{snapshot: snap.SnapshotID, path: r.path, kind: kindManifest, change: changeRemoved, size: r.length})
			}
		}
	}
	return nil
}

// listedBy is what a parent snapshot's manifest list names: read by this commit already (a
// commit of several snapshots), kept from the commit that added it, or read now.
func (s *Service) listedBy(fsys icebergio.IO, p *plan, parent table.Snapshot) ([]manifestRef, error) {
	if refs, ok := p.lists[parent.ManifestList]; ok {
		return refs, nil
	}
	if refs, ok := s.lists.Get(parent.ManifestList); ok {
		return refs, nil
	}
	mfs, err := parent.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("warehouse: read parent snapshot %d's manifest list %s: %w", parent.SnapshotID, parent.ManifestList, err)
	}
	refs := manifestRefs(mfs)
	p.keepList(parent.ManifestList, refs)
	return refs, nil
}

// keepList notes a manifest list the commit read, kept once the commit swaps (keptLists).
func (p *plan) keepList(list string, refs []manifestRef) {
	if p.lists == nil {
		p.lists = map[string][]manifestRef{}
	}
	p.lists[list] = refs
}

// keptLists keeps the manifest lists the plans read, once their commits swapped.
func (s *Service) keptLists(plans []*plan) {
	for _, p := range plans {
		for list, refs := range p.lists {
			s.lists.Add(list, refs)
		}
	}
}

func manifestRefs(mfs []iceberg.ManifestFile) []manifestRef {
	refs := make([]manifestRef, len(mfs))
	for i, mf := range mfs {
		refs[i] = manifestRef{path: mf.FilePath(), length: mf.Length()}
	}
	return refs
}

// readSnapshot reads what one snapshot wrote: its manifest list, the manifests it added, and
// their added and deleted entries. refs are the manifests its list names. check refuses a
// manifest or file path the snapshot adds (data: a data or delete file).
func readSnapshot(fsys icebergio.IO, snap table.Snapshot, check func(p string, data bool) error) (files []inventoryFile, refs []manifestRef, err error) {
	mfs, size, err := readManifestList(fsys, snap.ManifestList)
	if err != nil {
		return nil, nil, fmt.Errorf("warehouse: read snapshot %d's manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
	}
	files = append(files, inventoryFile{snapshot: snap.SnapshotID, path: snap.ManifestList, kind: kindManifestList, change: changeAdded, size: size})
	for _, mf := range mfs {
		if mf.SnapshotID() != snap.SnapshotID {
			continue
		}
		if err := check(mf.FilePath(), false); err != nil {
			return nil, nil, fmt.Errorf("snapshot %d's manifest %w", snap.SnapshotID, err)
		}
		files = append(files, inventoryFile{snapshot: snap.SnapshotID, path: mf.FilePath(), kind: kindManifest, change: changeAdded, size: mf.Length()})
		for e, err := range mf.Entries(fsys, false) {
			if err != nil {
				return nil, nil, fmt.Errorf("warehouse: read manifest %s: %w", mf.FilePath(), err)
			}
			if e.Status() != iceberg.EntryStatusEXISTING {
				if err := check(e.DataFile().FilePath(), true); err != nil {
					return nil, nil, fmt.Errorf("snapshot %d's file %w", snap.SnapshotID, err)
				}
			}
			f := inventoryFile{snapshot: snap.SnapshotID, path: e.DataFile().FilePath(), kind: kindData,
				size: e.DataFile().FileSizeBytes(), records: e.DataFile().Count()}
			if e.DataFile().ContentType() != iceberg.EntryContentData {
				f.kind = kindDelete
			}
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				f.change = changeAdded
			case iceberg.EntryStatusDELETED:
				f.change = changeRemoved
			default:
				continue // carried over from an older manifest: recorded when it was added
			}
			files = append(files, f)
		}
	}
	return files, manifestRefs(mfs), nil
}

// stagedFiles reads what a rejected commit's writer staged for one snapshot: the manifest list
// (with its size), the manifests the snapshot added and their added files, so each is a known
// leftover the cleanup bot settles without a walk. What cannot be read is left to the walk:
// the manifest list alone is recorded then. Only files on the table's ground are recorded: a
// rejected writer must not make another table's files look like this one's leftovers.
func stagedFiles(fsys icebergio.IO, snap table.Snapshot, g *tables.Ground) []inventoryFile {
	if g == nil || g.Check(snap.ManifestList, false) != nil {
		return nil
	}
	list := inventoryFile{snapshot: snap.SnapshotID, path: snap.ManifestList, kind: kindManifestList, change: changeStaged}
	files, _, err := readSnapshot(fsys, snap, g.Check)
	if err != nil {
		list.size = fileSize(fsys, snap.ManifestList)
		return []inventoryFile{list}
	}
	list.size = files[0].size // readSnapshot's first file is the manifest list
	out := []inventoryFile{list}
	for _, f := range files {
		if f.change == changeAdded && f.kind != kindManifestList {
			f.change = changeStaged
			out = append(out, f)
		}
	}
	return out
}

// readManifestList reads a manifest list and its length (iceberg-go's snapshot does not carry
// it): the length from the open file, so the list is opened once. A length that cannot be read
// is 0, as in fileSize.
func readManifestList(fsys icebergio.IO, list string) (_ []iceberg.ManifestFile, size int64, err error) {
	f, err := fsys.Open(list)
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	mfs, err := iceberg.ReadManifestList(f)
	return mfs, size, err
}

// fileSize is a file's length in bytes through the table's IO; 0 when it cannot be read (the
// inventory records what it knows: a size is never a reason to fail a commit).
func fileSize(fsys icebergio.IO, path string) int64 {
	f, err := fsys.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// insertFiles writes inventory rows in batches (SQLite allows 32,766 parameters a statement),
// one multi-row INSERT each, built by hand: ent's bulk create costs about 20 µs a row in Go
// (a mutation and a hook chain per row, the IDs read back), which a 100,000-file commit felt.
func (s *Service) insertFiles(ctx context.Context, tx *ent.Tx, asset, commit uuid.UUID, files []inventoryFile, now time.Time) error {
	const batch = 2000
	for i := 0; i < len(files); i += batch {
		part := files[i:min(i+batch, len(files))]
		ins := entsql.Dialect(s.dialect).Insert(iceberginventoryfile.Table).Columns(iceberginventoryfile.FieldID,
			iceberginventoryfile.FieldAssetID, iceberginventoryfile.FieldCommitID, iceberginventoryfile.FieldSnapshotID,
			iceberginventoryfile.FieldPath, iceberginventoryfile.FieldKind, iceberginventoryfile.FieldChange,
			iceberginventoryfile.FieldSize, iceberginventoryfile.FieldRecords, iceberginventoryfile.FieldRecordedAt,
			iceberginventoryfile.FieldActor)
		for _, f := range part {
			ins.Values(uuid.Must(uuid.NewV7()), asset, commit, f.snapshot, f.path, f.kind, f.change, f.size, f.records, now, "")
		}
		q, args := ins.Query()
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("warehouse: record the inventory: %w", err)
		}
	}
	return nil
}
