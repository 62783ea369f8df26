package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// IdempotencyKey remembers the outcome of a request that carried an Idempotency-Key, so a retry
// returns the first outcome instead of repeating the effect. request_hash detects a key reused
// for a different request.
type IdempotencyKey struct{ ent.Schema }

func (IdempotencyKey) Fields() []ent.Field {
	return []ent.Field{
		field.String("operation").Immutable(),
		field.String("key").Immutable(),
		field.String("request_hash").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Time("created_at").Immutable(),
	}
}

func (IdempotencyKey) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("operation", "key").Unique(),
		index.Fields("created_at"),
	}
}
