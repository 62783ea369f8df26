package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// Owner is one ownership interval of a principal on an asset; removed_at closes it so past
// owners stay on record.
type Owner struct{ ent.Schema }

func (Owner) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("principal").Immutable(),
		field.Enum("kind").Values("user", "group"),
		field.String("role"),
		field.Time("added_at").Immutable(),
		field.Time("removed_at").Optional().Nillable(),
	}
}

func (Owner) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("asset", Asset.Type).Ref("owners").Field("asset_id").Unique().Required().Immutable(),
	}
}

func (Owner) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "principal").Unique().
			Annotations(entsql.IndexWhere("removed_at IS NULL")).StorageKey("owner_current"),
		index.Fields("principal"),
	}
}
