package schema

import (
	"encoding/json"

	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// LineageEvent is a raw OpenLineage event as received, kept for replay and audit. event_key is
// the idempotency key (run ID + event type + event time + job for run events), so a redelivered
// event is recognised and changes nothing.
type LineageEvent struct{ ent.Schema }

func (LineageEvent) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (LineageEvent) Fields() []ent.Field {
	return []ent.Field{
		field.String("event_key").Unique().Immutable(),
		field.Enum("kind").Values("run", "dataset", "job").Immutable(),
		field.String("event_type").Default("").Immutable(),
		field.Time("event_time").Immutable(),
		field.String("run_id").Default("").Immutable(),
		field.UUID("job_asset_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.String("producer").Default("").Immutable(),
		// The principal that posted it (the API token's name), so a commit or scan report by the
		// same principal can be joined to the run.
		field.String("principal").Default("").Immutable(),
		field.Text("payload").Immutable(),
		field.Time("received_at").Immutable(),
	}
}

func (LineageEvent) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("run_id"),
		index.Fields("job_asset_id", "event_time"),
	}
}

// Run is one run of a job, merged across all of its events.
type Run struct{ ent.Schema }

func (Run) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // the producer's runId
		field.UUID("job_asset_id", uuid.UUID{}),
		field.Enum("state").Values("START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER"),
		field.Time("state_time"), // event time of the event that set state
		field.Time("started_at").Optional().Nillable(),
		field.Time("ended_at").Optional().Nillable(),
		field.Time("nominal_start").Optional().Nillable(),
		field.Time("nominal_end").Optional().Nillable(),
		field.String("parent_run_id").Default(""),
		field.JSON("facets", map[string]json.RawMessage{}).Optional(),
		field.Int("event_count").Default(0),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

func (Run) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("job_asset_id", "created_at"),
		index.Fields("parent_run_id"),
	}
}

// RunIO records that a run read (input) or wrote (output) an asset.
type RunIO struct{ ent.Schema }

func (RunIO) Fields() []ent.Field {
	return []ent.Field{
		field.String("run_id").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Enum("role").Values("input", "output").Immutable(),
		field.Time("first_seen").Immutable(),
	}
}

func (RunIO) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("run_id", "asset_id", "role").Unique(),
		index.Fields("asset_id", "first_seen"),
	}
}

// LineageEdge is a directed edge between two assets: dataset -> job (the job reads it) or
// job -> dataset (the job writes it). Its ID doubles as the change sequence other replicas tail
// to keep their in-memory graphs current.
type LineageEdge struct{ ent.Schema }

func (LineageEdge) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("from_id", uuid.UUID{}).Immutable(),
		field.UUID("to_id", uuid.UUID{}).Immutable(),
		field.Time("first_seen"),
		field.Time("last_seen"),
		field.String("last_run_id").Default(""),
	}
}

func (LineageEdge) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("from_id", "to_id").Unique(),
		index.Fields("to_id"),
	}
}

// ColumnEdge is column lineage: output field <- input field, with how it was derived.
type ColumnEdge struct{ ent.Schema }

func (ColumnEdge) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("out_asset_id", uuid.UUID{}).Immutable(),
		field.String("out_field").Immutable(),
		field.UUID("in_asset_id", uuid.UUID{}).Immutable(),
		field.String("in_field").Immutable(),
		field.String("transformation_type").Default("").Immutable(),
		field.String("transformation_subtype").Default("").Immutable(),
		field.String("description").Default(""),
		field.Bool("masking").Default(false),
		field.Time("first_seen"),
		field.Time("last_seen"),
		field.String("last_run_id").Default(""),
	}
}

func (ColumnEdge) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("out_asset_id", "out_field", "in_asset_id", "in_field", "transformation_type", "transformation_subtype").Unique(),
		index.Fields("in_asset_id", "in_field"),
	}
}

// AssetFacet is the latest value of one OpenLineage facet (schema, documentation, or any other,
// known or not) reported for an asset.
type AssetFacet struct{ ent.Schema }

func (AssetFacet) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("name").Immutable(),
		field.Text("value"),
		field.Time("event_time"), // a late event never overwrites a newer value
		field.Time("updated_at"),
	}
}

func (AssetFacet) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "name").Unique(),
		index.Fields("updated_at"), // the lineage graph tails which assets gained a schema or documentation
	}
}

// LineageState is what lineage knows of a dataset's lifetime, in event time: the newest event
// that used it and the newest DROP of it. Whether it is deleted follows from the two (a DROP
// newer than any use), whatever order the events arrived in; a write after a DROP revives it, as
// in Marquez.
type LineageState struct{ ent.Schema }

func (LineageState) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", uuid.UUID{}).Immutable(), // the asset ID
		field.Time("last_activity").Optional().Nillable(),
		field.Time("dropped_at").Optional().Nillable(),
	}
}
