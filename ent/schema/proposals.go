package schema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
	"entgo.io/ent/schema/index"
	"github.com/google/uuid"
)

// Proposal is something the cleanup bot proposes and a person decides: delete confirmed orphan
// files, retire an unused asset, expire old snapshots, or (never executable) repair a dangling
// reference. evidence is a JSON document owned by the cleanup package.
type Proposal struct{ ent.Schema }

func (Proposal) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Proposal) Fields() []ent.Field {
	return []ent.Field{
		field.Enum("kind").Values("orphan_files", "unused_asset", "expire_snapshots", "dangling_reference", "shared_location", "purge").Immutable(),
		field.UUID("asset_id", uuid.UUID{}).Immutable(),
		// stopped: execution re-verified the world and found it no longer matched what was approved.
		// cancelled: a person took the approval back within the stop window, before execution.
		field.Enum("state").Values("open", "approved", "executing", "executed", "failed", "stopped", "rejected", "withdrawn", "expired", "cancelled"),
		field.Enum("severity").Values("normal", "high").Default("normal").Immutable(),
		field.Text("evidence").Immutable(),
		field.Text("reason").Default(""), // why it was rejected, withdrawn or expired, or how it failed
		field.String("decided_by").Default(""),
		field.Time("decided_at").Optional().Nillable(),
		field.Time("created_at").Immutable(),
		field.Time("updated_at"),
		field.Time("executed_at").Optional().Nillable(),
		field.Text("outcome").Default(""), // JSON: what the execution did
		// due_at is when the next execution step may run: the end of the stop window of an approved
		// proposal, then the grace period of an unused asset.
		field.Time("due_at").Optional().Nillable(),
		field.Int64("version").Default(1),
	}
}

func (Proposal) Indexes() []ent.Index {
	return []ent.Index{index.Fields("state", "kind"), index.Fields("asset_id", "kind", "state")}
}

// ProposalFile is one file an orphan-files proposal would delete, and the executor's journal
// entry for it: pending until deleted, found gone, or skipped with the reason.
type ProposalFile struct{ ent.Schema }

func (ProposalFile) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (ProposalFile) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("proposal_id", uuid.UUID{}).Immutable(),
		field.String("path").Immutable(),
		field.Int64("size").Immutable(),
		// modified_at is the file's modification time when it was journaled (what the confirming
		// scans observed, or the stat before an expiry or retirement planned it).
		field.Time("modified_at").Optional().Nillable().Immutable(),
		field.Enum("state").Values("pending", "deleted", "gone", "skipped").Default("pending"),
		field.Text("detail").Default(""),
		field.Time("done_at").Optional().Nillable(),
	}
}

func (ProposalFile) Indexes() []ent.Index {
	return []ent.Index{index.Fields("proposal_id", "state"), index.Fields("proposal_id", "path").Unique()}
}

// ProposalStep is the executor's journal of a multi-step execution (an unused asset: metadata
// first, then after the grace period its files), so a crash resumes where it stopped.
type ProposalStep struct{ ent.Schema }

func (ProposalStep) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (ProposalStep) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("proposal_id", uuid.UUID{}).Immutable(),
		field.String("step").Immutable(),
		field.Time("done_at").Immutable(),
		field.Text("detail").Default("").Immutable(), // JSON
	}
}

func (ProposalStep) Indexes() []ent.Index {
	return []ent.Index{index.Fields("proposal_id", "step").Unique()}
}

// OutboxMessage is a notification written in the same transaction as the change it announces
// and delivered later, at least once, by the dispatcher.
type OutboxMessage struct{ ent.Schema }

func (OutboxMessage) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (OutboxMessage) Fields() []ent.Field {
	return []ent.Field{
		field.String("event").Immutable(), // proposal.opened, proposal.withdrawn, finding.opened
		// What it announces: a cleanup proposal, or a migration's reconciliation finding.
		field.UUID("proposal_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.UUID("finding_id", uuid.UUID{}).Optional().Nillable().Immutable(),
		field.String("recipient").Immutable(), // the owner principal
		field.String("url").Immutable(),
		field.Text("payload").Immutable(),
		field.Enum("state").Values("pending", "delivered", "failed").Default("pending"),
		field.Int("attempts").Default(0),
		field.Time("next_attempt_at"),
		field.Text("last_error").Default(""),
		field.Time("created_at").Immutable(),
		field.Time("delivered_at").Optional().Nillable(),
	}
}

func (OutboxMessage) Indexes() []ent.Index {
	return []ent.Index{index.Fields("state", "next_attempt_at"), index.Fields("proposal_id"), index.Fields("finding_id")}
}

// Webhook is where an owner (a principal) wants cleanup notifications.
type Webhook struct{ ent.Schema }

func (Webhook) Mixin() []ent.Mixin { return []ent.Mixin{UUIDv7{}} }

func (Webhook) Fields() []ent.Field {
	return []ent.Field{
		field.String("principal").Unique(),
		field.String("url"),
		field.Time("updated_at"),
	}
}

// CleanupExemption keeps an asset out of the proposal kinds it lists.
type CleanupExemption struct{ ent.Schema }

func (CleanupExemption) Fields() []ent.Field {
	return []ent.Field{
		field.UUID("id", uuid.UUID{}).Immutable(),     // the asset ID
		field.String("kinds").Default("unused_asset"), // comma-separated proposal kinds
		field.Text("reason").Default(""),
		field.String("by").Default(""),
		field.Time("at"),
	}
}

// WebSession is a browser signed in with an API token. The cookie carries a random secret;
// only its SHA-256 is stored, so the table never holds a usable credential. Kept in the
// database so every replica knows every session and a restart signs nobody out.
type WebSession struct{ ent.Schema }

func (WebSession) Fields() []ent.Field {
	return []ent.Field{
		field.String("id").Immutable(), // hex SHA-256 of the cookie value
		field.UUID("token_id", uuid.UUID{}).Immutable(),
		field.String("name").Immutable(),
		field.Bool("admin").Immutable(),
		field.String("csrf").Immutable(),
		field.Time("expires_at").Immutable(),
	}
}

func (WebSession) Indexes() []ent.Index {
	return []ent.Index{index.Fields("expires_at")}
}
