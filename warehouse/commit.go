package warehouse

// The commit: its entry (Commit) and the order of its steps, each a file of its own (see the
// package doc).

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/tables"
)

// maxReason bounds a commit's stored reason (a requirement's error, a storage error).
const maxReason = 2000

// Commit states.
const (
	statePending   = "pending"
	stateCommitted = "committed"
	stateConflict  = "conflict"
	stateAbandoned = "abandoned"
)

// CommitOptions go with a commit.
type CommitOptions struct {
	// IdempotencyKey makes a retried request return the first request's outcome.
	IdempotencyKey string
	// RequestHash fingerprints the request (method, path, body, principal): a key reused for a
	// request with another fingerprint is refused.
	RequestHash string
	claim       *keyClaim
	// Committed, when set, records what a table's commit means elsewhere (the REST face: a
	// write in the table's usage); it runs in the swap's transaction (ctx carries it), best
	// effort: its failure is logged and the commit stands.
	Committed func(ctx context.Context, asset uuid.UUID, metadataLocation string) error
	// expiredBy is who the snapshots the commit removes are expired by ("": its principal).
	expiredBy string
}

// CommitChange is one table's part of a commit: requirements checked against the current
// metadata, and updates applied to it.
type CommitChange struct {
	Ident        TableIdent
	Requirements []table.Requirement
	Updates      []table.Update
}

// Commit applies changes to one or several served tables, all or nothing: every table's
// requirements are checked against its current metadata, the new metadata files are written
// (data first, then metadata), and the pointers are swapped in one database transaction that
// expects each table's pointer where the commit read it. A failed requirement or a pointer that
// moved is ErrCommitFailed and changes nothing; ErrCommitUnknown only when the store failed
// while committing the swap.
func (s *Service) Commit(ctx context.Context, wh string, changes []CommitChange, opt CommitOptions) ([]ServedTable, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return nil, err
	}
	if len(changes) == 0 {
		return nil, invalid("table-changes", "a commit needs at least one table change")
	}
	defer phase(ctx, "commit")()
	done := phase(ctx, "claim")
	cl, err := s.claimKey(ctx, wh, opt)
	done()
	if err != nil {
		return nil, err
	}
	if cl.replaying() {
		return s.replayCommits(ctx, w, cl.rows)
	}
	defer cl.release(ctx)
	opt.claim = cl
	seen := map[string]bool{}
	plans := make([]*plan, 0, len(changes))
	for _, ch := range changes {
		if err := ch.Ident.valid(); err != nil {
			return nil, err
		}
		if k := tableKey(wh, ch.Ident.Namespace, ch.Ident.Name); seen[k] {
			return nil, invalid("table-changes", "table %s appears twice in one commit: merge its changes", ch.Ident)
		} else {
			seen[k] = true
		}
		done := phase(ctx, "stage")
		p, err := s.stage(ctx, w, ch, opt)
		done()
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return s.commit(ctx, w, plans, opt)
}

// commit runs a commit's steps in order once its plans are staged: prepare them (prepare.go),
// record them as pending, write the new metadata files (metadata.go), then swap the pointers and
// record the inventory, the versions and opt.Committed in one transaction (swap.go, versions.go). A step that fails settles and undoes what the steps before it
// did (settle.go); a commit whose swap may have happened stays pending until ResolvePending knows.
func (s *Service) commit(ctx context.Context, w tables.Warehouse, plans []*plan, opt CommitOptions) ([]ServedTable, error) {
	done := phase(ctx, "prepare")
	err := s.prepare(ctx, w, plans)
	done()
	if err != nil {
		s.undoAssets(ctx, plans)
		return nil, err
	}
	done = phase(ctx, "record-pending")
	err = s.recordPending(ctx, w, plans, opt)
	done()
	if err != nil {
		s.undoAssets(ctx, plans)
		return nil, err
	}
	done = phase(ctx, "write-metadata")
	written, err := s.writeMetadataFiles(ctx, w, plans)
	done()
	if err != nil {
		return nil, err
	}
	if s.faults.BeforeSwap != nil {
		if err := s.faults.BeforeSwap(ctx, written); err != nil {
			return nil, serveErr(ErrCommitUnknown, "the commit stopped before the swap: %v", err)
		}
	}
	done = phase(ctx, "swap")
	err = s.swapOrSettle(ctx, w, plans, opt)
	done()
	if err != nil {
		return nil, err
	}
	s.keptLists(plans)
	defer phase(ctx, "after-commit")()
	out := make([]ServedTable, len(plans))
	for i, p := range plans {
		loc := p.newLoc
		meta := p.updated
		if p.noop {
			loc, meta = p.row.MetadataLocation, p.base
		}
		s.metaCache.Add(loc, meta, p.size)
		out[i] = ServedTable{AssetID: p.assetOrRow(), Ident: p.ident, MetadataLocation: loc, Metadata: meta, MetadataJSON: p.raw, Props: w.Props}
		if !p.noop {
			s.afterCommit(ctx, p)
		}
	}
	return out, nil
}

// recordPending records the plans' commits as pending (and marks the request's Idempotency-Key
// in the same transaction), before any file is written: a crash after the write leaves a
// pending commit naming the file, never an unrecorded one.
func (s *Service) recordPending(ctx context.Context, w tables.Warehouse, plans []*plan, opt CommitOptions) error {
	now := s.clock()
	var txID *uuid.UUID
	if len(plans) > 1 {
		v := uuid.Must(uuid.NewV7())
		txID = &v
	}
	err := s.tx(ctx, func(tx *ent.Tx) error {
		marked := false
		for _, p := range plans {
			if p.noop {
				continue
			}
			if !marked {
				if err := opt.claim.mark(ctx, tx, p.assetOrRow()); err != nil {
					return err
				}
				marked = true
			}
			c, err := tx.IcebergCommit.Create().SetAssetID(p.assetOrRow()).SetWarehouse(w.Name).SetKind(p.kind).SetState(statePending).
				SetBaseLocation(p.baseLocation()).SetNewLocation(p.newLoc).SetNillableSnapshotID(lastSnapshot(p)).
				SetIdempotencyKey(opt.IdempotencyKey).SetNillableTransactionID(txID).SetActor(catalog.ActorFrom(ctx)).SetStartedAt(now).Save(ctx)
			if err != nil {
				return err
			}
			p.commit = c.ID
		}
		return nil
	})
	if err != nil {
		var se *ServeError
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("record the commit: %w", err)
	}
	opt.claim.recorded()
	return nil
}

// afterCommit records the new schema's columns in the catalog (best effort: the commit stands).
func (s *Service) afterCommit(ctx context.Context, p *plan) {
	var prev *int
	if p.row != nil {
		prev = p.row.ColumnsSchemaID
	}
	id := p.assetOrRow()
	s.markStale(id)
	recorded, err := s.tables.SyncColumns(ctx, id, p.updated, prev)
	if err != nil {
		s.log.Warn("could not record the committed schema's columns", "asset_id", id, "err", err)
		return
	}
	if recorded != nil && (prev == nil || *prev != *recorded) {
		if err := s.db.IcebergTable.UpdateOneID(id).SetColumnsSchemaID(*recorded).Exec(ctx); err != nil {
			s.log.Warn("could not record the committed schema's ID", "asset_id", id, "err", err)
		}
	}
}

// plan is one table's commit, staged: what it read, what it will write.
type plan struct {
	ident   TableIdent
	kind    string // create, commit, register
	row     *ent.IcebergTable
	base    table.Metadata // nil for a create
	updated table.Metadata
	newLoc  string                   // the metadata file to write (given for a register: not written)
	adopt   *ent.IcebergTable        // a register of a table Tidemark knew: its row becomes served
	files   []inventoryFile          // what the new snapshots added and removed
	assetID uuid.UUID                // for a create or register
	created bool                     // the asset was created by this commit (deleted again if it fails)
	adopted bool                     // the table-uuid was bound to an existing asset by this commit (unbound if it fails)
	commit  uuid.UUID                // its commit row
	noop    bool                     // the updates changed nothing
	ground  *tables.Ground           // where its files may be
	size    int64                    // bytes of the metadata file written
	raw     []byte                   // the metadata file written (nil for a register or a no-op)
	lists   map[string][]manifestRef // the manifest lists read, kept once it swapped (listcache.go)
}

// self is the asset of the table the plan commits to (nil for a new one).
func (p *plan) self() uuid.UUID {
	switch {
	case p.row != nil:
		return p.row.ID
	case p.adopt != nil:
		return p.adopt.ID
	}
	return uuid.Nil
}

func (p *plan) assetOrRow() uuid.UUID {
	if p.row != nil {
		return p.row.ID
	}
	return p.assetID
}

func (p *plan) baseLocation() string {
	if p.row != nil {
		return p.row.MetadataLocation
	}
	return ""
}

// lastSnapshot is the newest snapshot a commit adds (to any branch), or nil.
func lastSnapshot(p *plan) *int64 {
	var out *int64
	for _, snap := range p.updated.Snapshots() {
		if p.base == nil || p.base.SnapshotByID(snap.SnapshotID) == nil {
			v := snap.SnapshotID
			out = &v
		}
	}
	return out
}
