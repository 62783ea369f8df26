// The SQLite flush: a batch's runs, run I/O and events, a statement or a bulk insert each.

package lineage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/lineageevent"
	"github.com/tidemark/tidemark/internal/chunk"
)

// flushSQLite writes runs, run I/O and events a statement (or a bulk insert) each: in process, a
// statement costs no round trip. Edges are flush's last step (flushEdges).
func (b *batch) flushSQLite(ctx context.Context) error {
	var creates []*ent.RunCreate
	for _, r := range b.runs {
		switch {
		case r.isNew:
			creates = append(creates, b.tx.Run.Create().SetID(r.row.ID).SetJobAssetID(r.row.JobAssetID).SetState(r.row.State).
				SetStateTime(r.row.StateTime).SetNillableStartedAt(r.row.StartedAt).SetNillableEndedAt(r.row.EndedAt).
				SetNillableNominalStart(r.row.NominalStart).SetNillableNominalEnd(r.row.NominalEnd).SetParentRunID(r.row.ParentRunID).
				SetFacets(r.row.Facets).SetEventCount(r.row.EventCount).SetCreatedAt(r.row.CreatedAt).SetUpdatedAt(r.row.UpdatedAt))
		case r.dirty:
			if err := b.tx.Run.UpdateOneID(r.row.ID).SetState(r.row.State).SetStateTime(r.row.StateTime).
				SetNillableStartedAt(r.row.StartedAt).SetNillableEndedAt(r.row.EndedAt).SetParentRunID(r.row.ParentRunID).
				SetFacets(r.row.Facets).SetEventCount(r.row.EventCount).SetUpdatedAt(r.row.UpdatedAt).Exec(ctx); err != nil {
				return fmt.Errorf("lineage: update run: %w", err)
			}
		}
	}
	if err := chunk.Each(creates, func(part []*ent.RunCreate) error {
		return b.tx.Run.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: create runs: %w", err)
	}
	type io struct {
		k [3]string
		t time.Time
	}
	ios := make([]io, 0, len(b.runIO))
	for k, t := range b.runIO {
		ios = append(ios, io{k, t})
	}
	if err := chunk.Each(ios, func(part []io) error {
		var q strings.Builder
		q.WriteString("INSERT INTO run_ios (run_id, asset_id, role, first_seen) VALUES ")
		args := make([]any, 0, 4*len(part))
		for i, r := range part {
			if i > 0 {
				q.WriteString(",")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4)
			args = append(args, r.k[0], r.k[1], r.k[2], r.t)
		}
		// ON CONFLICT: run I/O is not tailed, so an ID consumed by a conflicting row costs nothing.
		q.WriteString(" ON CONFLICT (run_id, asset_id, role) DO NOTHING")
		_, err := b.tx.ExecContext(ctx, q.String(), args...)
		return err
	}); err != nil {
		return fmt.Errorf("lineage: record run io: %w", err)
	}
	if err := chunk.Each(b.events, func(part []eventRow) error {
		creates := make([]*ent.LineageEventCreate, len(part))
		for i, e := range part {
			ev := e.ev
			creates[i] = b.tx.LineageEvent.Create().SetID(e.id).SetEventKey(e.key).SetKind(lineageevent.Kind(ev.Kind)).SetEventType(ev.EventType).
				SetEventTime(ev.EventTime).SetRunID(ev.RunID).SetProducer(truncate(ev.Producer, 1024)).
				SetPayload(string(ev.Raw)).SetPrincipal(b.principal).SetReceivedAt(b.now)
			if e.job != uuid.Nil {
				creates[i].SetJobAssetID(e.job)
			}
		}
		return b.tx.LineageEvent.CreateBulk(creates...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: store events: %w", err)
	}
	return nil
}
