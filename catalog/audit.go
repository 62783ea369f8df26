package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/auditevent"
)

// AuditEvent is one recorded change.
type AuditEvent struct {
	ID        uuid.UUID       `json:"id"`
	At        time.Time       `json:"at"`
	Actor     string          `json:"actor"`
	Action    string          `json:"action"`
	AssetID   *uuid.UUID      `json:"asset_id,omitempty"`
	Before    json.RawMessage `json:"before,omitempty"`
	After     json.RawMessage `json:"after,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
}

// Audit actions.
const (
	ActionCreate      = "asset.create"
	ActionRename      = "asset.rename"
	ActionUpdate      = "asset.update"
	ActionDelete      = "asset.delete"
	ActionRestore     = "asset.restore"
	ActionOwnerSet    = "owner.set"
	ActionOwnerRemove = "owner.remove"
	ActionBindID      = "external_id.bind"

	ActionLabelAdd          = "label.add"
	ActionLabelRemove       = "label.remove"
	ActionColumnDescribe    = "column.describe"
	ActionSchemaChange      = "schema.change"
	ActionSuggestionReject  = "suggestion.reject"
	ActionClassificationPut = "classification.put"
	ActionTermCreate        = "term.create"
	ActionTermUpdate        = "term.update"
)

// RecordAudit appends an audit event for a change another package made (a cleanup decision, a
// deletion), inside tx when one is given so it commits or fails with the change.
func (c *Catalog) RecordAudit(ctx context.Context, tx *ent.Tx, action string, assetID uuid.UUID, before, after any) error {
	if tx != nil {
		return c.audit(ctx, tx, c.Now(), action, assetID, before, after)
	}
	return c.tx(ctx, func(tx *ent.Tx) error { return c.audit(ctx, tx, c.Now(), action, assetID, before, after) })
}

// audit appends an event inside tx, so the change and its record commit or fail together.
func (c *Catalog) audit(ctx context.Context, tx *ent.Tx, at time.Time, action string, assetID uuid.UUID, before, after any) error {
	q, err := c.auditCreate(ctx, tx, at, action, assetID, before, after)
	if err != nil {
		return err
	}
	if err := q.Exec(ctx); err != nil {
		return fmt.Errorf("catalog: audit %s: %w", action, err)
	}
	return nil
}

// auditCreate builds an audit event for tx without writing it (to write many in bulk).
func (c *Catalog) auditCreate(ctx context.Context, tx *ent.Tx, at time.Time, action string, assetID uuid.UUID, before, after any) (*ent.AuditEventCreate, error) {
	q := tx.AuditEvent.Create().SetAt(at).SetActor(ActorFrom(ctx)).SetAction(action).SetRequestID(requestIDFrom(ctx))
	if assetID != uuid.Nil { // a change of no asset (a glossary term, a classification)
		q.SetAssetID(assetID)
	}
	for _, side := range []struct {
		v   any
		set func(json.RawMessage) *ent.AuditEventCreate
	}{{before, q.SetBefore}, {after, q.SetAfter}} {
		if side.v == nil {
			continue
		}
		b, err := json.Marshal(side.v)
		if err != nil {
			return nil, fmt.Errorf("catalog: audit %s: %w", action, err)
		}
		side.set(b)
	}
	return q, nil
}

// Audit returns an asset's audit trail, oldest first, starting after the event ID after (zero for
// the start), at most limit events, and whether more follow.
func (c *Catalog) Audit(ctx context.Context, assetID uuid.UUID, after uuid.UUID, limit int) ([]AuditEvent, bool, error) {
	if err := c.exists(ctx, assetID); err != nil {
		return nil, false, err
	}
	q := c.client(ctx).AuditEvent.Query().Where(auditevent.AssetID(assetID))
	if after != uuid.Nil {
		q = q.Where(auditevent.IDGT(after))
	}
	rows, err := q.Order(ent.Asc(auditevent.FieldID)).Limit(limit + 1).All(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("catalog: audit of %s: %w", assetID, err)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = AuditEvent{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, AssetID: r.AssetID,
			Before: r.Before, After: r.After, RequestID: r.RequestID}
	}
	return out, more, nil
}
