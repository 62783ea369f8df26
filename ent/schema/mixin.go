package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/mixin"
	"github.com/google/uuid"
)

// UUIDv7 gives an entity an immutable, time-ordered UUIDv7 primary key, so IDs sort by creation
// and a cursor over IDs is a stable order.
type UUIDv7 struct{ mixin.Schema }

func (UUIDv7) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", uuid.UUID{}).Default(newV7).Immutable(),
	}
}

func newV7() uuid.UUID { return uuid.Must(uuid.NewV7()) }
