package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
)

// Asset is the identity of a data asset. Its ID never changes; names, owners and external IDs
// hang off it. Assets are never hard-deleted: status "deleted" keeps their history resolvable.
type Asset struct{ ent.Schema }

func (Asset) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Asset) Fields() []ent.Field {
	return []ent.Field{
		field.Enum("kind").Values("table", "view", "job", "topic", "file_set", "dashboard", "other").Immutable(),
		field.Enum("status").Values("active", "deprecated", "deleted").Default("active"),
		// version is bumped by every mutation of the asset or anything hanging off it; it is the
		// ETag and the If-Match precondition.
		field.Int64("version").Default(1),
		field.String("description").Default(""),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
		field.Time("deleted_at").Optional().Nillable(),
	}
}

func (Asset) Edges() []ent.Edge {
	return []ent.Edge{
		edge.To("names", AssetName.Type),
		edge.To("external_ids", ExternalID.Type),
		edge.To("owners", Owner.Type),
	}
}

func (Asset) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("kind"),
		index.Fields("status"),
	}
}
