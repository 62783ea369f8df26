package warehouse

// With the swap: the versions a commit made. Every snapshot a commit added is recorded as a
// version of its table (with its parent, operation, summary, the commit's principal and its
// commit row), and every snapshot it removed is marked expired, in the swap's transaction under
// a savepoint: nothing here can make the commit fail. What could not be recorded is logged; the
// table's next inspection (InspectionJob, after every commit) records its snapshots and marks the
// removed ones, and a commit settled as committed after a crash records its versions in
// ResolvePending.

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/versions"
)

// WithVersions records the versions every commit makes (nil records none).
func WithVersions(v *versions.Service) Option { return func(s *Service) { s.versions = v } }

// recordAlongside records, in the swap's transaction once every pointer moved, what the commit
// means elsewhere: its versions, and what opt.Committed records (the REST face: a write in the
// table's usage). One transaction saves a commit of the store each (a WAL flush on PostgreSQL)
// and a BEGIN. Each part stays best effort: a failure rolls back to a savepoint, is logged, and
// the commit stands. It fails only when a savepoint cannot be rolled back to (the transaction is
// broken then, and the swap with it).
func (s *Service) recordAlongside(ctx context.Context, tx *ent.Tx, plans []*plan, opt CommitOptions) error {
	ctx = ent.NewTxContext(ctx, tx)
	actor := catalog.ActorFrom(ctx) // as recordPending stored it on the commit row
	by := opt.expiredBy
	if by == "" {
		by = actor
	}
	if s.versions != nil {
		done := phase(ctx, "versions")
		for _, p := range plans {
			if p.noop {
				continue
			}
			commit := commitVersions{asset: p.assetOrRow(), commit: p.commit, kind: p.kind, actor: actor, by: by, base: p.base, updated: p.updated}
			err := savepoint(ctx, tx, func() error { return s.recordCommitVersions(ctx, commit) })
			if errors.Is(err, errSavepoint) {
				done()
				return err
			}
			if err != nil {
				s.log.Warn("the commit happened; its versions could not be recorded (the table's next inspection records them)",
					"asset_id", commit.asset, "commit_id", p.commit, "err", err)
			}
		}
		done()
	}
	if opt.Committed == nil {
		return nil
	}
	defer phase(ctx, "record-use")()
	for _, p := range plans {
		if p.noop {
			continue
		}
		err := savepoint(ctx, tx, func() error { return opt.Committed(ctx, p.assetOrRow(), p.newLoc) })
		if errors.Is(err, errSavepoint) {
			return err
		}
		if err != nil {
			s.log.Warn("the commit happened; what it means elsewhere could not be recorded", "asset_id", p.assetOrRow(), "commit_id", p.commit, "err", err)
		}
	}
	return nil
}

// errSavepoint is a savepoint that could not be set, released or rolled back to.
var errSavepoint = errors.New("warehouse: savepoint")

// savepoint runs fn inside a savepoint of tx: what fn did is rolled back when it fails, and the
// transaction goes on (on PostgreSQL, a failed statement otherwise aborts the transaction). The
// savepoint is not released: the transaction's commit releases it, and a later savepoint of the
// same name is rolled back to alone (a round trip less each).
func savepoint(ctx context.Context, tx *ent.Tx, fn func() error) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT tidemark_alongside"); err != nil {
		return fmt.Errorf("%w: %v", errSavepoint, err)
	}
	if err := fn(); err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT tidemark_alongside"); rerr != nil {
			return fmt.Errorf("%w: %v (after %v)", errSavepoint, rerr, err)
		}
		return err
	}
	return nil
}

// commitVersions is one table's committed change, as its versions see it.
type commitVersions struct {
	asset, commit uuid.UUID
	kind          string // create, commit, register
	actor, by     string // the commit's principal; who removed snapshots
	base, updated table.Metadata
}

func (s *Service) recordCommitVersions(ctx context.Context, c commitVersions) error {
	now := s.clock()
	if c.kind == "register" {
		// The registered metadata's snapshots were made elsewhere: this catalog read them.
		_, err := s.versions.RecordTable(ctx, tables.TableRead(c.asset, c.updated, versions.SourceInspection, tables.ExpiredByInspection, now))
		return err
	}
	var added []versions.Observed
	for _, snap := range c.updated.Snapshots() {
		if c.base != nil && c.base.SnapshotByID(snap.SnapshotID) != nil {
			continue
		}
		o := tables.SnapshotVersion(c.asset, snap, versions.SourceCommit)
		o.Principal = c.actor
		commit := c.commit
		o.CommitID = &commit
		added = append(added, o)
	}
	if err := s.versions.Record(ctx, added); err != nil {
		return err
	}
	if c.base == nil {
		return nil
	}
	var removed []int64
	for _, snap := range c.base.Snapshots() {
		if c.updated.SnapshotByID(snap.SnapshotID) == nil {
			removed = append(removed, snap.SnapshotID)
		}
	}
	if len(removed) == 0 {
		return nil
	}
	return s.versions.MarkExpired(ctx, c.asset, removed, c.by, now)
}

// settledVersions records the versions of a commit found committed after the process stopped
// (ResolvePending), from its metadata files; best effort as after any swap.
func (s *Service) settledVersions(ctx context.Context, c *ent.IcebergCommit) {
	if s.versions == nil || c.NewLocation == "" {
		return
	}
	err := func() error {
		w, err := s.warehouse(c.Warehouse)
		if err != nil {
			return err
		}
		cv := commitVersions{asset: c.AssetID, commit: c.ID, kind: c.Kind, actor: c.Actor, by: c.Actor}
		if cv.updated, err = s.readMetadata(ctx, w, c.NewLocation); err != nil {
			return err
		}
		if c.BaseLocation != "" {
			if cv.base, err = s.readMetadata(ctx, w, c.BaseLocation); err != nil {
				return err
			}
		}
		return s.recordCommitVersions(ctx, cv)
	}()
	if err != nil {
		s.log.Warn("a commit found committed: its versions could not be recorded (the table's next inspection records them)", "commit_id", c.ID, "err", err)
	}
}
