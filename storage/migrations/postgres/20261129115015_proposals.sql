-- Create "cleanup_exemptions" table
CREATE TABLE "cleanup_exemptions" ("id" uuid NOT NULL, "reason" text NOT NULL DEFAULT '', "by" character varying NOT NULL DEFAULT '', "at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create "outbox_messages" table
CREATE TABLE "outbox_messages" ("id" uuid NOT NULL, "event" character varying NOT NULL, "proposal_id" uuid NOT NULL, "recipient" character varying NOT NULL, "url" character varying NOT NULL, "payload" text NOT NULL, "state" character varying NOT NULL DEFAULT 'pending', "attempts" bigint NOT NULL DEFAULT 0, "next_attempt_at" timestamptz NOT NULL, "last_error" text NOT NULL DEFAULT '', "created_at" timestamptz NOT NULL, "delivered_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "outboxmessage_proposal_id" to table: "outbox_messages"
CREATE INDEX "outboxmessage_proposal_id" ON "outbox_messages" ("proposal_id");
-- Create index "outboxmessage_state_next_attempt_at" to table: "outbox_messages"
CREATE INDEX "outboxmessage_state_next_attempt_at" ON "outbox_messages" ("state", "next_attempt_at");
-- Create "proposals" table
CREATE TABLE "proposals" ("id" uuid NOT NULL, "kind" character varying NOT NULL, "asset_id" uuid NOT NULL, "state" character varying NOT NULL, "severity" character varying NOT NULL DEFAULT 'normal', "evidence" text NOT NULL, "reason" text NOT NULL DEFAULT '', "decided_by" character varying NOT NULL DEFAULT '', "decided_at" timestamptz NULL, "created_at" timestamptz NOT NULL, "updated_at" timestamptz NOT NULL, "executed_at" timestamptz NULL, "outcome" text NOT NULL DEFAULT '', "due_at" timestamptz NULL, "version" bigint NOT NULL DEFAULT 1, PRIMARY KEY ("id"));
-- Create index "proposal_asset_id_kind_state" to table: "proposals"
CREATE INDEX "proposal_asset_id_kind_state" ON "proposals" ("asset_id", "kind", "state");
-- Create index "proposal_state_kind" to table: "proposals"
CREATE INDEX "proposal_state_kind" ON "proposals" ("state", "kind");
-- Create "proposal_files" table
CREATE TABLE "proposal_files" ("id" uuid NOT NULL, "proposal_id" uuid NOT NULL, "path" character varying NOT NULL, "size" bigint NOT NULL, "state" character varying NOT NULL DEFAULT 'pending', "detail" text NOT NULL DEFAULT '', "done_at" timestamptz NULL, PRIMARY KEY ("id"));
-- Create index "proposalfile_proposal_id_path" to table: "proposal_files"
CREATE UNIQUE INDEX "proposalfile_proposal_id_path" ON "proposal_files" ("proposal_id", "path");
-- Create index "proposalfile_proposal_id_state" to table: "proposal_files"
CREATE INDEX "proposalfile_proposal_id_state" ON "proposal_files" ("proposal_id", "state");
-- Create "proposal_steps" table
CREATE TABLE "proposal_steps" ("id" uuid NOT NULL, "proposal_id" uuid NOT NULL, "step" character varying NOT NULL, "done_at" timestamptz NOT NULL, "detail" text NOT NULL DEFAULT '', PRIMARY KEY ("id"));
-- Create index "proposalstep_proposal_id_step" to table: "proposal_steps"
CREATE UNIQUE INDEX "proposalstep_proposal_id_step" ON "proposal_steps" ("proposal_id", "step");
-- Create "webhooks" table
CREATE TABLE "webhooks" ("id" uuid NOT NULL, "principal" character varying NOT NULL, "url" character varying NOT NULL, "updated_at" timestamptz NOT NULL, PRIMARY KEY ("id"));
-- Create index "webhooks_principal_key" to table: "webhooks"
CREATE UNIQUE INDEX "webhooks_principal_key" ON "webhooks" ("principal");
