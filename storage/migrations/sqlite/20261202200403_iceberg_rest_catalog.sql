-- Disable the enforcement of foreign-keys constraints
PRAGMA foreign_keys = off;
-- Create "new_tidemark_iceberg_tables" table
CREATE TABLE `new_tidemark_iceberg_tables` (`id` uuid NOT NULL, `connection` text NOT NULL DEFAULT (''), `identifier` text NOT NULL DEFAULT (''), `table_uuid` text NOT NULL, `location` text NOT NULL, `metadata_location` text NOT NULL, `format_version` integer NOT NULL DEFAULT (0), `current_snapshot_id` integer NULL, `last_updated_at` datetime NULL, `refreshed_at` datetime NULL, `inspection` text NOT NULL DEFAULT (''), `health` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), `error_at` datetime NULL, `gone_at` datetime NULL, `missing_at` datetime NULL, `listed_at` datetime NULL, `columns_schema_id` integer NULL, `warehouse` text NOT NULL DEFAULT (''), `rest_namespace` text NULL, `rest_key` text NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Copy rows from old table "tidemark_iceberg_tables" to new temporary table "new_tidemark_iceberg_tables"
INSERT INTO `new_tidemark_iceberg_tables` (`id`, `connection`, `identifier`, `table_uuid`, `location`, `metadata_location`, `format_version`, `current_snapshot_id`, `last_updated_at`, `refreshed_at`, `inspection`, `health`, `error`, `error_at`, `gone_at`, `missing_at`, `listed_at`, `columns_schema_id`, `created_at`, `updated_at`) SELECT `id`, `connection`, `identifier`, `table_uuid`, `location`, `metadata_location`, `format_version`, `current_snapshot_id`, `last_updated_at`, `refreshed_at`, `inspection`, `health`, `error`, `error_at`, `gone_at`, `missing_at`, `listed_at`, `columns_schema_id`, `created_at`, `updated_at` FROM `tidemark_iceberg_tables`;
-- Drop "tidemark_iceberg_tables" table after copying rows
DROP TABLE `tidemark_iceberg_tables`;
-- Rename temporary table "new_tidemark_iceberg_tables" to "tidemark_iceberg_tables"
ALTER TABLE `new_tidemark_iceberg_tables` RENAME TO `tidemark_iceberg_tables`;
-- Create index "tidemark_iceberg_tables_table_uuid_key" to table: "tidemark_iceberg_tables"
CREATE UNIQUE INDEX `tidemark_iceberg_tables_table_uuid_key` ON `tidemark_iceberg_tables` (`table_uuid`);
-- Create index "tidemark_iceberg_tables_rest_key_key" to table: "tidemark_iceberg_tables"
CREATE UNIQUE INDEX `tidemark_iceberg_tables_rest_key_key` ON `tidemark_iceberg_tables` (`rest_key`);
-- Create index "icebergtable_connection_identifier" to table: "tidemark_iceberg_tables"
CREATE INDEX `icebergtable_connection_identifier` ON `tidemark_iceberg_tables` (`connection`, `identifier`);
-- Create index "icebergtable_rest_namespace" to table: "tidemark_iceberg_tables"
CREATE INDEX `icebergtable_rest_namespace` ON `tidemark_iceberg_tables` (`rest_namespace`);
-- Create "tidemark_iceberg_commits" table
CREATE TABLE `tidemark_iceberg_commits` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `warehouse` text NOT NULL, `kind` text NOT NULL, `state` text NOT NULL, `base_location` text NOT NULL DEFAULT (''), `new_location` text NOT NULL DEFAULT (''), `snapshot_id` integer NULL, `reason` text NOT NULL DEFAULT (''), `idempotency_key` text NOT NULL DEFAULT (''), `transaction_id` uuid NULL, `actor` text NOT NULL DEFAULT (''), `added_files` integer NOT NULL DEFAULT (0), `removed_files` integer NOT NULL DEFAULT (0), `added_bytes` integer NOT NULL DEFAULT (0), `started_at` datetime NOT NULL, `finished_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "icebergcommit_asset_id_started_at" to table: "tidemark_iceberg_commits"
CREATE INDEX `icebergcommit_asset_id_started_at` ON `tidemark_iceberg_commits` (`asset_id`, `started_at`);
-- Create index "icebergcommit_state_started_at" to table: "tidemark_iceberg_commits"
CREATE INDEX `icebergcommit_state_started_at` ON `tidemark_iceberg_commits` (`state`, `started_at`);
-- Create index "icebergcommit_warehouse_idempotency_key" to table: "tidemark_iceberg_commits"
CREATE INDEX `icebergcommit_warehouse_idempotency_key` ON `tidemark_iceberg_commits` (`warehouse`, `idempotency_key`);
-- Create "tidemark_iceberg_inventory" table
CREATE TABLE `tidemark_iceberg_inventory` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `commit_id` uuid NOT NULL, `snapshot_id` integer NOT NULL DEFAULT (0), `path` text NOT NULL, `kind` text NOT NULL, `change` text NOT NULL, `size` integer NOT NULL DEFAULT (0), `records` integer NOT NULL DEFAULT (0), `recorded_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "iceberginventoryfile_asset_id_snapshot_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_asset_id_snapshot_id` ON `tidemark_iceberg_inventory` (`asset_id`, `snapshot_id`);
-- Create index "iceberginventoryfile_commit_id" to table: "tidemark_iceberg_inventory"
CREATE INDEX `iceberginventoryfile_commit_id` ON `tidemark_iceberg_inventory` (`commit_id`);
-- Create "tidemark_iceberg_namespaces" table
CREATE TABLE `tidemark_iceberg_namespaces` (`id` uuid NOT NULL, `warehouse` text NOT NULL, `key` text NOT NULL, `levels` text NOT NULL, `depth` integer NOT NULL, `properties` text NOT NULL DEFAULT ('{}'), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "tidemark_iceberg_namespaces_key_key" to table: "tidemark_iceberg_namespaces"
CREATE UNIQUE INDEX `tidemark_iceberg_namespaces_key_key` ON `tidemark_iceberg_namespaces` (`key`);
-- Create index "icebergnamespace_warehouse_depth" to table: "tidemark_iceberg_namespaces"
CREATE INDEX `icebergnamespace_warehouse_depth` ON `tidemark_iceberg_namespaces` (`warehouse`, `depth`);
-- Enable back the enforcement of foreign-keys constraints
PRAGMA foreign_keys = on;
