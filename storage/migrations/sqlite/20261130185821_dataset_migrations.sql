-- Create "dataset_migrations" table
CREATE TABLE `dataset_migrations` (`id` uuid NOT NULL, `old_asset_id` uuid NOT NULL, `new_asset_id` uuid NOT NULL, `owner` text NOT NULL, `spec` text NOT NULL, `state` text NOT NULL DEFAULT ('active'), `cut_over_at` datetime NULL, `version` integer NOT NULL DEFAULT (1), `run_claimed_until` datetime NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "datasetmigration_old_asset_id" to table: "dataset_migrations"
CREATE INDEX `datasetmigration_old_asset_id` ON `dataset_migrations` (`old_asset_id`);
-- Create index "datasetmigration_new_asset_id" to table: "dataset_migrations"
CREATE INDEX `datasetmigration_new_asset_id` ON `dataset_migrations` (`new_asset_id`);
-- Create "reconciliation_findings" table
CREATE TABLE `reconciliation_findings` (`id` uuid NOT NULL, `migration_id` uuid NOT NULL, `kind` text NOT NULL, `side` text NOT NULL, `window_start` datetime NOT NULL, `owner` text NOT NULL, `detail` text NOT NULL, `opened_run_id` uuid NOT NULL, `opened_at` datetime NOT NULL, `closed_run_id` uuid NULL, `closed_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "reconciliationfinding_migration_id_closed_at" to table: "reconciliation_findings"
CREATE INDEX `reconciliationfinding_migration_id_closed_at` ON `reconciliation_findings` (`migration_id`, `closed_at`);
-- Create "reconciliation_runs" table
CREATE TABLE `reconciliation_runs` (`id` uuid NOT NULL, `migration_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `origin` text NOT NULL, `clean` bool NOT NULL DEFAULT (false), `result` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "reconciliationrun_migration_id_started_at" to table: "reconciliation_runs"
CREATE INDEX `reconciliationrun_migration_id_started_at` ON `reconciliation_runs` (`migration_id`, `started_at`);
