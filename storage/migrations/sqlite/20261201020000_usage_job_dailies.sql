-- Create "usage_job_dailies" table
CREATE TABLE `usage_job_dailies` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `day` text NOT NULL, `asset_id` uuid NOT NULL, `job_asset_id` uuid NOT NULL);
-- Create index "usagejobdaily_day_asset_id_job_asset_id" to table: "usage_job_dailies"
CREATE UNIQUE INDEX `usagejobdaily_day_asset_id_job_asset_id` ON `usage_job_dailies` (`day`, `asset_id`, `job_asset_id`);
-- Fill it from the raw events still kept (hand-appended): the days that can still receive records.
INSERT INTO `usage_job_dailies` (`day`, `asset_id`, `job_asset_id`) SELECT DISTINCT `day`, `asset_id`, `job_asset_id` FROM `usage_events` WHERE `job_asset_id` IS NOT NULL;
