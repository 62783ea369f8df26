package warehouse

// Known leftovers: what a served table's write-path inventory says was staged by commits that
// did not happen and never added by one that did.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/iceberginventoryfile"
)

// inChunk bounds the paths or IDs of one IN (...) lookup, well under both databases' limits on
// bound parameters.
const inChunk = 500

// Leftover is a file a rejected, abandoned or interrupted commit staged, or a client wrote
// through a remote signature, and no commit added.
type Leftover struct {
	Path string
	Kind string // metadata, manifest_list, manifest, data, delete
	Size int64  // 0 when the inventory does not know it (a manifest list or metadata file)
	// StagedAt is when the newest commit that staged it started: the file was written before.
	// For a signed file, the newest signature plus SignatureWindow (the write came no later).
	StagedAt time.Time
	CommitID uuid.UUID // the newest staging commit; for a signed file, its signature's ID
	// Signed is a file written through a remote signature; Actor is who it was signed for.
	Signed bool
	Actor  string
}

// LeftoverStats counts what Leftovers settled from the inventory.
type LeftoverStats struct {
	Staged    int // distinct paths recorded as staged
	Committed int // of those, added by a commit that happened (a retry reused them)
	Signed    int // distinct paths written through a remote signature (counted in Staged too)
}

// Leftovers lists a served table's known leftovers from its inventory alone, reading no table
// file and listing nothing. Only a table Tidemark serves has them: every commit of it passes
// through Tidemark, so a staged path no commit added was never referenced by a snapshot.
func (s *Service) Leftovers(ctx context.Context, id uuid.UUID) ([]Leftover, LeftoverStats, error) {
	t, err := s.tables.Get(ctx, id)
	if err != nil {
		return nil, LeftoverStats{}, err
	}
	if t.Warehouse == "" {
		return nil, LeftoverStats{}, invalid("table", "table %s is not served by Tidemark: it has no write-path inventory to settle files with", id)
	}
	rows, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(id), iceberginventoryfile.ChangeIn(changeStaged, changeSigned)).
		Select(iceberginventoryfile.FieldPath, iceberginventoryfile.FieldKind, iceberginventoryfile.FieldSize, iceberginventoryfile.FieldCommitID,
			iceberginventoryfile.FieldChange, iceberginventoryfile.FieldActor, iceberginventoryfile.FieldRecordedAt).All(ctx)
	if err != nil {
		return nil, LeftoverStats{}, fmt.Errorf("warehouse: read the staged files of table %s: %w", id, err)
	}
	commits := map[uuid.UUID]time.Time{}
	byPath := map[string]*Leftover{}
	var paths []string
	for _, r := range rows {
		if r.Change == changeSigned {
			// No commit: the signature's time, moved to the latest the write can have landed.
			commits[r.CommitID] = r.RecordedAt.Add(SignatureWindow)
		} else {
			commits[r.CommitID] = time.Time{}
		}
		if l := byPath[r.Path]; l != nil {
			l.Size = max(l.Size, r.Size)
			continue
		}
		byPath[r.Path] = &Leftover{Path: r.Path, Kind: r.Kind, Size: r.Size, CommitID: r.CommitID}
		paths = append(paths, r.Path)
	}
	if err := s.commitTimes(ctx, commits); err != nil {
		return nil, LeftoverStats{}, err
	}
	for _, r := range rows {
		l := byPath[r.Path]
		if commits[r.CommitID].After(l.StagedAt) {
			l.StagedAt, l.CommitID = commits[r.CommitID], r.CommitID
		}
		if r.Change == changeSigned {
			l.Signed, l.Actor = true, r.Actor
		}
	}
	st := LeftoverStats{Staged: len(paths)}
	for _, p := range paths {
		if byPath[p].Signed {
			st.Signed++
		}
	}
	for c := range slices.Chunk(paths, inChunk) {
		added, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(id), iceberginventoryfile.PathIn(c...),
			iceberginventoryfile.Change(changeAdded)).Select(iceberginventoryfile.FieldPath).Strings(ctx)
		if err != nil {
			return nil, LeftoverStats{}, fmt.Errorf("warehouse: read the committed files of table %s: %w", id, err)
		}
		for _, p := range added {
			if byPath[p] != nil {
				delete(byPath, p)
				st.Committed++
			}
		}
	}
	out := make([]Leftover, 0, len(byPath))
	for _, p := range paths {
		if l := byPath[p]; l != nil {
			out = append(out, *l)
		}
	}
	return out, st, nil
}

// commitTimes fills in when each commit started.
func (s *Service) commitTimes(ctx context.Context, commits map[uuid.UUID]time.Time) error {
	ids := make([]uuid.UUID, 0, len(commits))
	for c := range commits {
		ids = append(ids, c)
	}
	for c := range slices.Chunk(ids, inChunk) {
		rows, err := s.db.IcebergCommit.Query().Where(icebergcommit.IDIn(c...)).Select(icebergcommit.FieldID, icebergcommit.FieldStartedAt).All(ctx)
		if err != nil {
			return fmt.Errorf("warehouse: read commits: %w", err)
		}
		for _, r := range rows {
			commits[r.ID] = r.StartedAt
		}
	}
	return nil
}
