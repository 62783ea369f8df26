-- Create "notify_cursors" table
CREATE TABLE `notify_cursors` (`id` text NOT NULL, `after` uuid NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create "subscriptions" table
CREATE TABLE `subscriptions` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `principal` text NOT NULL, `created_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "subscription_asset_id_principal" to table: "subscriptions"
CREATE UNIQUE INDEX `subscription_asset_id_principal` ON `subscriptions` (`asset_id`, `principal`);
-- Create index "subscription_principal" to table: "subscriptions"
CREATE INDEX `subscription_principal` ON `subscriptions` (`principal`);
