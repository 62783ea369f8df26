package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// ExternalID binds an identity from another system (an Iceberg table-uuid, an OpenLineage
// symlink) to an asset. A (system, value) pair belongs to exactly one asset, forever.
type ExternalID struct{ ent.Schema }

func (ExternalID) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("system").Immutable(),
		field.String("value").Immutable(),
		field.Time("created_at").Immutable(),
	}
}

func (ExternalID) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("asset", Asset.Type).Ref("external_ids").Field("asset_id").Unique().Required().Immutable(),
	}
}

func (ExternalID) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("system", "value").Unique(),
		index.Fields("asset_id"),
	}
}
