-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_cleanup_leases" table
CREATE TABLE `new_cleanup_leases` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `shard` text NOT NULL, `holder` text NOT NULL, `expires_at` datetime NOT NULL, `token` integer NOT NULL DEFAULT (0), PRIMARY KEY (`id`));
-- Copy rows from old table "cleanup_leases" to new temporary table "new_cleanup_leases"
INSERT INTO `new_cleanup_leases` (`id`, `asset_id`, `shard`, `holder`, `expires_at`) SELECT `id`, `asset_id`, `shard`, `holder`, `expires_at` FROM `cleanup_leases`;
-- Drop "cleanup_leases" table after copying rows
DROP TABLE `cleanup_leases`;
-- Rename temporary table "new_cleanup_leases" to "cleanup_leases"
ALTER TABLE `new_cleanup_leases` RENAME TO `cleanup_leases`;
-- Create index "cleanuplease_asset_id_shard" to table: "cleanup_leases"
CREATE UNIQUE INDEX `cleanuplease_asset_id_shard` ON `cleanup_leases` (`asset_id`, `shard`);
-- Add column "heartbeat_at" to table: "cleanup_scans"
ALTER TABLE `cleanup_scans` ADD COLUMN `heartbeat_at` datetime NULL;
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
