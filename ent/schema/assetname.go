package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema/edge"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// AssetName is one interval of an asset's name history. valid_to is NULL while the name is
// current. Rows are only ever appended and closed, never rewritten.
type AssetName struct{ ent.Schema }

func (AssetName) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		// space separates the names of jobs from those of datasets (tables, views, topics...):
		// OpenLineage lets a job and a dataset share a namespace and name, and they are
		// different assets.
		field.Enum("space").Values("dataset", "job").Default("dataset").Immutable(),
		field.String("namespace").Immutable(),
		field.String("name").Immutable(),
		field.Time("valid_from").Immutable(),
		field.Time("valid_to").Optional().Nillable(),
		// uncertain_from is set when the name is known to have begun somewhere in
		// [uncertain_from, valid_from), not exactly at valid_from: a rename an engine made between
		// two catalog syncs. Usage under the name in that interval resolves to this asset.
		field.Time("uncertain_from").Optional().Nillable().Immutable(),
	}
}

func (AssetName) Edges() []ent.Edge {
	return []ent.Edge{
		edge.From("asset", Asset.Type).Ref("names").Field("asset_id").Unique().Required().Immutable(),
	}
}

func (AssetName) Indexes() []ent.Index {
	return []ent.Index{
		// The database, not the application, guarantees one current holder per name and one
		// current name per asset: two racing renames cannot both win.
		index.Fields("space", "namespace", "name").Unique().
			Annotations(entsql.IndexWhere("valid_to IS NULL")).StorageKey("assetname_current_name"),
		index.Fields("asset_id").Unique().
			Annotations(entsql.IndexWhere("valid_to IS NULL")).StorageKey("assetname_current_of_asset"),
		index.Fields("space", "namespace", "name", "valid_from"),
		index.Fields("name"),
		// Every name an asset had (usage resolution over time, the change hook): without it each
		// lookup by asset scanned the whole history.
		index.Fields("asset_id"),
	}
}
