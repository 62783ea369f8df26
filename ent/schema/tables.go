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
		// warehouse is the Tidemark warehouse that serves the table over the Iceberg REST
		// protocol ("" for tables synced from other catalogs or registered through the API):
		// its metadata_location is then the catalog's pointer, swapped only by a commit.
		field.String("warehouse").Default(""),
		// rest_namespace is the served table's namespace key (warehouse and levels joined by
		// U+001F) and rest_key its identifier key (the namespace key, U+001F, the name): unique
		// among live served tables, cleared when the table is dropped so the name can be reused.
		field.String("rest_namespace").Optional().Nillable(),
		field.String("rest_key").Optional().Nillable().Unique(),
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
	return []ent.Index{index.Fields("connection", "identifier"), index.Fields("rest_namespace")}
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

// IcebergNamespace is a namespace of a warehouse Tidemark serves over the Iceberg REST protocol.
type IcebergNamespace struct{ ent.Schema }

func (IcebergNamespace) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (IcebergNamespace) Fields() []ent.Field {
	return []ent.Field{
		field.String("warehouse").Immutable(),
		// key is the warehouse and the levels joined by U+001F (a character names may not hold).
		field.String("key").Unique().Immutable(),
		field.Text("levels").Immutable(), // JSON array of the levels
		field.Int("depth").Immutable(),
		field.Text("properties").Default("{}"), // JSON object
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

func (IcebergNamespace) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "tidemark_iceberg_namespaces"}}
}

func (IcebergNamespace) Indexes() []ent.Index {
	return []ent.Index{index.Fields("warehouse", "depth")}
}

// IcebergCommit is one change of a served table's metadata pointer, or an attempt at one: a
// create, commit, register, rename or drop, with its outcome. A commit is recorded as pending
// before its metadata file is written, so a crash between the write and the swap leaves a
// record of the file it staged.
type IcebergCommit struct{ ent.Schema }

func (IcebergCommit) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (IcebergCommit) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("warehouse").Immutable(),
		field.String("kind").Immutable(), // create, commit, register, rename, drop, unregister
		// state: pending (staged, not swapped yet), committed, conflict (a requirement failed:
		// 409), abandoned (staged, and the swap is known not to have happened).
		field.String("state"),
		field.String("base_location").Default(""), // the pointer the commit expected
		field.String("new_location").Default(""),  // the metadata file it wrote
		field.Int64("snapshot_id").Optional().Nillable(),
		field.Text("reason").Default(""),
		field.String("idempotency_key").Default(""),
		field.UUID("transaction_id", uuid.UUID{}).Optional().Nillable(),
		field.String("actor").Default(""),
		field.Int64("added_files").Default(0),
		field.Int64("removed_files").Default(0),
		field.Int64("added_bytes").Default(0),
		field.Time("started_at").Immutable(),
		field.Time("finished_at").Optional().Nillable(),
	}
}

func (IcebergCommit) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "tidemark_iceberg_commits"}}
}

func (IcebergCommit) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "started_at"),
		index.Fields("state", "started_at"),
		index.Fields("warehouse", "idempotency_key"),
	}
}

// IcebergInventoryFile is one file a commit of a served table added or removed (read from the
// commit's new manifests only), staged and abandoned, or written through a remote signature
// and not (yet) committed: the write-path inventory.
type IcebergInventoryFile struct{ ent.Schema }

func (IcebergInventoryFile) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (IcebergInventoryFile) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.UUID("commit_id", uuid.UUID{}).Immutable(),
		field.Int64("snapshot_id").Default(0).Immutable(), // 0 for the metadata file itself
		field.Text("path").Immutable(),
		field.String("kind").Immutable(),   // metadata, manifest_list, manifest, data, delete
		field.String("change").Immutable(), // added, removed, staged, signed
		field.Int64("size").Default(0).Immutable(),
		field.Int64("records").Default(0).Immutable(),
		field.Time("recorded_at").Immutable(),
		// Actor is who wrote a signed file: the principal a remote signature was issued to
		// (empty for a commit's rows, whose commit names its principal).
		field.String("actor").Default("").Immutable(),
	}
}

func (IcebergInventoryFile) Annotations() []schema.Annotation {
	return []schema.Annotation{entsql.Annotation{Table: "tidemark_iceberg_inventory"}}
}

func (IcebergInventoryFile) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "snapshot_id"),
		index.Fields("commit_id"),
		// The cleanup bot settles a listed or staged path by it.
		index.Fields("asset_id", "path"),
		// An inventory pass reads a table's staged rows only, not its whole inventory.
		index.Fields("asset_id", "change"),
	}
}
