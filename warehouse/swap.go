package warehouse

// Step 4 of a commit: the pointers move in one transaction, each guarded by the location its
// commit read, and the inventory is recorded in the same transaction.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/ent/icebergtable"
	"github.com/tidemark/tidemark/tables"
)

// swapOrSettle swaps the pointers; when the swap did not happen, the commit is settled as a
// conflict (a pointer moved, a name or location was taken meanwhile) or abandoned, and the
// assets it created are undone. A swap whose outcome is unknown stays pending until
// ResolvePending knows.
func (s *Service) swapOrSettle(ctx context.Context, w tables.Warehouse, plans []*plan, opt CommitOptions) error {
	swapErr := s.swap(ctx, w, plans, opt)
	if swapErr == nil {
		return nil
	}
	var se *ServeError
	if errors.As(swapErr, &se) && errors.Is(se.Kind, ErrCommitUnknown) {
		return swapErr // pending until ResolvePending knows
	}
	state := stateAbandoned
	if errors.Is(swapErr, ErrCommitFailed) || errors.Is(swapErr, ErrAlreadyExists) {
		state = stateConflict
	}
	s.settle(ctx, plans, state, swapErr.Error())
	s.undoAssets(ctx, plans)
	if errors.As(swapErr, &se) {
		return swapErr
	}
	return serveErr(ErrNotCommitted, "the pointer could not be swapped: %v; nothing was committed", swapErr)
}

// swap moves every pointer in one transaction, each guarded by the location its commit read, and
// records what the commit means elsewhere in it (recordAlongside).
func (s *Service) swap(ctx context.Context, w tables.Warehouse, plans []*plan, opt CommitOptions) error {
	now := s.clock()
	tx, err := s.db.Tx(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: begin the swap: %w", err)
	}
	if err := s.swapIn(ctx, tx, w, plans, now); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := s.recordAlongside(ctx, tx, plans, opt); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		// The commit may or may not have reached the store: read the pointers back.
		return s.outcome(ctx, plans, err)
	}
	return nil
}

func (s *Service) swapIn(ctx context.Context, tx *ent.Tx, w tables.Warehouse, plans []*plan, now time.Time) error {
	locked := false
	for _, p := range plans {
		if p.noop {
			continue
		}
		if p.row == nil || p.base == nil || p.updated.Location() != p.base.Location() {
			// Checked again inside the swap, serialised with every other swap that places a
			// table: two racing creates or set-locations cannot both take one location.
			if !locked {
				if err := lockLocations(ctx, tx); err != nil {
					return err
				}
				locked = true
			}
			if err := s.checkLocation(ctx, tx.Client(), w, p.updated.Location(), p.self()); err != nil {
				return err
			}
		}
		var cur *int64
		if c := p.updated.CurrentSnapshot(); c != nil {
			v := c.SnapshotID
			cur = &v
		}
		last := time.UnixMilli(p.updated.LastUpdatedMillis()).UTC()
		key := tableKey(w.Name, p.ident.Namespace, p.ident.Name)
		switch {
		case p.row != nil:
			u := tx.IcebergTable.Update().Where(icebergtable.ID(p.row.ID), icebergtable.MetadataLocation(p.row.MetadataLocation), icebergtable.RestKey(key)).
				SetMetadataLocation(p.newLoc).SetLocation(p.updated.Location()).SetFormatVersion(p.updated.Version()).
				SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).SetUpdatedAt(now)
			if cur == nil {
				u.ClearCurrentSnapshotID()
			}
			n, err := u.Save(ctx)
			if err != nil {
				return err
			}
			if n == 0 {
				return serveErr(ErrCommitFailed, "table %s changed since this commit read it at %s; refresh the table and retry", p.ident, p.row.MetadataLocation)
			}
		case p.adopt != nil:
			n, err := tx.IcebergTable.Update().Where(icebergtable.ID(p.adopt.ID), icebergtable.Or(icebergtable.GoneAtNotNil(), icebergtable.And(icebergtable.Connection(""), icebergtable.Warehouse("")))).
				SetWarehouse(w.Name).SetConnection("").SetIdentifier(p.ident.String()).SetRestKey(key).SetRestNamespace(nsKey(w.Name, p.ident.Namespace)).
				SetMetadataLocation(p.newLoc).SetLocation(p.updated.Location()).SetFormatVersion(p.updated.Version()).
				SetNillableCurrentSnapshotID(cur).SetLastUpdatedAt(last).ClearGoneAt().ClearMissingAt().SetUpdatedAt(now).Save(ctx)
			if ent.IsConstraintError(err) {
				return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s", p.ident, w.Name)
			}
			if err != nil {
				return err
			}
			if n == 0 {
				return serveErr(ErrAlreadyExists, "table-uuid %s became live elsewhere meanwhile", p.updated.TableUUID())
			}
		default:
			err := tx.IcebergTable.Create().SetID(p.assetID).SetWarehouse(w.Name).SetIdentifier(p.ident.String()).SetRestKey(key).
				SetRestNamespace(nsKey(w.Name, p.ident.Namespace)).SetTableUUID(p.updated.TableUUID().String()).SetLocation(p.updated.Location()).
				SetMetadataLocation(p.newLoc).SetFormatVersion(p.updated.Version()).SetNillableCurrentSnapshotID(cur).
				SetLastUpdatedAt(last).SetCreatedAt(now).SetUpdatedAt(now).Exec(ctx)
			if ent.IsConstraintError(err) {
				if p.kind == "create" && p.row == nil {
					return serveErr(ErrAlreadyExists, "table %s already exists in warehouse %s (or its table-uuid is known)", p.ident, w.Name)
				}
				return serveErr(ErrCommitFailed, "table %s was created meanwhile", p.ident)
			}
			if err != nil {
				return err
			}
		}
		var added, removed, bytes int64
		for _, f := range p.files {
			switch f.change {
			case changeAdded:
				if f.kind == kindData || f.kind == kindDelete {
					added++
					bytes += f.size
				}
			case changeRemoved:
				if f.kind == kindData || f.kind == kindDelete {
					removed++
				}
			}
		}
		// Only a commit still pending may swap: one settled as abandoned meanwhile has a file
		// the cleanup bot may already treat as a leftover.
		n, err := tx.IcebergCommit.Update().Where(icebergcommit.ID(p.commit), icebergcommit.State(statePending)).SetState(stateCommitted).
			SetFinishedAt(now).SetAddedFiles(added).SetRemovedFiles(removed).SetAddedBytes(bytes).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return serveErr(ErrNotCommitted, "table %s: the commit was settled as abandoned before its swap; nothing was committed", p.ident)
		}
		files := append([]inventoryFile{{path: p.newLoc, kind: kindMetadata, change: changeAdded, size: p.size}}, p.files...)
		if p.kind == "register" {
			files = files[:1]
		}
		done := phase(ctx, "inventory-rows")
		err = s.insertFiles(ctx, tx, p.assetOrRow(), p.commit, files, now)
		done()
		if err != nil {
			return err
		}
	}
	return nil
}

// outcome reads the pointers back after a failed transaction commit: all swapped is success,
// none swapped is known not committed, anything else (or no answer) is unknown.
func (s *Service) outcome(ctx context.Context, plans []*plan, cause error) error {
	ctx = context.WithoutCancel(ctx)
	swapped, checked := 0, 0
	for _, p := range plans {
		if p.noop {
			continue
		}
		checked++
		row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(p.assetOrRow())).Select(icebergtable.FieldMetadataLocation).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return serveErr(ErrCommitUnknown, "the store failed while committing (%v) and could not be read back (%v): the outcome is unknown; do not clean up", cause, err)
		}
		if row != nil && row.MetadataLocation == p.newLoc {
			swapped++
		}
	}
	switch swapped {
	case checked:
		return nil
	case 0:
		return fmt.Errorf("warehouse: commit the swap: %w", cause)
	}
	return serveErr(ErrCommitUnknown, "the store failed while committing (%v): the outcome is unknown; do not clean up", cause)
}

// lockLocations serialises the swaps that place a table until their transaction ends: a
// PostgreSQL advisory lock (SQLite's transactions take the write lock at BEGIN already).
func lockLocations(ctx context.Context, tx *ent.Tx) error {
	var d string
	if _, err := tx.IcebergTable.Query().Where(func(s *entsql.Selector) { d = s.Dialect(); s.Where(entsql.False()) }).Exist(ctx); err != nil {
		return err
	}
	if d != dialect.Postgres {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", locationLockKey)
	return err
}

// locationLockKey is the advisory lock of table placement ("tidemark locations").
const locationLockKey int64 = 0x746d6c6f63
