package warehouse

// Reading the record back: a served table's inventory, the files live at a snapshot by the
// inventory alone, its commits, and the manifests committed since a time.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/iceberginventoryfile"
)

// InventoryFile is one file in a served table's write-path inventory.
type InventoryFile struct {
	ID         uuid.UUID `json:"-"`
	CommitID   uuid.UUID
	SnapshotID int64
	Path       string
	Kind       string // metadata, manifest_list, manifest, data, delete
	Change     string // added, removed, staged, signed
	Size       int64
	Records    int64
	RecordedAt time.Time
	// Actor is the principal a signed file's signature was issued to ("" for commits' rows).
	Actor string `json:",omitempty"`
}

// InventoryFilter selects inventory files.
type InventoryFilter struct {
	SnapshotID *int64
	Change     string
	After      uuid.UUID
	Limit      int
}

// Inventory lists a served table's inventory in the order it was recorded.
func (s *Service) Inventory(ctx context.Context, id uuid.UUID, f InventoryFilter) ([]InventoryFile, bool, error) {
	if _, err := s.tables.Get(ctx, id); err != nil {
		return nil, false, err
	}
	q := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(id))
	if f.SnapshotID != nil {
		q.Where(iceberginventoryfile.SnapshotID(*f.SnapshotID))
	}
	if f.Change != "" {
		switch f.Change {
		case changeAdded, changeRemoved, changeStaged, changeSigned:
		default:
			return nil, false, invalid("change", "change %q: use added, removed, staged or signed", f.Change)
		}
		q.Where(iceberginventoryfile.Change(f.Change))
	}
	if f.After != uuid.Nil {
		q.Where(iceberginventoryfile.IDGT(f.After))
	}
	rows, err := q.Order(ent.Asc(iceberginventoryfile.FieldID)).Limit(f.Limit + 1).All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("warehouse: read the inventory: %w", err)
	}
	more := len(rows) > f.Limit
	if more {
		rows = rows[:f.Limit]
	}
	out := make([]InventoryFile, len(rows))
	for i, r := range rows {
		out[i] = InventoryFile{ID: r.ID, CommitID: r.CommitID, SnapshotID: r.SnapshotID, Path: r.Path, Kind: r.Kind, Change: r.Change,
			Size: r.Size, Records: r.Records, RecordedAt: r.RecordedAt, Actor: r.Actor}
	}
	return out, more, nil
}

// LiveFromInventory returns the data and delete files live at a snapshot according to the
// inventory alone: every file the snapshot's ancestors added, less those they removed. It reads
// no table file. ok is false when an ancestor's commit is not in the inventory (the table was
// registered, or written before Tidemark served it): every snapshot a commit adds has its
// manifest list recorded as added.
func (s *Service) LiveFromInventory(ctx context.Context, id uuid.UUID, meta table.Metadata, snapshotID int64) (map[string]bool, bool, error) {
	var chain []int64 // oldest first
	for snap := meta.SnapshotByID(snapshotID); snap != nil; {
		chain = append([]int64{snap.SnapshotID}, chain...)
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	bySnap := make(map[int64][]*ent.IcebergInventoryFile, len(chain))
	const batch = 1000 // snapshot IDs a query (SQLite's parameter limit)
	for i := 0; i < len(chain); i += batch {
		rows, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(id), iceberginventoryfile.SnapshotIDIn(chain[i:min(i+batch, len(chain))]...),
			iceberginventoryfile.KindIn(kindData, kindDelete, kindManifestList), iceberginventoryfile.ChangeIn(changeAdded, changeRemoved)).
			Order(ent.Asc(iceberginventoryfile.FieldID)).
			Select(iceberginventoryfile.FieldSnapshotID, iceberginventoryfile.FieldPath, iceberginventoryfile.FieldKind, iceberginventoryfile.FieldChange).All(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("warehouse: read the inventory: %w", err)
		}
		for _, r := range rows {
			bySnap[r.SnapshotID] = append(bySnap[r.SnapshotID], r)
		}
	}
	live := map[string]bool{}
	for _, sid := range chain {
		recorded := false
		for _, r := range bySnap[sid] {
			switch {
			case r.Kind == kindManifestList:
				recorded = recorded || r.Change == changeAdded
			case r.Change == changeAdded:
				live[r.Path] = true
			default:
				delete(live, r.Path)
			}
		}
		if !recorded {
			return nil, false, nil
		}
	}
	return live, true, nil
}

// CommitRecord is one recorded change of a served table's pointer, or an attempt at one.
type CommitRecord struct {
	ID            uuid.UUID
	Kind, State   string
	BaseLocation  string
	NewLocation   string
	SnapshotID    *int64
	Reason        string
	TransactionID *uuid.UUID
	Actor         string
	AddedFiles    int64
	RemovedFiles  int64
	AddedBytes    int64
	StartedAt     time.Time
	FinishedAt    *time.Time
}

// Commits lists a table's recorded commits, newest first, before a cursor.
func (s *Service) Commits(ctx context.Context, id uuid.UUID, before uuid.UUID, limit int) ([]CommitRecord, bool, error) {
	q := s.db.IcebergCommit.Query().Where(icebergcommit.AssetID(id))
	if before != uuid.Nil {
		q.Where(icebergcommit.IDLT(before))
	}
	rows, err := q.Order(ent.Desc(icebergcommit.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("warehouse: read commits: %w", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]CommitRecord, len(rows))
	for i, c := range rows {
		out[i] = CommitRecord{ID: c.ID, Kind: c.Kind, State: c.State, BaseLocation: c.BaseLocation, NewLocation: c.NewLocation,
			SnapshotID: c.SnapshotID, Reason: c.Reason, TransactionID: c.TransactionID, Actor: c.Actor, AddedFiles: c.AddedFiles,
			RemovedFiles: c.RemovedFiles, AddedBytes: c.AddedBytes, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt}
	}
	return out, more, nil
}

// ManifestsAddedSince returns the manifests a served table's commits added since a time,
// from the inventory (none for a table Tidemark does not serve).
func (s *Service) ManifestsAddedSince(ctx context.Context, id uuid.UUID, since time.Time) (map[string]bool, error) {
	paths, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(id), iceberginventoryfile.Kind(kindManifest),
		iceberginventoryfile.Change(changeAdded), iceberginventoryfile.RecordedAtGTE(since)).
		Select(iceberginventoryfile.FieldPath).Strings(ctx)
	if err != nil {
		return nil, fmt.Errorf("warehouse: read the manifests added since %s: %w", since.Format(time.RFC3339), err)
	}
	out := make(map[string]bool, len(paths))
	for _, p := range paths {
		out[p] = true
	}
	return out, nil
}
