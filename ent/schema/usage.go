package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// UsageEvent is one read or write of an asset, from a query log or a completed OpenLineage run.
// event_key is the idempotency key (source + query ID + asset, or an explicit key), so a retried
// batch counts once. Raw events are kept for a retention period; rollups forever.
type UsageEvent struct{ ent.Schema }

func (UsageEvent) Fields() []ent.Field {
	return []ent.Field{
		field.String("event_key").Unique().Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Enum("kind").Values("read", "write").Immutable(),
		field.String("actor").Default("").Immutable(),
		field.UUID("job_asset_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.String("source").Default("").Immutable(),
		field.String("query_id").Default("").Immutable(),
		// The name the reader used (namespace, name): usage under former names stays visible.
		field.String("namespace").Default("").Immutable(),
		field.String("name").Default("").Immutable(),
		field.Time("at").Immutable(),
		field.String("day").Immutable(), // UTC date of at, YYYY-MM-DD: the rollup bucket
		field.Time("received_at").Immutable(),
		// How the name resolved when the record named one: "" exactly (the asset held the name
		// then), "before_first_seen" (its first holder, before Tidemark knew it),
		// "rename_window" (renamed by an engine between two syncs).
		field.String("resolution").Default("").Immutable(),
		// late is set when the record waited unresolved and was attributed after the fact.
		field.Bool("late").Default(false).Immutable(),
		// The version read or written when the source says so (a scan report's snapshot-id, an
		// OpenLineage input's stated version); "" when it does not.
		field.String("version").Default("").Immutable(),
	}
}

func (UsageEvent) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "day"),
		index.Fields("at"),
	}
}

// UsageDaily is the rollup of one asset's usage on one UTC day. Each batch adds only the raw
// events it inserted (duplicates are skipped by event_key), and its distinct actors and jobs are
// those whose UsageActorDaily / UsageJobDaily rows it inserted first (SQLite, one writer at a
// time, recounts the actors), so late, duplicate and concurrent events keep it exact.
type UsageDaily struct{ ent.Schema }

func (UsageDaily) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}),
		field.String("day"),
		field.Int64("reads").Default(0),
		field.Int64("writes").Default(0),
		field.Int("distinct_actors").Default(0),
		field.Int("distinct_jobs").Default(0),
		// late_records counts the day's records attributed after the fact (they waited
		// unresolved until a name appeared or changed).
		field.Int64("late_records").Default(0),
		field.Time("last_read_at").Optional().Nillable(),
		field.Time("last_write_at").Optional().Nillable(),
		field.Time("updated_at"),
	}
}

func (UsageDaily) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "day").Unique(),
		index.Fields("day"),
	}
}

// UsageActorDaily counts one actor's reads and writes of an asset on one day: distinct actors
// over any range, and top actors, come from here rather than from raw events.
type UsageActorDaily struct{ ent.Schema }

func (UsageActorDaily) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}),
		field.String("day"),
		field.String("actor"),
		field.Int64("reads").Default(0),
		field.Int64("writes").Default(0),
	}
}

func (UsageActorDaily) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "day", "actor").Unique(),
	}
}

// UsageName records a name an asset's usage was reported under, and when.
type UsageName struct{ ent.Schema }

func (UsageName) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}),
		field.String("namespace"),
		field.String("name"),
		field.Time("first_at"),
		field.Time("last_at"),
	}
}

func (UsageName) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "namespace", "name").Unique(),
	}
}

// UsageActorMonthly is UsageActorDaily summed by calendar month (YYYY-MM), so distinct and top
// actors over long ranges read a few thousand rows instead of every actor-day.
type UsageActorMonthly struct{ ent.Schema }

func (UsageActorMonthly) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}),
		field.String("month"),
		field.String("actor"),
		field.Int64("reads").Default(0),
		field.Int64("writes").Default(0),
	}
}

func (UsageActorMonthly) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("asset_id", "month", "actor").Unique(),
	}
}

// UsagePending is a usage record whose name no asset held at its time, kept (until the usage
// retention) and resolved again whenever names appear or change. pending_key is the record's
// idempotency key without an asset, so a retried batch is kept once.
type UsagePending struct{ ent.Schema }

func (UsagePending) Fields() []ent.Field {
	return []ent.Field{
		field.String("pending_key").Unique().Immutable(),
		field.String("namespace").Immutable(),
		field.String("name").Immutable(),
		field.Enum("kind").Values("read", "write").Immutable(),
		field.String("actor").Default("").Immutable(),
		field.String("source").Default("").Immutable(),
		field.String("query_id").Default("").Immutable(),
		field.String("idempotency_key").Default("").Immutable(),
		field.Time("at").Immutable(),
		field.Time("received_at").Immutable(),
	}
}

func (UsagePending) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("name", "namespace"),
		index.Fields("at"),
	}
}

// UsageJobDaily records that a job read or wrote an asset on a UTC day. The day rollup's
// distinct_jobs counts a job when its row first goes in (INSERT ... ON CONFLICT DO NOTHING
// RETURNING), so concurrent batches count each job once without recounting the day's raw events
// or locking each other out. Rows are purged with the raw events: an older day cannot receive
// records any more.
type UsageJobDaily struct{ ent.Schema }

func (UsageJobDaily) Fields() []ent.Field {
	return []ent.Field{
		field.String("day").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.UUID("job_asset_id", uuid.UUID{}).Immutable(),
	}
}

func (UsageJobDaily) Indexes() []ent.Index {
	return []ent.Index{
		// day first: the retention purge deletes whole days through this index.
		index.Fields("day", "asset_id", "job_asset_id").Unique(),
	}
}
