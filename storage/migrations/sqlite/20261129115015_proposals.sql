-- Create "cleanup_exemptions" table
CREATE TABLE `cleanup_exemptions` (`id` uuid NOT NULL, `reason` text NOT NULL DEFAULT (''), `by` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create "outbox_messages" table
CREATE TABLE `outbox_messages` (`id` uuid NOT NULL, `event` text NOT NULL, `proposal_id` uuid NOT NULL, `recipient` text NOT NULL, `url` text NOT NULL, `payload` text NOT NULL, `state` text NOT NULL DEFAULT ('pending'), `attempts` integer NOT NULL DEFAULT (0), `next_attempt_at` datetime NOT NULL, `last_error` text NOT NULL DEFAULT (''), `created_at` datetime NOT NULL, `delivered_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "outboxmessage_state_next_attempt_at" to table: "outbox_messages"
CREATE INDEX `outboxmessage_state_next_attempt_at` ON `outbox_messages` (`state`, `next_attempt_at`);
-- Create index "outboxmessage_proposal_id" to table: "outbox_messages"
CREATE INDEX `outboxmessage_proposal_id` ON `outbox_messages` (`proposal_id`);
-- Create "proposals" table
CREATE TABLE `proposals` (`id` uuid NOT NULL, `kind` text NOT NULL, `asset_id` uuid NOT NULL, `state` text NOT NULL, `severity` text NOT NULL DEFAULT ('normal'), `evidence` text NOT NULL, `reason` text NOT NULL DEFAULT (''), `decided_by` text NOT NULL DEFAULT (''), `decided_at` datetime NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, `executed_at` datetime NULL, `outcome` text NOT NULL DEFAULT (''), `due_at` datetime NULL, `version` integer NOT NULL DEFAULT (1), PRIMARY KEY (`id`));
-- Create index "proposal_state_kind" to table: "proposals"
CREATE INDEX `proposal_state_kind` ON `proposals` (`state`, `kind`);
-- Create index "proposal_asset_id_kind_state" to table: "proposals"
CREATE INDEX `proposal_asset_id_kind_state` ON `proposals` (`asset_id`, `kind`, `state`);
-- Create "proposal_files" table
CREATE TABLE `proposal_files` (`id` uuid NOT NULL, `proposal_id` uuid NOT NULL, `path` text NOT NULL, `size` integer NOT NULL, `state` text NOT NULL DEFAULT ('pending'), `detail` text NOT NULL DEFAULT (''), `done_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "proposalfile_proposal_id_state" to table: "proposal_files"
CREATE INDEX `proposalfile_proposal_id_state` ON `proposal_files` (`proposal_id`, `state`);
-- Create index "proposalfile_proposal_id_path" to table: "proposal_files"
CREATE UNIQUE INDEX `proposalfile_proposal_id_path` ON `proposal_files` (`proposal_id`, `path`);
-- Create "proposal_steps" table
CREATE TABLE `proposal_steps` (`id` uuid NOT NULL, `proposal_id` uuid NOT NULL, `step` text NOT NULL, `done_at` datetime NOT NULL, `detail` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "proposalstep_proposal_id_step" to table: "proposal_steps"
CREATE UNIQUE INDEX `proposalstep_proposal_id_step` ON `proposal_steps` (`proposal_id`, `step`);
-- Create "webhooks" table
CREATE TABLE `webhooks` (`id` uuid NOT NULL, `principal` text NOT NULL, `url` text NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "webhooks_principal_key" to table: "webhooks"
CREATE UNIQUE INDEX `webhooks_principal_key` ON `webhooks` (`principal`);
