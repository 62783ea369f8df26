-- Create "usage_actor_dailies" table
CREATE TABLE `usage_actor_dailies` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `day` text NOT NULL, `actor` text NOT NULL, `reads` integer NOT NULL DEFAULT (0), `writes` integer NOT NULL DEFAULT (0));
-- Create index "usageactordaily_asset_id_day_actor" to table: "usage_actor_dailies"
CREATE UNIQUE INDEX `usageactordaily_asset_id_day_actor` ON `usage_actor_dailies` (`asset_id`, `day`, `actor`);
-- Create "usage_actor_monthlies" table
CREATE TABLE `usage_actor_monthlies` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `month` text NOT NULL, `actor` text NOT NULL, `reads` integer NOT NULL DEFAULT (0), `writes` integer NOT NULL DEFAULT (0));
-- Create index "usageactormonthly_asset_id_month_actor" to table: "usage_actor_monthlies"
CREATE UNIQUE INDEX `usageactormonthly_asset_id_month_actor` ON `usage_actor_monthlies` (`asset_id`, `month`, `actor`);
-- Create "usage_dailies" table
CREATE TABLE `usage_dailies` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `day` text NOT NULL, `reads` integer NOT NULL DEFAULT (0), `writes` integer NOT NULL DEFAULT (0), `distinct_actors` integer NOT NULL DEFAULT (0), `distinct_jobs` integer NOT NULL DEFAULT (0), `last_read_at` datetime NULL, `last_write_at` datetime NULL, `updated_at` datetime NOT NULL);
-- Create index "usagedaily_asset_id_day" to table: "usage_dailies"
CREATE UNIQUE INDEX `usagedaily_asset_id_day` ON `usage_dailies` (`asset_id`, `day`);
-- Create index "usagedaily_day" to table: "usage_dailies"
CREATE INDEX `usagedaily_day` ON `usage_dailies` (`day`);
-- Create "usage_events" table
CREATE TABLE `usage_events` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `event_key` text NOT NULL, `asset_id` uuid NOT NULL, `kind` text NOT NULL, `actor` text NOT NULL DEFAULT (''), `job_asset_id` uuid NULL, `source` text NOT NULL DEFAULT (''), `query_id` text NOT NULL DEFAULT (''), `namespace` text NOT NULL DEFAULT (''), `name` text NOT NULL DEFAULT (''), `at` datetime NOT NULL, `day` text NOT NULL, `received_at` datetime NOT NULL);
-- Create index "usage_events_event_key_key" to table: "usage_events"
CREATE UNIQUE INDEX `usage_events_event_key_key` ON `usage_events` (`event_key`);
-- Create index "usageevent_asset_id_day" to table: "usage_events"
CREATE INDEX `usageevent_asset_id_day` ON `usage_events` (`asset_id`, `day`);
-- Create index "usageevent_at" to table: "usage_events"
CREATE INDEX `usageevent_at` ON `usage_events` (`at`);
-- Create "usage_names" table
CREATE TABLE `usage_names` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `namespace` text NOT NULL, `name` text NOT NULL, `first_at` datetime NOT NULL, `last_at` datetime NOT NULL);
-- Create index "usagename_asset_id_namespace_name" to table: "usage_names"
CREATE UNIQUE INDEX `usagename_asset_id_namespace_name` ON `usage_names` (`asset_id`, `namespace`, `name`);
