-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Add column "uncertain_from" to table: "asset_names"
ALTER TABLE `asset_names` ADD COLUMN `uncertain_from` datetime NULL;
-- Create "new_usage_dailies" table
CREATE TABLE `new_usage_dailies` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `day` text NOT NULL, `reads` integer NOT NULL DEFAULT (0), `writes` integer NOT NULL DEFAULT (0), `distinct_actors` integer NOT NULL DEFAULT (0), `distinct_jobs` integer NOT NULL DEFAULT (0), `late_records` integer NOT NULL DEFAULT (0), `last_read_at` datetime NULL, `last_write_at` datetime NULL, `updated_at` datetime NOT NULL);
-- Copy rows from old table "usage_dailies" to new temporary table "new_usage_dailies"
INSERT INTO `new_usage_dailies` (`id`, `asset_id`, `day`, `reads`, `writes`, `distinct_actors`, `distinct_jobs`, `last_read_at`, `last_write_at`, `updated_at`) SELECT `id`, `asset_id`, `day`, `reads`, `writes`, `distinct_actors`, `distinct_jobs`, `last_read_at`, `last_write_at`, `updated_at` FROM `usage_dailies`;
-- Drop "usage_dailies" table after copying rows
DROP TABLE `usage_dailies`;
-- Rename temporary table "new_usage_dailies" to "usage_dailies"
ALTER TABLE `new_usage_dailies` RENAME TO `usage_dailies`;
-- Create index "usagedaily_asset_id_day" to table: "usage_dailies"
CREATE UNIQUE INDEX `usagedaily_asset_id_day` ON `usage_dailies` (`asset_id`, `day`);
-- Create index "usagedaily_day" to table: "usage_dailies"
CREATE INDEX `usagedaily_day` ON `usage_dailies` (`day`);
-- Create "new_usage_events" table
CREATE TABLE `new_usage_events` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `event_key` text NOT NULL, `asset_id` uuid NOT NULL, `kind` text NOT NULL, `actor` text NOT NULL DEFAULT (''), `job_asset_id` uuid NULL, `source` text NOT NULL DEFAULT (''), `query_id` text NOT NULL DEFAULT (''), `namespace` text NOT NULL DEFAULT (''), `name` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, `day` text NOT NULL, `received_at` datetime NOT NULL, `resolution` text NOT NULL DEFAULT (''), `late` bool NOT NULL DEFAULT (false));
-- Copy rows from old table "usage_events" to new temporary table "new_usage_events"
INSERT INTO `new_usage_events` (`id`, `event_key`, `asset_id`, `kind`, `actor`, `job_asset_id`, `source`, `query_id`, `namespace`, `name`, `at`, `day`, `received_at`) SELECT `id`, `event_key`, `asset_id`, `kind`, `actor`, `job_asset_id`, `source`, `query_id`, `namespace`, `name`, `at`, `day`, `received_at` FROM `usage_events`;
-- Drop "usage_events" table after copying rows
DROP TABLE `usage_events`;
-- Rename temporary table "new_usage_events" to "usage_events"
ALTER TABLE `new_usage_events` RENAME TO `usage_events`;
-- Create index "usage_events_event_key_key" to table: "usage_events"
CREATE UNIQUE INDEX `usage_events_event_key_key` ON `usage_events` (`event_key`);
-- Create index "usageevent_asset_id_day" to table: "usage_events"
CREATE INDEX `usageevent_asset_id_day` ON `usage_events` (`asset_id`, `day`);
-- Create index "usageevent_at" to table: "usage_events"
CREATE INDEX `usageevent_at` ON `usage_events` (`at`);
-- Add column "listed_at" to table: "tidemark_iceberg_tables"
ALTER TABLE `tidemark_iceberg_tables` ADD COLUMN `listed_at` datetime NULL;
-- Create "usage_pendings" table
CREATE TABLE `usage_pendings` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `pending_key` text NOT NULL, `namespace` text NOT NULL, `name` text NOT NULL, `kind` text NOT NULL, `actor` text NOT NULL DEFAULT (''), `source` text NOT NULL DEFAULT (''), `query_id` text NOT NULL DEFAULT (''), `idempotency_key` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, `received_at` datetime NOT NULL);
-- Create index "usage_pendings_pending_key_key" to table: "usage_pendings"
CREATE UNIQUE INDEX `usage_pendings_pending_key_key` ON `usage_pendings` (`pending_key`);
-- Create index "usagepending_name_namespace" to table: "usage_pendings"
CREATE INDEX `usagepending_name_namespace` ON `usage_pendings` (`name`, `namespace`);
-- Create index "usagepending_at" to table: "usage_pendings"
CREATE INDEX `usagepending_at` ON `usage_pendings` (`at`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
