package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// IcebergTable is what Tidemark last learned of an Apache Iceberg table bound to an asset (the
// row's ID is the asset ID): where it comes from, its metadata location, and the inspection and
// health computed from that metadata. The snapshot detail and health are JSON documents owned by
// the tables package; files are not stored here but in the manifest cache.
type IcebergTable struct{ ent.Schema }

func (IcebergTable) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", uuid.UUID{}).Immutable(), // the asset ID
		// connection is the configured Iceberg catalog it was synced from; "" when registered by
		// metadata location.
		field.String("connection").Default(""),
		field.String("identifier").Default(""), // dotted namespace.table in that catalog
		field.String("table_uuid").Unique(),
		field.String("location"),
		field.String("metadata_location"),
		field.Int("format_version").Default(0),
		field.Int64("current_snapshot_id").Optional().Nillable(),
		field.Time("last_updated_at").Optional().Nillable(), // the table's last-updated-ms
		field.Time("refreshed_at").Optional().Nillable(),    // last successful inspection
		field.Text("inspection").Default(""),                // JSON: snapshots, metadata and statistics files
		field.Text("health").Default(""),                    // JSON: health figures and recommendations
		field.Text("error").Default(""),                     // last load or inspection error, "" when the last attempt worked
		field.Time("error_at").Optional().Nillable(),
		field.Time("gone_at").Optional().Nillable(), // when a sync found it gone from its catalog
		// missing_at is when a complete listing of its catalog first lacked it; it is marked
		// gone only when a second complete listing, at least the confirmation gap later, lacks it too.
		field.Time("missing_at").Optional().Nillable(),
		// listed_at is when a catalog listing last showed the table under its identifier: a
		// rename found by the next sync happened after it.
		field.Time("listed_at").Optional().Nillable(),
		// columns_schema_id is the Iceberg schema ID whose columns were last recorded in the
		// catalog: a refresh records them again only when the table's current schema changed.
		field.Int("columns_schema_id").Optional().Nillable(),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

// Annotations keep the table name apart from iceberg-go's SQL catalog, which owns a table
// called iceberg_tables and may share the database.
func (IcebergTable) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "tidemark_iceberg_tables"}}
}

func (IcebergTable) Indexes() []ent.Index {
	return []ent.Index{index.Fields("connection", "identifier")}
}

// IcebergManifestList caches what was read from one manifest list. Manifest lists are immutable
// (a commit writes a new one), so the path is the key forever.
type IcebergManifestList struct{ ent.Schema }

func (IcebergManifestList) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (IcebergManifestList) Fields() []ent.Field {
	return []ent.Field{
		field.String("path").Unique().Immutable(),
		field.Bytes("manifests").Immutable(), // the manifest-list entries (tables/codec.go; gzip JSON in older rows)
		field.Time("read_at").Immutable(),
	}
}

// IcebergManifest caches what was read from one manifest file (immutable, keyed by path): its
// entries, compressed, and totals so snapshot summaries need no decoding.
type IcebergManifest struct{ ent.Schema }

func (IcebergManifest) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (IcebergManifest) Fields() []ent.Field {
	return []ent.Field{
		field.String("path").Unique().Immutable(),
		field.Int("entry_count").Immutable(),
		field.Bytes("entries").Immutable(), // the entries (tables/codec.go; gzip JSON in older rows)
		field.Time("read_at").Immutable(),
	}
}

// TableSync is one run of the Iceberg catalog sync with its reconciliation report.
type TableSync struct{ ent.Schema }

func (TableSync) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (TableSync) Fields() []ent.Field {
	return []ent.Field{
		field.Time("started_at").Immutable(),
		field.Time("finished_at"),
		field.Text("report"), // JSON report owned by the tables package
	}
}
