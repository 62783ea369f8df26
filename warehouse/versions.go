package warehouse

// After the swap: the versions a commit made. Every snapshot a commit added is recorded as a
// version of its table (with its parent, operation, summary, the commit's principal and its
// commit row), and every snapshot it removed is marked expired. The swap is the commit: nothing
// here can make it fail. What could not be recorded is logged; the table's next inspection
// (InspectionJob, after every commit) records its snapshots and marks the removed ones, and a
// commit settled as committed after a crash records its versions in ResolvePending.

import (
	"context"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/versions"
)

// WithVersions records the versions every commit makes (nil records none).
func WithVersions(v *versions.Service) Option { return func(s *Service) { s.versions = v } }

// recordVersions records the versions of the plans' swapped commits (best effort, see above).
func (s *Service) recordVersions(ctx context.Context, plans []*plan, opt CommitOptions) {
	if s.versions == nil {
		return
	}
	ctx = context.WithoutCancel(ctx) // the commit happened: a client gone meanwhile changes nothing
	actor := catalog.ActorFrom(ctx)  // as recordPending stored it on the commit row
	by := opt.expiredBy
	if by == "" {
		by = actor
	}
	for _, p := range plans {
		if p.noop {
			continue
		}
		commit := commitVersions{asset: p.assetOrRow(), commit: p.commit, kind: p.kind, actor: actor, by: by, base: p.base, updated: p.updated}
		if err := s.recordCommitVersions(ctx, commit); err != nil {
			s.log.Warn("the commit happened; its versions could not be recorded (the table's next inspection records them)",
				"asset_id", commit.asset, "commit_id", p.commit, "err", err)
		}
	}
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
