package warehouse

// Reading back the drops that asked for a purge: each is a request to delete the dropped table's
// files, which only a cleanup proposal a person approves carries out (package cleanup reads
// them; the drop itself deletes nothing).

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergcommit"
)

// purgeReason starts the reason dropServedRow records on a drop with purgeRequested.
const purgeReason = "dropped, purge requested"

// PurgeRequest is a drop of a served table with purgeRequested.
type PurgeRequest struct {
	DropID    uuid.UUID // the drop's commit record: one purge
	AssetID   uuid.UUID
	Warehouse string
	// MetadataLocation is the pointer the drop removed: the table's last metadata.
	MetadataLocation string
	Actor            string // who dropped it
	At               time.Time
	// Superseded: the asset has a commit recorded after the drop (it was registered again,
	// or is being), so this purge no longer stands.
	Superseded bool
}

// PurgeRequests lists the drops with purgeRequested after a cursor (a DropID), oldest first.
func (s *Service) PurgeRequests(ctx context.Context, after uuid.UUID, limit int) ([]PurgeRequest, bool, error) {
	q := s.db.IcebergCommit.Query().Where(icebergcommit.Kind("drop"), icebergcommit.State(stateCommitted), icebergcommit.ReasonHasPrefix(purgeReason))
	if after != uuid.Nil {
		q.Where(icebergcommit.IDGT(after))
	}
	rows, err := q.Order(ent.Asc(icebergcommit.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("warehouse: read the drops with a purge: %w", err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]PurgeRequest, 0, len(rows))
	for _, r := range rows {
		p, err := s.purgeRequest(ctx, r)
		if err != nil {
			return nil, false, err
		}
		out = append(out, p)
	}
	return out, more, nil
}

// PurgeRequestOf returns the purge a drop asked for, as it stands now; ErrNotFound when the
// commit is not a drop with purgeRequested.
func (s *Service) PurgeRequestOf(ctx context.Context, drop uuid.UUID) (PurgeRequest, error) {
	r, err := s.db.IcebergCommit.Query().Where(icebergcommit.ID(drop), icebergcommit.Kind("drop"), icebergcommit.State(stateCommitted),
		icebergcommit.ReasonHasPrefix(purgeReason)).Only(ctx)
	if ent.IsNotFound(err) {
		return PurgeRequest{}, serveErr(ErrNoSuchTable, "commit %s is not a drop with purgeRequested", drop)
	}
	if err != nil {
		return PurgeRequest{}, fmt.Errorf("warehouse: read drop %s: %w", drop, err)
	}
	return s.purgeRequest(ctx, r)
}

func (s *Service) purgeRequest(ctx context.Context, r *ent.IcebergCommit) (PurgeRequest, error) {
	// Any later record, whatever its state: a register in flight counts, so a purge never
	// races one that is making the table live again.
	later, err := s.db.IcebergCommit.Query().Where(icebergcommit.AssetID(r.AssetID), icebergcommit.IDGT(r.ID)).Exist(ctx)
	if err != nil {
		return PurgeRequest{}, fmt.Errorf("warehouse: read the commits after drop %s: %w", r.ID, err)
	}
	return PurgeRequest{DropID: r.ID, AssetID: r.AssetID, Warehouse: r.Warehouse, MetadataLocation: r.BaseLocation, Actor: r.Actor,
		At: r.StartedAt, Superseded: later}, nil
}
