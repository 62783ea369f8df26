package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// IdempotencyKey remembers the outcome of a request that carried an Idempotency-Key, so a retry
// returns the first outcome instead of repeating the effect. request_hash detects a key reused
// for a different request. The served Iceberg catalog claims a key before it stages anything
// (asset_id nil) and marks the claim when it records the commit (asset_id set); a claim taken
// over after its holder stopped gets a new created_at.
type IdempotencyKey struct{ ent.Schema }

func (IdempotencyKey) Fields() []ent.Field {
	return []ent.Field{
		field.String("operation").Immutable(),
		field.String("key").Immutable(),
		field.String("request_hash").Immutable(),
		field.UUID("asset_id", uuid.UUID{}),
		field.Time("created_at"),
	}
}

func (IdempotencyKey) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("operation", "key").Unique(),
		index.Fields("created_at"),
	}
}
