package warehouse

// Step 1 of a commit: read each table's current metadata, check the requirements against it and
// apply the updates. A requirement that fails is a conflict, recorded with what its writer
// staged.

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/internal/clip"
	"github.com/tidemark/tidemark/tables"
)

// stage reads one table's current metadata, checks the requirements and applies the updates.
func (s *Service) stage(ctx context.Context, w tables.Warehouse, ch CommitChange, opt CommitOptions) (*plan, error) {
	p := &plan{ident: ch.Ident, kind: "commit"}
	row, err := s.servedRow(ctx, s.db, w.Name, ch.Ident)
	if err != nil && !errors.Is(err, ErrNoSuchTable) {
		return nil, err
	}
	creates := false
	for _, r := range ch.Requirements {
		if r.GetType() == "assert-create" {
			creates = true
		}
	}
	if row == nil && !creates {
		return nil, err
	}
	baseLoc := ""
	if row != nil {
		p.row = row
		baseLoc = row.MetadataLocation
		if p.base, err = s.readMetadata(ctx, w, row.MetadataLocation); err != nil {
			return nil, err
		}
	}
	for _, r := range ch.Requirements {
		if err := r.Validate(p.base); err != nil {
			s.recordConflict(ctx, w, p, ch, err, opt)
			return nil, serveErr(ErrCommitFailed, "table %s: %v; refresh the table and retry", ch.Ident, err)
		}
	}
	base := p.base
	if base == nil {
		p.kind = "create"
		if base, err = table.NewMetadata(iceberg.NewSchema(0), nil, table.UnsortedSortOrder, "", nil); err != nil {
			return nil, err
		}
	}
	if p.updated, err = table.UpdateTableMetadata(base, ch.Updates, baseLoc); err != nil {
		return nil, invalid("updates", "table %s: the updates cannot be applied: %v", ch.Ident, err)
	}
	if p.base != nil && p.updated.Equals(p.base) {
		p.noop = true
	}
	if err := checkMetadataBounds(p.base, p.updated); err != nil {
		return nil, err
	}
	for _, u := range ch.Updates {
		// A table keeps its UUID: the asset, the inventory and the bot's approvals are bound to it.
		if u.Action() == "assign-uuid" && p.base != nil && p.updated.TableUUID() != p.base.TableUUID() {
			return nil, invalid("updates", "table %s: assign-uuid would change the table's UUID from %s; a table keeps its UUID (create a new table instead)", ch.Ident, p.base.TableUUID())
		}
	}
	return p, nil
}

// recordConflict records a rejected commit for the table's commit health, with the files its
// writer staged for it (its snapshots' manifest lists, known leftovers unless a retry commits
// them).
func (s *Service) recordConflict(ctx context.Context, w tables.Warehouse, p *plan, ch CommitChange, cause error, opt CommitOptions) {
	if p.row == nil {
		return
	}
	now := s.clock()
	var snap *int64
	var staged []inventoryFile
	for _, u := range ch.Updates {
		if u.Action() != "add-snapshot" {
			continue
		}
		// iceberg-go keeps the update's type unexported: its JSON names the snapshot.
		var a struct {
			Snapshot *table.Snapshot `json:"snapshot"`
		}
		if b, err := json.Marshal(u); err != nil || json.Unmarshal(b, &a) != nil || a.Snapshot == nil {
			continue
		}
		v := a.Snapshot.SnapshotID
		snap = &v
		if a.Snapshot.ManifestList != "" {
			staged = append(staged, s.rejectedFiles(ctx, w, p, *a.Snapshot)...)
		}
	}
	err := s.tx(ctx, func(tx *ent.Tx) error {
		if err := opt.claim.mark(ctx, tx, p.row.ID); err != nil {
			return err
		}
		c, err := tx.IcebergCommit.Create().SetAssetID(p.row.ID).SetWarehouse(w.Name).SetKind("commit").SetState(stateConflict).
			SetBaseLocation(p.row.MetadataLocation).SetNillableSnapshotID(snap).SetReason(clip.String(cause.Error(), maxReason)).
			SetIdempotencyKey(opt.IdempotencyKey).SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).SetFinishedAt(now).Save(ctx)
		if err != nil {
			return err
		}
		return s.insertFiles(ctx, tx, p.row.ID, c.ID, staged, now)
	})
	if err == nil {
		opt.claim.recorded()
	}
	if err != nil {
		s.log.Warn("could not record a rejected commit", "asset_id", p.row.ID, "err", err)
	}
}

// rejectedFiles is what a rejected commit's writer staged for one snapshot, read while the
// files are fresh (see stagedFiles); the manifest list alone when the table's location is unknown.
func (s *Service) rejectedFiles(ctx context.Context, w tables.Warehouse, p *plan, snap table.Snapshot) []inventoryFile {
	list := []inventoryFile{{snapshot: snap.SnapshotID, path: snap.ManifestList, kind: kindManifestList, change: changeStaged}}
	if p.base == nil {
		return list
	}
	g, err := tables.GroundOf(ctx, s.db, p.base.Location(), p.row.ID)
	if err != nil || g.Check(snap.ManifestList, false) != nil {
		return nil // not this table's file: never its leftover
	}
	fsys, err := s.tables.WarehouseIO(ctx, w, p.base.Location())
	if err != nil {
		return list
	}
	return stagedFiles(fsys, snap, g)
}
