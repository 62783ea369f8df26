-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Add column "columns_schema_id" to table: "tidemark_iceberg_tables"
ALTER TABLE `tidemark_iceberg_tables` ADD COLUMN `columns_schema_id` integer NULL;
-- Create "new_cleanup_scans" table
CREATE TABLE `new_cleanup_scans` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `state` text NOT NULL, `age_threshold_seconds` integer NOT NULL, `threshold_override` bool NOT NULL DEFAULT (false), `confirm_only` bool NOT NULL DEFAULT (false), `report` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), `heartbeat_at` datetime NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "cleanup_scans" to new temporary table "new_cleanup_scans"
INSERT INTO `new_cleanup_scans` (`id`, `asset_id`, `started_at`, `finished_at`, `state`, `age_threshold_seconds`, `threshold_override`, `report`, `error`, `heartbeat_at`) SELECT `id`, `asset_id`, `started_at`, `finished_at`, `state`, `age_threshold_seconds`, `threshold_override`, `report`, `error`, `heartbeat_at` FROM `cleanup_scans`;
-- Drop "cleanup_scans" table after copying rows
DROP TABLE `cleanup_scans`;
-- Rename temporary table "new_cleanup_scans" to "cleanup_scans"
ALTER TABLE `new_cleanup_scans` RENAME TO `cleanup_scans`;
-- Create index "cleanupscan_asset_id_started_at" to table: "cleanup_scans"
CREATE INDEX `cleanupscan_asset_id_started_at` ON `cleanup_scans` (`asset_id`, `started_at`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
