-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_cleanup_scans" table
CREATE TABLE `new_cleanup_scans` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `state` text NOT NULL, `age_threshold_seconds` integer NOT NULL, `threshold_override` bool NOT NULL DEFAULT (false), `confirm_only` bool NOT NULL DEFAULT (false), `from_inventory` bool NOT NULL DEFAULT (false), `report` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), `heartbeat_at` datetime NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "cleanup_scans" to new temporary table "new_cleanup_scans"
INSERT INTO `new_cleanup_scans` (`id`, `asset_id`, `started_at`, `finished_at`, `state`, `age_threshold_seconds`, `threshold_override`, `confirm_only`, `report`, `error`, `heartbeat_at`) SELECT `id`, `asset_id`, `started_at`, `finished_at`, `state`, `age_threshold_seconds`, `threshold_override`, `confirm_only`, `report`, `error`, `heartbeat_at` FROM `cleanup_scans`;
-- Drop "cleanup_scans" table after copying rows
DROP TABLE `cleanup_scans`;
-- Rename temporary table "new_cleanup_scans" to "cleanup_scans"
ALTER TABLE `new_cleanup_scans` RENAME TO `cleanup_scans`;
-- Create index "cleanupscan_asset_id_started_at" to table: "cleanup_scans"
CREATE INDEX `cleanupscan_asset_id_started_at` ON `cleanup_scans` (`asset_id`, `started_at`);
-- Create index "iceberginventoryfile_asset_id_path" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_path` ON `tidemark_iceberg_inventory` (`asset_id`, `path`);
-- Create "cleanup_ref_checks" table
CREATE TABLE `cleanup_ref_checks` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `state` text NOT NULL, `metadata_location` text NOT NULL DEFAULT (''), `runs` integer NOT NULL DEFAULT (1), `heartbeat_at` datetime NULL, `report` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "cleanuprefcheck_asset_id_started_at" to table: "cleanup_ref_checks"
CREATE INDEX `cleanuprefcheck_asset_id_started_at` ON `cleanup_ref_checks` (`asset_id`, `started_at`);
-- Create "cleanup_ref_check_units" table
CREATE TABLE `cleanup_ref_check_units` (`id` uuid NOT NULL, `check_id` uuid NOT NULL, `unit` text NOT NULL, `files` integer NOT NULL DEFAULT (0), `unchecked` integer NOT NULL DEFAULT (0), `missing` text NOT NULL DEFAULT (''), `checked_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "cleanuprefcheckunit_check_id" to table: "cleanup_ref_check_units"
CREATE INDEX `cleanuprefcheckunit_check_id` ON `cleanup_ref_check_units` (`check_id`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
