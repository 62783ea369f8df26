package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// CleanupScan is one reconciliation scan of one Iceberg table: the per-shard walk of its
// location for orphan files and the check of the current snapshot's files for dangling
// references. The report is a JSON document owned by the cleanup package.
type CleanupScan struct{ ent.Schema }

func (CleanupScan) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupScan) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Time("started_at").Immutable(),
		field.Time("finished_at").Optional().Nillable(),
		// abandoned: its worker stopped renewing its heartbeat (killed, or lost its lease).
		field.Enum("state").Values("running", "finished", "failed", "stopped", "abandoned"),
		field.Int64("age_threshold_seconds").Immutable(),
		field.Bool("threshold_override").Default(false).Immutable(),
		// confirm_only: a confirming pass (only shards with files to confirm); the cadence of
		// full walks counts from the last scan that was not one.
		field.Bool("confirm_only").Default(false).Immutable(),
		// from_inventory: an inventory pass of a served table, which settled the files its
		// write-path inventory knows without listing storage.
		field.Bool("from_inventory").Default(false).Immutable(),
		field.Text("report").Default(""),
		field.Text("error").Default(""),
		// heartbeat_at is renewed while the scan runs; a running scan whose heartbeat is older
		// than two lease periods was abandoned by its worker.
		field.Time("heartbeat_at").Optional().Nillable(),
	}
}

func (CleanupScan) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "started_at")}
}

// CleanupShardWalk is one walk of one shard (a prefix of a table location): when it started
// and ended, how it ended, what it saw and what it cost.
type CleanupShardWalk struct{ ent.Schema }

func (CleanupShardWalk) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupShardWalk) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("scan_id", uuid.UUID{}).Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("shard").Immutable(),
		field.Time("started_at").Immutable(),
		field.Time("finished_at").Optional().Nillable(),
		field.Enum("outcome").Values("running", "complete", "failed", "unreachable", "stopped", "leased"),
		field.Int64("entries").Default(0),
		field.Int64("duplicates").Default(0),
		field.Int64("list_requests").Default(0),
		field.Text("error").Default(""),
		// too_soon marks a complete walk that began less than the confirmation gap after the
		// shard's previous counted walk: it neither confirms nor breaks a chain.
		field.Bool("too_soon").Default(false),
	}
}

func (CleanupShardWalk) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "shard"), index.Fields("scan_id")}
}

// CleanupLease claims a shard of a table (or "*", the whole table) for one worker until it
// expires, so two replicas never walk one shard at once and a crashed worker's claim lapses.
type CleanupLease struct{ ent.Schema }

func (CleanupLease) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupLease) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("shard").Immutable(),
		field.String("holder"),
		field.Time("expires_at"),
		// token grows by one with every claim: a fencing token, so a holder that lost its lease
		// (paused past expiry, and the lease since claimed again) cannot renew it or write under it.
		field.Int64("token").Default(0),
	}
}

func (CleanupLease) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "shard").Unique()}
}

// CleanupObservation is a file a complete walk of its shard found unreferenced and older than
// the age threshold. Only such files are stored (not every listed file), so a location of
// millions of files keeps a handful of rows. streak counts consecutive complete walks of the
// shard that saw it; two confirm it.
type CleanupObservation struct{ ent.Schema }

func (CleanupObservation) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupObservation) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.String("shard").Immutable(),
		field.String("path").Immutable(), // normalized
		field.Int64("size"),
		field.Time("modified_at"),
		field.Time("first_seen_at").Immutable(),
		field.UUID("last_walk_id", uuid.UUID{}),
		field.Int("streak"),
		field.Time("confirmed_at").Optional().Nillable(),
	}
}

func (CleanupObservation) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "path").Unique(), index.Fields("asset_id", "shard")}
}

// CleanupRefCheck is one pass of the by-key check of every file a table's retained snapshots
// and refs reference (the dangling-reference check). It is checkpointed by unit (the metadata
// structure, then one unit per manifest), so a stopped pass resumes where it stopped. The report
// is a JSON document owned by the cleanup package.
type CleanupRefCheck struct{ ent.Schema }

func (CleanupRefCheck) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupRefCheck) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Time("started_at").Immutable(),
		field.Time("finished_at").Optional().Nillable(),
		// complete: every unit checked and the missing files checked again.
		field.Enum("state").Values("running", "complete", "stopped", "failed"),
		field.String("metadata_location").Default(""),
		// runs counts the times the pass was started: 1, plus one per resumption.
		field.Int("runs").Default(1),
		field.Time("heartbeat_at").Optional().Nillable(),
		field.Text("report").Default(""),
		field.Text("error").Default(""),
	}
}

func (CleanupRefCheck) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "started_at")}
}

// CleanupRefCheckUnit is one checked unit of a reference check: the files it checked by key
// and those that were missing on the first check.
type CleanupRefCheckUnit struct{ ent.Schema }

func (CleanupRefCheckUnit) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupRefCheckUnit) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("check_id", uuid.UUID{}).Immutable(),
		field.Text("unit").Immutable(),
		field.Int64("files").Default(0).Immutable(),
		field.Int64("unchecked").Default(0).Immutable(),
		// missing is a JSON array of the files missing on the first check.
		field.Text("missing").Default("").Immutable(),
		field.Time("checked_at").Immutable(),
	}
}

func (CleanupRefCheckUnit) Indexes() []ent.Index {
	return []ent.Index{index.Fields("check_id")}
}

// CleanupScanRequest is a person's request for a table's scan now (from the UI or the API). The
// request never runs the scan itself: the scheduler's scan loop picks pending requests up first
// on its next round, and closes each with the scan that answered it.
type CleanupScanRequest struct{ ent.Schema }

func (CleanupScanRequest) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (CleanupScanRequest) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		field.Time("requested_at").Immutable(),
		field.String("actor").Default("").Immutable(),
		// from_inventory asks for an inventory pass (served tables only) instead of a full walk.
		field.Bool("from_inventory").Default(false).Immutable(),
		// done_at is set when the scheduler closed the request: scan_id names the scan that
		// answered it, or note says why none did (the table was dropped, the scan could not start).
		field.Time("done_at").Optional().Nillable(),
		field.UUID("scan_id", uuid.UUID{}).Optional().Nillable(),
		field.Text("note").Default(""),
	}
}

func (CleanupScanRequest) Indexes() []ent.Index {
	return []ent.Index{index.Fields("asset_id", "requested_at"), index.Fields("done_at")}
}
