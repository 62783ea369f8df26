-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_lineage_events" table
CREATE TABLE `new_lineage_events` (`id` uuid NOT NULL, `event_key` text NOT NULL, `kind` text NOT NULL, `event_type` text NOT NULL DEFAULT (''), `event_time` datetime NOT NULL, `run_id` text NOT NULL DEFAULT (''), `job_asset_id` uuid NULL, `producer` text NOT NULL DEFAULT (''), `principal` text NOT NULL DEFAULT (''), `payload` text NOT NULL, `received_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "lineage_events" to new temporary table "new_lineage_events"
INSERT INTO `new_lineage_events` (`id`, `event_key`, `kind`, `event_type`, `event_time`, `run_id`, `job_asset_id`, `producer`, `payload`, `received_at`) SELECT `id`, `event_key`, `kind`, `event_type`, `event_time`, `run_id`, `job_asset_id`, `producer`, `payload`, `received_at` FROM `lineage_events`;
-- Drop "lineage_events" table after copying rows
DROP TABLE `lineage_events`;
-- Rename temporary table "new_lineage_events" to "lineage_events"
ALTER TABLE `new_lineage_events` RENAME TO `lineage_events`;
-- Create index "lineage_events_event_key_key" to table: "lineage_events"
CREATE UNIQUE INDEX `lineage_events_event_key_key` ON `lineage_events` (`event_key`);
-- Create index "lineageevent_run_id" to table: "lineage_events"
CREATE INDEX `lineageevent_run_id` ON `lineage_events` (`run_id`);
-- Create index "lineageevent_job_asset_id_event_time" to table: "lineage_events"
CREATE INDEX `lineageevent_job_asset_id_event_time` ON `lineage_events` (`job_asset_id`, `event_time`);
-- Create "new_usage_events" table
CREATE TABLE `new_usage_events` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `event_key` text NOT NULL, `asset_id` uuid NOT NULL, `kind` text NOT NULL, `actor` text NOT NULL DEFAULT (''), `job_asset_id` uuid NULL, `source` text NOT NULL DEFAULT (''), `query_id` text NOT NULL DEFAULT (''), `namespace` text NOT NULL DEFAULT (''), `name` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, `day` text NOT NULL, `received_at` datetime NOT NULL, `resolution` text NOT NULL DEFAULT (''), `late` bool NOT NULL DEFAULT (false), `version` text NOT NULL DEFAULT (''));
-- Copy rows from old table "usage_events" to new temporary table "new_usage_events"
INSERT INTO `new_usage_events` (`id`, `event_key`, `asset_id`, `kind`, `actor`, `job_asset_id`, `source`, `query_id`, `namespace`, `name`, `at`, `day`, `received_at`, `resolution`, `late`) SELECT `id`, `event_key`, `asset_id`, `kind`, `actor`, `job_asset_id`, `source`, `query_id`, `namespace`, `name`, `at`, `day`, `received_at`, `resolution`, `late` FROM `usage_events`;
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
-- Create "dataset_versions" table
CREATE TABLE `dataset_versions` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `version` text NOT NULL, `snapshot_id` integer NULL, `parent_version` text NOT NULL DEFAULT (''), `sequence_number` integer NULL, `operation` text NOT NULL DEFAULT (''), `summary` text NOT NULL DEFAULT (''), `principal` text NOT NULL DEFAULT (''), `committed_at` datetime NULL, `source` text NOT NULL, `seen_in_table` bool NOT NULL DEFAULT (false), `commit_id` uuid NULL, `run_id` text NOT NULL DEFAULT (''), `first_seen` datetime NOT NULL, `expired_at` datetime NULL, `expired_by` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "datasetversion_asset_id_version" to table: "dataset_versions"
CREATE UNIQUE INDEX `datasetversion_asset_id_version` ON `dataset_versions` (`asset_id`, `version`);
-- Create index "datasetversion_asset_id_committed_at" to table: "dataset_versions"
CREATE INDEX `datasetversion_asset_id_committed_at` ON `dataset_versions` (`asset_id`, `committed_at`);
-- Create "run_versions" table
CREATE TABLE `run_versions` (`id` uuid NOT NULL, `run_id` text NOT NULL, `asset_id` uuid NOT NULL, `role` text NOT NULL, `version` text NOT NULL DEFAULT (''), `kind` text NOT NULL, `basis` text NOT NULL DEFAULT (''), `flagged` bool NOT NULL DEFAULT (false), `conflict` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "runversion_run_id_asset_id_role" to table: "run_versions"
CREATE UNIQUE INDEX `runversion_run_id_asset_id_role` ON `run_versions` (`run_id`, `asset_id`, `role`);
-- Create index "runversion_asset_id_version_role" to table: "run_versions"
CREATE INDEX `runversion_asset_id_version_role` ON `run_versions` (`asset_id`, `version`, `role`);
-- Create index "runversion_asset_id_at" to table: "run_versions"
CREATE INDEX `runversion_asset_id_at` ON `run_versions` (`asset_id`, `at`);
-- Create "version_cursors" table
CREATE TABLE `version_cursors` (`id` text NOT NULL, `after` uuid NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
