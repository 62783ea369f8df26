-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Add column "missing_at" to table: "tidemark_iceberg_tables"
ALTER TABLE `tidemark_iceberg_tables` ADD COLUMN `missing_at` datetime NULL;
-- Create "new_cleanup_shard_walks" table
CREATE TABLE `new_cleanup_shard_walks` (`id` uuid NOT NULL, `scan_id` uuid NOT NULL, `asset_id` uuid NOT NULL, `shard` text NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `outcome` text NOT NULL, `entries` integer NOT NULL DEFAULT (0), `duplicates` integer NOT NULL DEFAULT (0), `list_requests` integer NOT NULL DEFAULT (0), `error` text NOT NULL DEFAULT (''), `too_soon` bool NOT NULL DEFAULT (false), PRIMARY KEY (`id`));
-- Copy rows from old table "cleanup_shard_walks" to new temporary table "new_cleanup_shard_walks"
INSERT INTO `new_cleanup_shard_walks` (`id`, `scan_id`, `asset_id`, `shard`, `started_at`, `finished_at`, `outcome`, `entries`, `duplicates`, `list_requests`, `error`) SELECT `id`, `scan_id`, `asset_id`, `shard`, `started_at`, `finished_at`, `outcome`, `entries`, `duplicates`, `list_requests`, `error` FROM `cleanup_shard_walks`;
-- Drop "cleanup_shard_walks" table after copying rows
DROP TABLE `cleanup_shard_walks`;
-- Rename temporary table "new_cleanup_shard_walks" to "cleanup_shard_walks"
ALTER TABLE `new_cleanup_shard_walks` RENAME TO `cleanup_shard_walks`;
-- Create index "cleanupshardwalk_asset_id_shard" to table: "cleanup_shard_walks"
CREATE INDEX `cleanupshardwalk_asset_id_shard` ON `cleanup_shard_walks` (`asset_id`, `shard`);
-- Create index "cleanupshardwalk_scan_id" to table: "cleanup_shard_walks"
CREATE INDEX `cleanupshardwalk_scan_id` ON `cleanup_shard_walks` (`scan_id`);
-- Create "new_cleanup_exemptions" table
CREATE TABLE `new_cleanup_exemptions` (`id` uuid NOT NULL, `kinds` text NOT NULL DEFAULT ('unused_asset'), `reason` text NOT NULL DEFAULT (''), `by` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "cleanup_exemptions" to new temporary table "new_cleanup_exemptions"
INSERT INTO `new_cleanup_exemptions` (`id`, `reason`, `by`, `at`) SELECT `id`, `reason`, `by`, `at` FROM `cleanup_exemptions`;
-- Drop "cleanup_exemptions" table after copying rows
DROP TABLE `cleanup_exemptions`;
-- Rename temporary table "new_cleanup_exemptions" to "cleanup_exemptions"
ALTER TABLE `new_cleanup_exemptions` RENAME TO `cleanup_exemptions`;
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
