-- Create "web_sessions" table
CREATE TABLE `web_sessions` (`id` text NOT NULL, `token_id` uuid NOT NULL, `name` text NOT NULL, `admin` bool NOT NULL, `csrf` text NOT NULL, `expires_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "websession_expires_at" to table: "web_sessions"
CREATE INDEX `websession_expires_at` ON `web_sessions` (`expires_at`);
