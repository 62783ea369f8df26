-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_outbox_messages" table
CREATE TABLE `new_outbox_messages` (`id` uuid NOT NULL, `event` text NOT NULL, `proposal_id` uuid NULL, `finding_id` uuid NULL, `recipient` text NOT NULL, `url` text NOT NULL, `payload` text NOT NULL, `state` text NOT NULL DEFAULT ('pending'), `attempts` integer NOT NULL DEFAULT (0), `next_attempt_at` datetime NOT NULL, `last_error` text NOT NULL DEFAULT (''), `created_at` datetime NOT NULL, `delivered_at` datetime NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "outbox_messages" to new temporary table "new_outbox_messages"
INSERT INTO `new_outbox_messages` (`id`, `event`, `proposal_id`, `recipient`, `url`, `payload`, `state`, `attempts`, `next_attempt_at`, `last_error`, `created_at`, `delivered_at`) SELECT `id`, `event`, `proposal_id`, `recipient`, `url`, `payload`, `state`, `attempts`, `next_attempt_at`, `last_error`, `created_at`, `delivered_at` FROM `outbox_messages`;
-- Drop "outbox_messages" table after copying rows
DROP TABLE `outbox_messages`;
-- Rename temporary table "new_outbox_messages" to "outbox_messages"
ALTER TABLE `new_outbox_messages` RENAME TO `outbox_messages`;
-- Create index "outboxmessage_state_next_attempt_at" to table: "outbox_messages"
CREATE INDEX `outboxmessage_state_next_attempt_at` ON `outbox_messages` (`state`, `next_attempt_at`);
-- Create index "outboxmessage_proposal_id" to table: "outbox_messages"
CREATE INDEX `outboxmessage_proposal_id` ON `outbox_messages` (`proposal_id`);
-- Create index "outboxmessage_finding_id" to table: "outbox_messages"
CREATE INDEX `outboxmessage_finding_id` ON `outbox_messages` (`finding_id`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
