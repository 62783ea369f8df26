package schema

import (
	"context"
	"encoding/json"
	"fmt"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// AuditEvent records one mutation: who, what, on which asset, when, and the state before and
// after. It is written in the same transaction as the mutation and never changed afterwards.
type AuditEvent struct{ ent.Schema }

func (AuditEvent) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (AuditEvent) Fields() []ent.Field {
	return []ent.Field{
		field.Time("at").Immutable(),
		field.String("actor").Immutable(),
		field.String("action").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.JSON("before", json.RawMessage{}).Optional().Immutable(),
		field.JSON("after", json.RawMessage{}).Optional().Immutable(),
		field.String("request_id").Default("").Immutable(),
	}
}

func (AuditEvent) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "id"),
	}
}

// Hooks make the log append-only at the storage layer: any update or delete fails.
func (AuditEvent) Hooks() []ent.Hook {
	return []ent.Hook{
		func(next ent.Mutator) ent.Mutator {
			return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
				if !m.Op().Is(ent.OpCreate) {
					return nil, fmt.Errorf("audit events are append-only: %s refused", m.Op())
				}
				return next.Mutate(ctx, m)
			})
		},
	}
}
