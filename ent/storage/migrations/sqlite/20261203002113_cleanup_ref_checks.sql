-- Create "cleanup_ref_checks" table
CREATE TABLE `cleanup_ref_checks` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NULL, `state` text NOT NULL, `metadata_location` text NOT NULL DEFAULT (''), `runs` integer NOT NULL DEFAULT (1), `heartbeat_at` datetime NULL, `report` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "cleanuprefcheck_asset_id_started_at" to table: "cleanup_ref_checks"
CREATE INDEX `cleanuprefcheck_asset_id_started_at` ON `cleanup_ref_checks` (`asset_id`, `started_at`);
-- Create "cleanup_ref_check_units" table
CREATE TABLE `cleanup_ref_check_units` (`id` uuid NOT NULL, `check_id` uuid NOT NULL, `unit` text NOT NULL, `files` integer NOT NULL DEFAULT (0), `unchecked` integer NOT NULL DEFAULT (0), `missing` text NOT NULL DEFAULT (''), `checked_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "cleanuprefcheckunit_check_id" to table: "cleanup_ref_check_units"
CREATE INDEX `cleanuprefcheckunit_check_id` ON `cleanup_ref_check_units` (`check_id`);
