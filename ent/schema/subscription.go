package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// Subscription is a principal asking to hear of every change to an asset. No edge to the asset:
// assets are only ever soft-deleted, and a subscriber of a deleted asset still hears of its
// restore.
type Subscription struct{ ent.Schema }

func (Subscription) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Subscription) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("principal").Immutable(),
		field.Time("created_at").Immutable(),
	}
}

func (Subscription) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "principal").Unique(), index.Fields("principal")}
}

// NotifyCursor is how far a reader of the audit log has got (the last event ID it handled). It
// moves in the same transaction as the outbox messages it wrote, so a crash loses no event and
// a retry sends none twice.
type NotifyCursor struct{ ent.Schema }

func (NotifyCursor) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // the reader, e.g. "subscriptions"
		field.UUID("after", uuid.UUID{}),
		field.Time("updated_at"),
	}
}
