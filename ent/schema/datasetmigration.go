package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// DatasetMigration is the move of a dataset from an old asset to a new one (by ID), and the rules its
// reconciliation runs and cutover follow. The sources and the rules are JSON documents owned by
// the reconcile package.
type DatasetMigration struct{ ent.Schema }

func (DatasetMigration) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (DatasetMigration) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("old_asset_id", uuid.UUID{}).Immutable(),
		field.UUID("new_asset_id", uuid.UUID{}).Immutable(),
		field.String("owner"),
		// spec: key and time columns, window, compared columns, dedup rules, lag bound, cutover
		// rule, sample size, and how each side is read.
		field.Text("spec"),
		field.Enum("state").Values("active", "cut_over", "retired").Default("active"),
		field.Time("cut_over_at").Optional().Nillable(),
		// archive: where the old side's data was kept at the cutover (a JSON source spec owned
		// by the reconcile package); the final reconciliation reads it instead of the old side.
		field.Text("archive").Default(""),
		field.Int("version").Default(1),
		// run_claimed_until: a replica running the scheduled reconciliation holds the migration
		// until then, so replicas never run the same migration's reconciliation at once.
		field.Time("run_claimed_until").Optional().Nillable(),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
	}
}

func (DatasetMigration) Indexes() []ent.Index {
	return []ent.Index{
		index.Fields("old_asset_id"),
		index.Fields("new_asset_id"),
	}
}

// ReconciliationRun is one comparison of a migration's two sides, clean or not, with the
// figures per window and the cause of every break. Runs are kept: the streak is read from them.
type ReconciliationRun struct{ ent.Schema }

func (ReconciliationRun) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (ReconciliationRun) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("migration_id", uuid.UUID{}).Immutable(),
		field.Time("started_at").Immutable(),
		field.Time("finished_at").Optional().Nillable(),
		// origin: tidemark read both sides; external: a checker posted the figures.
		field.Enum("origin").Values("tidemark", "external").Immutable(),
		// against: the old side as it lives, or the archive named at the cutover (the final
		// reconciliation that gates retirement).
		field.Enum("against").Values("live", "archive").Default("live").Immutable(),
		field.Bool("clean").Default(false),
		// result: windows, causes and cost as one JSON document, as runs before window rows
		// were kept it (read for those only; new runs leave it empty).
		field.Text("result").Default(""),
		// summary: the run's bounded summary (window and class counts, the first causes, cost)
		// as JSON; its windows are ReconciliationWindow rows, read a page at a time.
		field.Text("summary").Default(""),
		field.Text("error").Default(""),
	}
}

func (ReconciliationRun) Indexes() []ent.Index {
	return []ent.Index{index.Fields("migration_id", "started_at")}
}

// ReconciliationWindow is one window of a run: its figures, classes and sample, as JSON owned
// by the reconcile package. One row a window, so a run's detail is read a page at a time.
type ReconciliationWindow struct{ ent.Schema }

func (ReconciliationWindow) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (ReconciliationWindow) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("run_id", uuid.UUID{}).Immutable(),
		field.Time("start").Immutable(),
		field.Bool("clean").Immutable(),   // no class but lag
		field.Bool("differs").Immutable(), // any class at all, lag included
		field.Text("body").Immutable(),    // the window's figures, classes and sample
	}
}

func (ReconciliationWindow) Indexes() []ent.Index {
	return []ent.Index{index.Fields("run_id", "start").Unique(), index.Fields("run_id", "differs", "start")}
}

// MigrationEvent is something that happened to a migration's sides that its cutover streak must
// span: a deploy of the new side's writer, recorded through the API.
type MigrationEvent struct{ ent.Schema }

func (MigrationEvent) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (MigrationEvent) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("migration_id", uuid.UUID{}).Immutable(),
		// deploy counts for the streak; writer_seen is the first version of a writer job that
		// OpenLineage events named (a baseline, not a deploy).
		field.Enum("kind").Values("deploy", "writer_seen").Immutable(),
		field.Time("at").Immutable(),                        // when it happened
		field.String("note").Default("").Immutable(),        // from OpenLineage: the writer's version
		field.String("recorded_by").Default("").Immutable(), // the token, or openlineage:<job ID>
		field.Time("created_at").Immutable(),
	}
}

func (MigrationEvent) Indexes() []ent.Index {
	return []ent.Index{index.Fields("migration_id", "at")}
}

// ReconciliationFinding is a defect a run found in one window: duplication, divergence or moved
// records. It
// stays open, with its owner, until a run shows it gone.
type ReconciliationFinding struct{ ent.Schema }

func (ReconciliationFinding) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (ReconciliationFinding) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("migration_id", uuid.UUID{}).Immutable(),
		field.Enum("kind").Values("duplication", "divergence", "moved").Immutable(),
		field.Enum("side").Values("old", "new", "both").Immutable(),
		field.Time("window_start").Immutable(),
		field.String("owner"),
		field.Text("detail"),
		field.UUID("opened_run_id", uuid.UUID{}).Immutable(),
		field.Time("opened_at").Immutable(),
		field.UUID("closed_run_id", uuid.UUID{}).Optional().Nillable(),
		field.Time("closed_at").Optional().Nillable(),
	}
}

func (ReconciliationFinding) Indexes() []ent.Index {
	return []ent.Index{index.Fields("migration_id", "closed_at")}
}
