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
-- Create "asset_facets" table
CREATE TABLE `asset_facets` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `name` text NOT NULL, `value` text NOT NULL, `event_time` datetime NOT NULL, `updated_at` datetime NOT NULL);
-- Create index "assetfacet_asset_id_name" to table: "asset_facets"
CREATE UNIQUE INDEX `assetfacet_asset_id_name` ON `asset_facets` (`asset_id`, `name`);
-- Create "asset_names" table
CREATE TABLE `asset_names` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `space` text NOT NULL DEFAULT ('dataset'), `namespace` text NOT NULL, `name` text NOT NULL, `valid_from` datetime NOT NULL, `valid_to` datetime NULL, `asset_id` uuid NOT NULL, CONSTRAINT `asset_names_assets_names` FOREIGN KEY (`asset_id`) REFERENCES `assets` (`id`) ON DELETE NO ACTION);
-- Create index "assetname_current_name" to table: "asset_names"
CREATE UNIQUE INDEX `assetname_current_name` ON `asset_names` (`space`, `namespace`, `name`) WHERE valid_to IS NULL;
-- Create index "assetname_current_of_asset" to table: "asset_names"
CREATE UNIQUE INDEX `assetname_current_of_asset` ON `asset_names` (`asset_id`) WHERE valid_to IS NULL;
-- Create index "assetname_space_namespace_name_valid_from" to table: "asset_names"
CREATE INDEX `assetname_space_namespace_name_valid_from` ON `asset_names` (`space`, `namespace`, `name`, `valid_from`);
-- Create index "assetname_name" to table: "asset_names"
CREATE INDEX `assetname_name` ON `asset_names` (`name`);
-- Create "audit_events" table
CREATE TABLE `audit_events` (`id` uuid NOT NULL, `at` datetime NOT NULL, `actor` text NOT NULL, `action` text NOT NULL, `asset_id` uuid NULL, `before` json NULL, `after` json NULL, `request_id` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "auditevent_asset_id_id" to table: "audit_events"
CREATE INDEX `auditevent_asset_id_id` ON `audit_events` (`asset_id`, `id`);
-- Create "column_edges" table
CREATE TABLE `column_edges` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `out_asset_id` uuid NOT NULL, `out_field` text NOT NULL, `in_asset_id` uuid NOT NULL, `in_field` text NOT NULL, `transformation_type` text NOT NULL DEFAULT (''), `transformation_subtype` text NOT NULL DEFAULT (''), `description` text NOT NULL DEFAULT (''), `masking` bool NOT NULL DEFAULT (false), `first_seen` datetime NOT NULL, `last_seen` datetime NOT NULL, `last_run_id` text NOT NULL DEFAULT (''));
-- Create index "columnedge_out_asset_id_out_fie_10127e654e1e430537b5dbbe156dc31b" to table: "column_edges"
CREATE UNIQUE INDEX `columnedge_out_asset_id_out_fie_10127e654e1e430537b5dbbe156dc31b` ON `column_edges` (`out_asset_id`, `out_field`, `in_asset_id`, `in_field`, `transformation_type`, `transformation_subtype`);
-- Create index "columnedge_in_asset_id_in_field" to table: "column_edges"
CREATE INDEX `columnedge_in_asset_id_in_field` ON `column_edges` (`in_asset_id`, `in_field`);
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
-- Create "lineage_edges" table
CREATE TABLE `lineage_edges` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `from_id` uuid NOT NULL, `to_id` uuid NOT NULL, `first_seen` datetime NOT NULL, `last_seen` datetime NOT NULL, `last_run_id` text NOT NULL DEFAULT (''));
-- Create index "lineageedge_from_id_to_id" to table: "lineage_edges"
CREATE UNIQUE INDEX `lineageedge_from_id_to_id` ON `lineage_edges` (`from_id`, `to_id`);
-- Create index "lineageedge_to_id" to table: "lineage_edges"
CREATE INDEX `lineageedge_to_id` ON `lineage_edges` (`to_id`);
-- Create "lineage_events" table
CREATE TABLE `lineage_events` (`id` uuid NOT NULL, `event_key` text NOT NULL, `kind` text NOT NULL, `event_type` text NOT NULL DEFAULT (''), `event_time` datetime NOT NULL, `run_id` text NOT NULL DEFAULT (''), `job_asset_id` uuid NULL, `producer` text NOT NULL DEFAULT (''), `payload` text NOT NULL, `received_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "lineage_events_event_key_key" to table: "lineage_events"
CREATE UNIQUE INDEX `lineage_events_event_key_key` ON `lineage_events` (`event_key`);
-- Create index "lineageevent_run_id" to table: "lineage_events"
CREATE INDEX `lineageevent_run_id` ON `lineage_events` (`run_id`);
-- Create index "lineageevent_job_asset_id_event_time" to table: "lineage_events"
CREATE INDEX `lineageevent_job_asset_id_event_time` ON `lineage_events` (`job_asset_id`, `event_time`);
-- Create "lineage_states" table
CREATE TABLE `lineage_states` (`id` uuid NOT NULL, `last_activity` datetime NULL, `dropped_at` datetime NULL, PRIMARY KEY (`id`));
-- Create "owners" table
CREATE TABLE `owners` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `principal` text NOT NULL, `kind` text NOT NULL, `role` text NOT NULL, `added_at` datetime NOT NULL, `removed_at` datetime NULL, `asset_id` uuid NOT NULL, CONSTRAINT `owners_assets_owners` FOREIGN KEY (`asset_id`) REFERENCES `assets` (`id`) ON DELETE NO ACTION);
-- Create index "owner_current" to table: "owners"
CREATE UNIQUE INDEX `owner_current` ON `owners` (`asset_id`, `principal`) WHERE removed_at IS NULL;
-- Create index "owner_principal" to table: "owners"
CREATE INDEX `owner_principal` ON `owners` (`principal`);
-- Create "runs" table
CREATE TABLE `runs` (`id` text NOT NULL, `job_asset_id` uuid NOT NULL, `state` text NOT NULL, `state_time` datetime NOT NULL, `started_at` datetime NULL, `ended_at` datetime NULL, `nominal_start` datetime NULL, `nominal_end` datetime NULL, `parent_run_id` text NOT NULL DEFAULT (''), `facets` json NULL, `event_count` integer NOT NULL DEFAULT (0), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "run_job_asset_id_created_at" to table: "runs"
CREATE INDEX `run_job_asset_id_created_at` ON `runs` (`job_asset_id`, `created_at`);
-- Create index "run_parent_run_id" to table: "runs"
CREATE INDEX `run_parent_run_id` ON `runs` (`parent_run_id`);
-- Create "run_ios" table
CREATE TABLE `run_ios` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `run_id` text NOT NULL, `asset_id` uuid NOT NULL, `role` text NOT NULL, `first_seen` datetime NOT NULL);
-- Create index "runio_run_id_asset_id_role" to table: "run_ios"
CREATE UNIQUE INDEX `runio_run_id_asset_id_role` ON `run_ios` (`run_id`, `asset_id`, `role`);
-- Create index "runio_asset_id_first_seen" to table: "run_ios"
CREATE INDEX `runio_asset_id_first_seen` ON `run_ios` (`asset_id`, `first_seen`);
