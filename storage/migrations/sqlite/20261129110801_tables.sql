-- Create "iceberg_manifests" table
CREATE TABLE `iceberg_manifests` (`id` uuid NOT NULL, `path` text NOT NULL, `entry_count` integer NOT NULL, `entries` blob NOT NULL, `read_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "iceberg_manifests_path_key" to table: "iceberg_manifests"
CREATE UNIQUE INDEX `iceberg_manifests_path_key` ON `iceberg_manifests` (`path`);
-- Create "iceberg_manifest_lists" table
CREATE TABLE `iceberg_manifest_lists` (`id` uuid NOT NULL, `path` text NOT NULL, `manifests` blob NOT NULL, `read_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "iceberg_manifest_lists_path_key" to table: "iceberg_manifest_lists"
CREATE UNIQUE INDEX `iceberg_manifest_lists_path_key` ON `iceberg_manifest_lists` (`path`);
-- Create "tidemark_iceberg_tables" table
CREATE TABLE `tidemark_iceberg_tables` (`id` uuid NOT NULL, `connection` text NOT NULL DEFAULT (''), `identifier` text NOT NULL DEFAULT (''), `table_uuid` text NOT NULL, `location` text NOT NULL, `metadata_location` text NOT NULL, `format_version` integer NOT NULL DEFAULT (0), `current_snapshot_id` integer NULL, `last_updated_at` datetime NULL, `refreshed_at` datetime NULL, `inspection` text NOT NULL DEFAULT (''), `health` text NOT NULL DEFAULT (''), `error` text NOT NULL DEFAULT (''), `error_at` datetime NULL, `gone_at` datetime NULL, `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "tidemark_iceberg_tables_table_uuid_key" to table: "tidemark_iceberg_tables"
CREATE UNIQUE INDEX `tidemark_iceberg_tables_table_uuid_key` ON `tidemark_iceberg_tables` (`table_uuid`);
-- Create index "icebergtable_connection_identifier" to table: "tidemark_iceberg_tables"
CREATE INDEX `icebergtable_connection_identifier` ON `tidemark_iceberg_tables` (`connection`, `identifier`);
-- Create "table_syncs" table
CREATE TABLE `table_syncs` (`id` uuid NOT NULL, `started_at` datetime NOT NULL, `finished_at` datetime NOT NULL, `report` text NOT NULL, PRIMARY KEY (`id`));
