package warehouse

// Step 5, when a commit did not happen: its pending rows are settled (conflict or abandoned) with
// what it staged, and the assets it created are undone. A commit left pending (the process
// stopped between its metadata write and its swap) is settled later by ResolvePending.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/internal/clip"
	"github.com/tidemark/tidemark/tables"
)

// settle marks the plans' pending commits with a final state.
func (s *Service) settle(ctx context.Context, plans []*plan, state, reason string) {
	ctx = context.WithoutCancel(ctx)
	now := s.clock()
	for _, p := range plans {
		if p.commit == uuid.Nil {
			continue
		}
		err := s.tx(ctx, func(tx *ent.Tx) error {
			n, err := tx.IcebergCommit.Update().Where(icebergcommit.ID(p.commit), icebergcommit.State(statePending)).SetState(state).
				SetReason(clip.String(reason, maxReason)).SetFinishedAt(now).Save(ctx)
			if err != nil || n == 0 {
				return err
			}
			// What the rejected commit staged: its metadata file and its snapshots' files.
			staged := []inventoryFile{}
			if p.kind != "register" {
				staged = append(staged, inventoryFile{path: p.newLoc, kind: kindMetadata, change: changeStaged, size: p.size})
			}
			for _, f := range p.files {
				if f.change == changeAdded {
					f.change = changeStaged
					staged = append(staged, f)
				}
			}
			return s.insertFiles(ctx, tx, p.assetOrRow(), p.commit, staged, now)
		})
		if err != nil {
			s.log.Warn("could not settle a commit", "commit_id", p.commit, "state", state, "err", err)
		}
	}
}

// undoAssets marks deleted the assets a failed commit created.
func (s *Service) undoAssets(ctx context.Context, plans []*plan) {
	for _, p := range plans {
		if p.created {
			if _, err := s.cat.Delete(context.WithoutCancel(ctx), p.assetID, catalog.AnyVersion); err != nil {
				s.log.Warn("could not delete the asset of a failed create", "asset_id", p.assetID, "err", err)
			}
		}
		if p.adopted {
			in := catalog.ExternalIDInput{System: catalog.SystemIcebergTable, Value: p.updated.TableUUID().String()}
			if err := s.cat.UnbindExternalID(context.WithoutCancel(ctx), p.assetID, in); err != nil {
				s.log.Warn("could not unbind the table-uuid of a failed create from the asset it adopted", "asset_id", p.assetID, "err", err)
			}
		}
	}
}

// ResolvePending settles commits left pending longer than olderThan (the process stopped
// between writing a metadata file and swapping the pointer, or the store failed during the
// swap): a pointer that moved to the commit's file means committed, otherwise the swap can no
// longer happen (every later commit checks the pointer it read) and the file is an abandoned
// leftover. It returns how many it settled.
func (s *Service) ResolvePending(ctx context.Context, olderThan time.Duration) (int, error) {
	rows, err := s.db.IcebergCommit.Query().Where(icebergcommit.State(statePending), icebergcommit.StartedAtLT(s.clock().Add(-olderThan))).Limit(1000).All(ctx)
	if err != nil {
		return 0, fmt.Errorf("warehouse: read pending commits: %w", err)
	}
	n := 0
	for _, c := range rows {
		cur, err := s.db.IcebergTable.Query().Where(icebergtable.ID(c.AssetID)).Select(icebergtable.FieldMetadataLocation).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return n, err
		}
		state, reason := stateAbandoned, "the process stopped before the pointer was swapped: the metadata file is a leftover"
		if cur != nil && cur.MetadataLocation == c.NewLocation {
			state, reason = stateCommitted, "found committed after the process stopped"
		}
		var staged []inventoryFile
		switch {
		case state == stateAbandoned && c.NewLocation != "" && c.Kind != "register":
			staged = append([]inventoryFile{{path: c.NewLocation, kind: kindMetadata, change: changeStaged}}, s.abandonedFiles(ctx, c)...)
		case state == stateCommitted:
			// What the commit added, as its swap would have recorded it: the inventory's live
			// files must stay the table's.
			staged = s.committedFiles(ctx, c)
		}
		now := s.clock()
		err = s.tx(ctx, func(tx *ent.Tx) error {
			k, err := tx.IcebergCommit.Update().Where(icebergcommit.ID(c.ID), icebergcommit.State(statePending)).SetState(state).SetReason(reason).SetFinishedAt(now).Save(ctx)
			if err != nil || k == 0 || len(staged) == 0 {
				return err
			}
			return s.insertFiles(ctx, tx, c.AssetID, c.ID, staged, now)
		})
		if err != nil {
			return n, err
		}
		if state == stateCommitted {
			s.settledVersions(ctx, c)
		}
		n++
	}
	return n, nil
}

// abandonedFiles is what an abandoned commit's snapshots wrote (read from the metadata file it
// left, against the one it expected), so they are known leftovers; nothing when it cannot be read.
func (s *Service) abandonedFiles(ctx context.Context, c *ent.IcebergCommit) []inventoryFile {
	w, err := s.warehouse(c.Warehouse)
	if err != nil {
		return nil
	}
	meta, err := s.readMetadata(ctx, w, c.NewLocation)
	if err != nil {
		return nil
	}
	var base table.Metadata
	if c.BaseLocation != "" {
		if base, err = s.readMetadata(ctx, w, c.BaseLocation); err != nil {
			return nil
		}
	}
	fsys, err := s.tables.WarehouseIO(ctx, w, meta.Location())
	if err != nil {
		return nil
	}
	g, err := tables.GroundOf(ctx, s.db, meta.Location(), c.AssetID)
	if err != nil {
		return nil
	}
	var out []inventoryFile
	for _, snap := range meta.Snapshots() {
		if snap.ManifestList != "" && (base == nil || base.SnapshotByID(snap.SnapshotID) == nil) {
			out = append(out, stagedFiles(fsys, snap, g)...)
		}
	}
	return out
}

// committedFiles is what a commit found committed after the process stopped added: its
// metadata file, and what its new snapshots wrote (read from its metadata files).
func (s *Service) committedFiles(ctx context.Context, c *ent.IcebergCommit) []inventoryFile {
	out := []inventoryFile{{path: c.NewLocation, kind: kindMetadata, change: changeAdded}}
	w, err := s.warehouse(c.Warehouse)
	if err != nil || c.Kind == "register" {
		return out
	}
	p := &plan{kind: c.Kind}
	if p.updated, err = s.readMetadata(ctx, w, c.NewLocation); err != nil {
		s.log.Warn("a commit found committed: its metadata could not be read for the inventory", "commit_id", c.ID, "err", err)
		return out
	}
	if c.BaseLocation != "" {
		if p.base, err = s.readMetadata(ctx, w, c.BaseLocation); err != nil {
			return out
		}
	}
	if fsys, err := s.tables.WarehouseIO(ctx, w, p.updated.Location()); err == nil {
		out[0].size = fileSize(fsys, c.NewLocation)
	}
	if p.ground, err = tables.GroundOf(ctx, s.db, p.updated.Location(), c.AssetID); err != nil {
		return out
	}
	if err := s.readAdded(ctx, w, p); err != nil {
		s.log.Warn("a commit found committed: its files could not be read for the inventory", "commit_id", c.ID, "err", err)
		return out
	}
	return append(out, p.files...)
}
