-- Create "cleanup_leases" table
CREATE TABLE `cleanup_leases` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `shard` text NOT NULL, `holder` text NOT NULL, `expires_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "cleanuplease_asset_id_shard" to table: "cleanup_leases"
CREATE UNIQUE INDEX `cleanuplease_asset_id_shard` ON `cleanup_leases` (`asset_id`, `shard`);
-- Create "cleanup_observations" table
CREATE TABLE `cleanup_observations` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `shard` text NOT NULL, `path` text NOT NULL, `size` integer NOT NULL, `modified_at` datetime NOT NULL, `first_seen_at` datetime NOT NULL, `last_walk_id` uuid NOT NULL, `streak` integer NOT NULL, `confirmed_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "cleanupobservation_asset_id_path" to table: "cleanup_observations"
CREATE UNIQUE INDEX `cleanupobservation_asset_id_path` ON `cleanup_observations` (`asset_id`, `path`);
-- Create index "cleanupobservation_asset_id_shard" to table: "cleanup_observations"
CREATE INDEX `cleanupobservation_asset_id_shard` ON `cleanup_observations` (`asset_id`, `shard`);
-- Create "cleanup_scans" table
CREATE TABLE `cleanup_scans` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `state` text NOT NULL, `age_threshold_seconds` integer NOT NULL, `threshold_override` bool NOT NULL DEFAULT (false), `report` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "cleanupscan_asset_id_started_at" to table: "cleanup_scans"
CREATE INDEX `cleanupscan_asset_id_started_at` ON `cleanup_scans` (`asset_id`, `started_at`);
-- Create "cleanup_shard_walks" table
CREATE TABLE `cleanup_shard_walks` (`id` uuid NOT NULL, `scan_id` uuid NOT NULL, `asset_id` uuid NOT NULL, `shard` text NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `outcome` text NOT NULL, `entries` integer NOT NULL DEFAULT (0), `duplicates` integer NOT NULL DEFAULT (0), `list_requests` integer NOT NULL DEFAULT (0), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "cleanupshardwalk_asset_id_shard" to table: "cleanup_shard_walks"
CREATE INDEX `cleanupshardwalk_asset_id_shard` ON `cleanup_shard_walks` (`asset_id`, `shard`);
-- Create index "cleanupshardwalk_scan_id" to table: "cleanup_shard_walks"
CREATE INDEX `cleanupshardwalk_scan_id` ON `cleanup_shard_walks` (`scan_id`);
