package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// Column is one column of an asset as a record of its own, so its docs and labels survive a
// rename of the column (matched by Iceberg field ID where the source has one) and of the asset.
// removed_at closes a column the source no longer reports; the row stays for history.
type Column struct{ ent.Schema }

func (Column) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Column) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Int("field_id").Optional().Nillable(), // Iceberg field ID; nil when the source has none
		field.String("path"),                        // current name; nested fields joined with "."
		field.String("type").Default(""),
		field.Int("ordinal").Default(0),
		field.Text("source_doc").Default(""),  // the source's description (schema facet, Iceberg doc)
		field.Text("description").Default(""), // a person's, edited in Tidemark
		field.Time("added_at").Immutable(),
		field.Time("removed_at").Optional().Nillable(),
	}
}

func (Column) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "path").Unique().
			Annotations(entsql.IndexWhere("removed_at IS NULL")).StorageKey("column_current_path"),
		index.Fields("asset_id", "field_id"),
	}
}

// SchemaChange is one change of an asset's columns as a source reported it: what was added,
// removed, renamed or retyped, in one row per observed schema.
type SchemaChange struct{ ent.Schema }

func (SchemaChange) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (SchemaChange) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Time("at").Immutable(),
		field.String("source").Immutable(), // openlineage, iceberg, person
		field.Int("schema_id").Optional().Nillable().Immutable(),
		field.Text("changes").Immutable(), // JSON list of column changes
	}
}

func (SchemaChange) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "id")}
}

// Label is one interval of a tag or a glossary term on an asset or one of its columns
// (column_id is uuid.Nil for the asset itself); removed_at closes it, so history stays.
type Label struct{ ent.Schema }

func (Label) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Label) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.UUID("column_id", uuid.UUID{}).Immutable(),
		field.Enum("kind").Values("tag", "term").Immutable(),
		field.String("value").Immutable(), // the tag ("pii.email") or the term's ID
		field.Enum("source").Values("person", "openlineage", "iceberg", "propagation").Immutable(),
		// Where an accepted propagation came from.
		field.UUID("from_asset_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.UUID("from_column_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.Time("added_at").Immutable(),
		field.String("added_by").Immutable(),
		field.Time("removed_at").Optional().Nillable(),
		field.String("removed_by").Default(""),
	}
}

func (Label) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "column_id", "kind", "value").Unique().
			Annotations(entsql.IndexWhere("removed_at IS NULL")).StorageKey("label_current"),
		index.Fields("kind", "value"),
	}
}

// Classification is a controlled tag family: tags "<name>.<value>" are accepted only for its
// listed values, and propagate says whether column lineage suggests them downstream.
type Classification struct{ ent.Schema }

func (Classification) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // the family, e.g. "pii"
		field.Text("description").Default(""),
		field.Strings("values"),
		field.Bool("propagate").Default(true),
		field.Int64("version").Default(1),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

// GlossaryTerm is a business term: its definition, owners and related terms.
type GlossaryTerm struct{ ent.Schema }

func (GlossaryTerm) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (GlossaryTerm) Fields() []ent.Field {
	return []ent.Field{
		field.String("name"),
		field.String("name_key").Unique(), // lower-cased name: one term per name
		field.Text("definition").Default(""),
		field.Strings("owners").Optional(),
		field.Strings("related").Optional(), // IDs of related terms
		field.Int64("version").Default(1),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

// SuggestionDecision records a person's rejection of a suggested propagation, so the bot does
// not suggest it again. (An accepted one is a Label with source "propagation".)
type SuggestionDecision struct{ ent.Schema }

func (SuggestionDecision) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (SuggestionDecision) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("column_path").Immutable(),
		field.String("tag").Immutable(),
		field.UUID("from_column_id", uuid.UUID{}).Immutable(),
		field.String("decided_by").Immutable(),
		field.Time("decided_at").Immutable(),
	}
}

func (SuggestionDecision) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "column_path", "tag", "from_column_id").Unique()}
}

// SearchDoc is an asset as search sees it: normalised tokens per weighted field, kept in the
// transaction of every change to the asset; its integer ID is the FTS5 rowid. The full-text index over it (FTS5 on SQLite, a
// tsvector on PostgreSQL) is created by storage.Migrate, since ent cannot describe it.
type SearchDoc struct{ ent.Schema }

func (SearchDoc) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Unique().Immutable(),
		field.String("kind"),
		field.String("status"),
		field.String("namespace"),
		field.String("name"),
		field.String("name_key"),     // the current name's tokens, for exact-match ranking
		field.Text("t_name"),         // tokens of the current name and namespace
		field.Text("t_former"),       // tokens of former names
		field.Text("t_labels"),       // tags, glossary terms, owners
		field.Text("t_body"),         // description, column names and docs
		field.Int64("asset_version"), // the asset's version when its searchable values last changed
	}
}

func (SearchDoc) Indexes() []ent.Index {
	return []ent.Index{index.Fields("name_key")}
}

// SearchFacet is one facet value of a search doc (kind, namespace, tag, owner), for filters and
// counts.
type SearchFacet struct{ ent.Schema }

func (SearchFacet) Fields() []ent.Field {
	return []ent.Field{
		field.Int("doc_id"),
		field.String("facet"),
		field.String("value"),
	}
}

func (SearchFacet) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("doc_id", "facet", "value").Unique(),
		index.Fields("facet", "value", "doc_id"),
	}
}
