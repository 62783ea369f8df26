package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// DatasetVersion is one version of an asset, keyed on the asset ID so it outlives a rename: for
// an Iceberg table a snapshot (version is the snapshot ID in decimal), for any other dataset the
// OpenLineage datasetVersion string. An expired snapshot keeps its row, marked expired.
type DatasetVersion struct{ ent.Schema }

func (DatasetVersion) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (DatasetVersion) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("version").Immutable(),
		field.Int64("snapshot_id").Optional().Nillable().Immutable(),
		field.String("parent_version").Default(""),
		field.Int64("sequence_number").Optional().Nillable(),
		field.String("operation").Default(""),
		field.Text("summary").Default(""), // JSON object: the snapshot summary's counts
		field.String("principal").Default(""),
		// The version's own time (the snapshot's timestamp-ms, the commit's time); nil when only
		// a run stated it and nothing dated it.
		field.Time("committed_at").Optional().Nillable(),
		field.String("source"), // commit, sync, inspection, openlineage: the first that named it
		// The table itself has it (a commit, a sync or an inspection saw it). False when only a
		// run stated it: for a table Tidemark reads, that is a version the table never had.
		field.Bool("seen_in_table").Default(false),
		field.UUID("commit_id", uuid.UUID{}).Optional().Nillable(),
		field.String("run_id").Default(""), // the run a commit's summary names
		field.Time("first_seen").Immutable(),
		field.Time("expired_at").Optional().Nillable(),
		field.String("expired_by").Default(""),
	}
}

func (DatasetVersion) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "version").Unique(),
		index.Fields("asset_id", "committed_at"),
	}
}

// RunVersion pins one input or output of a run to a version, with how Tidemark knows it
// (kind, shown as its label: stated, reported, inferred, unknown). version is "" when unknown.
type RunVersion struct{ ent.Schema }

func (RunVersion) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (RunVersion) Fields() []ent.Field {
	return []ent.Field{
		field.String("run_id").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Enum("role").Values("input", "output").Immutable(),
		field.String("version").Default(""),
		field.Enum("kind").Values("stated", "reported", "inferred", "unknown"),
		field.String("basis").Default(""), // what named it: the facet, the report, the commit, the rule
		// A stated version the table never had (a typo, another table's snapshot): kept as
		// stated, never re-bound, and shown as flagged.
		field.Bool("flagged").Default(false),
		field.String("conflict").Default(""), // a second source that named another version
		field.Time("at"),                     // the run's start (input) or end (output)
		field.Time("updated_at"),
	}
}

func (RunVersion) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("run_id", "asset_id", "role").Unique(),
		index.Fields("asset_id", "version", "role"),
		index.Fields("asset_id", "at"),
	}
}

// VersionCursor is how far the version resolver has read a stream (the last ID it handled).
type VersionCursor struct{ ent.Schema }

func (VersionCursor) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // the stream, e.g. "lineage_events"
		field.UUID("after", uuid.UUID{}),
		field.Time("updated_at"),
	}
}
