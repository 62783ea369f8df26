package tables

// The versions a table's metadata shows (package versions): every snapshot a sync, an
// inspection or a registration read is recorded on the table's asset, and the versions the table
// showed before and no longer has are marked expired.

import (
	"context"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/versions"
)

// Who marks versions expired when a read of the table no longer shows them.
const (
	ExpiredBySync       = "sync"
	ExpiredByInspection = "inspection"
	// ExpiredByCleanup is Tidemark's own expiry when no principal asked for it.
	ExpiredByCleanup = "cleanup"
)

// WithVersions records the versions every read of a table shows (nil records none).
func WithVersions(v *versions.Service) Option { return func(s *Service) { s.versions = v } }

// SnapshotVersion is a snapshot as a version of the table's asset, learned from source.
func SnapshotVersion(asset uuid.UUID, snap table.Snapshot, source string) versions.Observed {
	id := snap.SnapshotID
	o := versions.Observed{AssetID: asset, SnapshotID: &id, Source: source}
	if snap.TimestampMs != 0 {
		o.CommittedAt = time.UnixMilli(snap.TimestampMs).UTC()
	}
	if snap.ParentSnapshotID != nil {
		o.Parent = strconv.FormatInt(*snap.ParentSnapshotID, 10)
	}
	if snap.SequenceNumber > 0 { // 0: format 1, which has none
		seq := snap.SequenceNumber
		o.SequenceNumber = &seq
	}
	if snap.Summary != nil {
		o.Operation = string(snap.Summary.Operation)
		o.Summary = snap.Summary.Properties
	}
	return o
}

// TableRead is a metadata file as one read of a table's versions: all its snapshots.
func TableRead(asset uuid.UUID, meta table.Metadata, source, by string, at time.Time) versions.TableRead {
	snaps := meta.Snapshots()
	r := versions.TableRead{AssetID: asset, Source: source, Snapshots: make([]versions.Observed, len(snaps)),
		LastSequenceNumber: meta.LastSequenceNumber(), LastUpdated: time.UnixMilli(meta.LastUpdatedMillis()).UTC(), By: by, At: at}
	for i, snap := range snaps {
		r.Snapshots[i] = SnapshotVersion(asset, snap, source)
	}
	return r
}

// recordVersions records the versions the table's metadata shows (source SourceSync or
// SourceInspection).
func (s *Service) recordVersions(ctx context.Context, id uuid.UUID, meta table.Metadata, source string) error {
	if s.versions == nil {
		return nil
	}
	by := ExpiredByInspection
	if source == versions.SourceSync {
		by = ExpiredBySync
	}
	_, err := s.versions.RecordTable(ctx, TableRead(id, meta, source, by, s.clock()))
	return err
}

// versionsOfUnchanged records the versions of a table whose metadata did not change since its
// last inspection when its current snapshot is not known as a version (it was inspected before
// versions were kept): one indexed lookup a table, so a sync of unchanged tables stays cheap.
// A failure is logged; the next sync looks again.
func (s *Service) versionsOfUnchanged(ctx context.Context, id uuid.UUID, meta table.Metadata) {
	cur := meta.CurrentSnapshot()
	if s.versions == nil || cur == nil {
		return
	}
	known, err := s.versions.SeenInTable(ctx, id, strconv.FormatInt(cur.SnapshotID, 10))
	if err == nil && !known {
		err = s.recordVersions(ctx, id, meta, versions.SourceSync)
	}
	if err != nil {
		s.log.Warn("could not record the versions of an unchanged table", "asset_id", id, "err", err)
	}
}

// markRemoved marks the snapshots an expiry committed through a table's catalog removed, by the
// principal that asked (the cleanup bot's executor names the approver), else by cleanup. Best
// effort: the removal is committed, and the next read of the table marks them too.
func (s *Service) markRemoved(ctx context.Context, id uuid.UUID, removed []int64) {
	if s.versions == nil || len(removed) == 0 {
		return
	}
	if err := s.versions.MarkExpired(ctx, id, removed, ExpiryBy(ctx), s.clock()); err != nil {
		s.log.Warn("could not mark expired snapshots' versions", "asset_id", id, "err", err)
	}
}

// ExpiryBy is who an expiry in ctx is by: its principal, else cleanup.
func ExpiryBy(ctx context.Context) string {
	if a := catalog.ActorFrom(ctx); a != "" && a != "system" {
		return a
	}
	return ExpiredByCleanup
}
