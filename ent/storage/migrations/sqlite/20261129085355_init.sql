-- Create "api_tokens" table
CREATE TABLE `api_tokens` (`id` uuid NOT NULL, `name` text NOT NULL, `hash` text NOT NULL, `scopes` json NOT NULL, `created_at` datetime NOT NULL, `revoked_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "api_tokens_name_key" to table: "api_tokens"
CREATE UNIQUE INDEX `api_tokens_name_key` ON `api_tokens` (`name`);
-- Create index "api_tokens_hash_key" to table: "api_tokens"
CREATE UNIQUE INDEX `api_tokens_hash_key` ON `api_tokens` (`hash`);
-- Create "assets" table
CREATE TABLE `assets` (`id` uuid NOT NULL, `kind` text NOT NULL, `status` text NOT NULL DEFAULT ('active'), `version` integer NOT NULL DEFAULT (1), `description` text NOT NULL DEFAULT (''), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, `deleted_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "asset_kind" to table: "assets"
CREATE INDEX `asset_kind` ON `assets` (`kind`);
-- Create index "asset_status" to table: "assets"
CREATE INDEX `asset_status` ON `assets` (`status`);
-- Create "asset_names" table
CREATE TABLE `asset_names` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `namespace` text NOT NULL, `name` text NOT NULL, `valid_from` datetime NOT NULL, `valid_to` datetime NULL, `asset_id` uuid NOT NULL, CONSTRAINT `asset_names_assets_names` FOREIGN KEY (`asset_id`) REFERENCES `assets` (`id`) ON DELETE NO ACTION);
-- Create index "assetname_current_name" to table: "asset_names"
CREATE UNIQUE INDEX `assetname_current_name` ON `asset_names` (`namespace`, `name`) WHERE valid_to IS NULL;
-- Create index "assetname_current_of_asset" to table: "asset_names"
CREATE UNIQUE INDEX `assetname_current_of_asset` ON `asset_names` (`asset_id`) WHERE valid_to IS NULL;
-- Create index "assetname_namespace_name_valid_from" to table: "asset_names"
CREATE INDEX `assetname_namespace_name_valid_from` ON `asset_names` (`namespace`, `name`, `valid_from`);
-- Create index "assetname_name" to table: "asset_names"
CREATE INDEX `assetname_name` ON `asset_names` (`name`);
-- Create "audit_events" table
CREATE TABLE `audit_events` (`id` uuid NOT NULL, `at` datetime NOT NULL, `actor` text NOT NULL, `action` text NOT NULL, `asset_id` uuid NULL, `before` json NULL, `after` json NULL, `request_id` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "auditevent_asset_id_id" to table: "audit_events"
CREATE INDEX `auditevent_asset_id_id` ON `audit_events` (`asset_id`, `id`);
-- Create "external_ids" table
CREATE TABLE `external_ids` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `system` text NOT NULL, `value` text NOT NULL, `created_at` datetime NOT NULL, `asset_id` uuid NOT NULL, CONSTRAINT `external_ids_assets_external_ids` FOREIGN KEY (`asset_id`) REFERENCES `assets` (`id`) ON DELETE NO ACTION);
-- Create index "externalid_system_value" to table: "external_ids"
CREATE UNIQUE INDEX `externalid_system_value` ON `external_ids` (`system`, `value`);
-- Create index "externalid_asset_id" to table: "external_ids"
CREATE INDEX `externalid_asset_id` ON `external_ids` (`asset_id`);
-- Create "idempotency_keys" table
CREATE TABLE `idempotency_keys` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `operation` text NOT NULL, `key` text NOT NULL, `request_hash` text NOT NULL, `asset_id` uuid NOT NULL, `created_at` datetime NOT NULL);
-- Create index "idempotencykey_operation_key" to table: "idempotency_keys"
CREATE UNIQUE INDEX `idempotencykey_operation_key` ON `idempotency_keys` (`operation`, `key`);
-- Create index "idempotencykey_created_at" to table: "idempotency_keys"
CREATE INDEX `idempotencykey_created_at` ON `idempotency_keys` (`created_at`);
-- Create "owners" table
CREATE TABLE `owners` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `principal` text NOT NULL, `kind` text NOT NULL, `role` text NOT NULL, `added_at` datetime NOT NULL, `removed_at` datetime NULL, `asset_id` uuid NOT NULL, CONSTRAINT `owners_assets_owners` FOREIGN KEY (`asset_id`) REFERENCES `assets` (`id`) ON DELETE NO ACTION);
-- Create index "owner_current" to table: "owners"
CREATE UNIQUE INDEX `owner_current` ON `owners` (`asset_id`, `principal`) WHERE removed_at IS NULL;
-- Create index "owner_principal" to table: "owners"
CREATE INDEX `owner_principal` ON `owners` (`principal`);
