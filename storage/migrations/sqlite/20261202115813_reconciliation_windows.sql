-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_reconciliation_runs" table
CREATE TABLE `new_reconciliation_runs` (`id` uuid NOT NULL, `migration_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `origin` text NOT NULL, `clean` bool NOT NULL DEFAULT (false), `result` text NOT NULL DEFAULT (''), `summary` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Copy rows from old table "reconciliation_runs" to new temporary table "new_reconciliation_runs"
INSERT INTO `new_reconciliation_runs` (`id`, `migration_id`, `started_at`, `finished_at`, `origin`, `clean`, `result`, `error`) SELECT `id`, `migration_id`, `started_at`, `finished_at`, `origin`, `clean`, `result`, `error` FROM `reconciliation_runs`;
-- Drop "reconciliation_runs" table after copying rows
DROP TABLE `reconciliation_runs`;
-- Rename temporary table "new_reconciliation_runs" to "reconciliation_runs"
ALTER TABLE `new_reconciliation_runs` RENAME TO `reconciliation_runs`;
-- Create index "reconciliationrun_migration_id_started_at" to table: "reconciliation_runs"
CREATE INDEX `reconciliationrun_migration_id_started_at` ON `reconciliation_runs` (`migration_id`, `started_at`);
-- Create "reconciliation_windows" table
CREATE TABLE `reconciliation_windows` (`id` uuid NOT NULL, `run_id` uuid NOT NULL, `start` datetime NOT NULL, `clean` bool NOT NULL, `differs` bool NOT NULL, `body` text NOT NULL, PRIMARY KEY (`id`));
-- Create index "reconciliationwindow_run_id_start" to table: "reconciliation_windows"
CREATE UNIQUE INDEX `reconciliationwindow_run_id_start` ON `reconciliation_windows` (`run_id`, `start`);
-- Create index "reconciliationwindow_run_id_differs_start" to table: "reconciliation_windows"
CREATE INDEX `reconciliationwindow_run_id_differs_start` ON `reconciliation_windows` (`run_id`, `differs`, `start`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
