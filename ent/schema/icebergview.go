package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// IcebergView is an Apache Iceberg view Tidemark serves over the Iceberg REST protocol (the
// row's ID is the view's asset ID): its metadata pointer, swapped only by compare-and-swap, and
// where its metadata files are written.
type IcebergView struct{ ent.Schema }

func (IcebergView) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", uuid.UUID{}).Immutable(), // the asset ID
		field.String("warehouse").Immutable(),
		field.String("view_uuid").Unique().Immutable(),
		field.String("identifier").Default(""), // dotted namespace.view
		// rest_namespace and rest_key are the view's namespace key and identifier key (as a
		// served table's): unique among live views, cleared when the view is dropped.
		field.String("rest_namespace").Optional().Nillable(),
		field.String("rest_key").Optional().Nillable().Unique(),
		field.String("location"),
		// metadata_dir is where the view's metadata files are written: <location>/metadata,
		// unless that overlaps a live table's location (see warehouse/views.go).
		field.String("metadata_dir"),
		field.String("metadata_location"),
		field.Int64("current_version_id").Default(0),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
		field.Time("gone_at").Optional().Nillable(),
	}
}

// Annotations keep the table name apart from other catalogs' tables in a shared database.
func (IcebergView) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "tidemark_iceberg_views"}}
}

func (IcebergView) Indexes() []ent.Index {
	return []ent.Index{index.Fields("rest_namespace"), index.Fields("warehouse", "metadata_dir")}
}
