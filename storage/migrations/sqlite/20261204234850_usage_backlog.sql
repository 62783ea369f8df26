-- Create "usage_backlogs" table
CREATE TABLE `usage_backlogs` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `event_ids` json NOT NULL, `created_at` datetime NOT NULL);
