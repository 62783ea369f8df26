-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_dataset_migrations" table
CREATE TABLE `new_dataset_migrations` (`id` uuid NOT NULL, `old_asset_id` uuid NOT NULL, `new_asset_id` uuid NOT NULL, `owner` text NOT NULL, `spec` text NOT NULL, `state` text NOT NULL DEFAULT ('active'), `cut_over_at` datetime NULL, `archive` text NOT NULL DEFAULT (''), `version` integer NOT NULL DEFAULT (1), `run_claimed_until` datetime NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "dataset_migrations" to new temporary table "new_dataset_migrations"
INSERT INTO `new_dataset_migrations` (`id`, `old_asset_id`, `new_asset_id`, `owner`, `spec`, `state`, `cut_over_at`, `version`, `run_claimed_until`, `created_at`, `updated_at`) SELECT `id`, `old_asset_id`, `new_asset_id`, `owner`, `spec`, `state`, `cut_over_at`, `version`, `run_claimed_until`, `created_at`, `updated_at` FROM `dataset_migrations`;
-- Drop "dataset_migrations" table after copying rows
DROP TABLE `dataset_migrations`;
-- Rename temporary table "new_dataset_migrations" to "dataset_migrations"
ALTER TABLE `new_dataset_migrations` RENAME TO `dataset_migrations`;
-- Create index "datasetmigration_old_asset_id" to table: "dataset_migrations"
CREATE INDEX `datasetmigration_old_asset_id` ON `dataset_migrations` (`old_asset_id`);
-- Create index "datasetmigration_new_asset_id" to table: "dataset_migrations"
CREATE INDEX `datasetmigration_new_asset_id` ON `dataset_migrations` (`new_asset_id`);
-- Create "new_reconciliation_runs" table
CREATE TABLE `new_reconciliation_runs` (`id` uuid NOT NULL, `migration_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `origin` text NOT NULL, `against` text NOT NULL DEFAULT ('live'), `clean` bool NOT NULL DEFAULT (false), `result` text NOT NULL DEFAULT (''), `summary` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Copy rows from old table "reconciliation_runs" to new temporary table "new_reconciliation_runs"
INSERT INTO `new_reconciliation_runs` (`id`, `migration_id`, `started_at`, `finished_at`, `origin`, `clean`, `result`, `summary`, `error`) SELECT `id`, `migration_id`, `started_at`, `finished_at`, `origin`, `clean`, `result`, `summary`, `error` FROM `reconciliation_runs`;
-- Drop "reconciliation_runs" table after copying rows
DROP TABLE `reconciliation_runs`;
-- Rename temporary table "new_reconciliation_runs" to "reconciliation_runs"
ALTER TABLE `new_reconciliation_runs` RENAME TO `reconciliation_runs`;
-- Create index "reconciliationrun_migration_id_started_at" to table: "reconciliation_runs"
CREATE INDEX `reconciliationrun_migration_id_started_at` ON `reconciliation_runs` (`migration_id`, `started_at`);
-- Create "migration_events" table
CREATE TABLE `migration_events` (`id` uuid NOT NULL, `migration_id` uuid NOT NULL, `kind` text NOT NULL, `at` datetime NOT NULL, `note` text NOT NULL DEFAULT (''), `recorded_by` text NOT NULL DEFAULT (''), `created_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "migrationevent_migration_id_at" to table: "migration_events"
CREATE INDEX `migrationevent_migration_id_at` ON `migration_events` (`migration_id`, `at`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
