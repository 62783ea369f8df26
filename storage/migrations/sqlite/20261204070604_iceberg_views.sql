-- Create "tidemark_iceberg_views" table
CREATE TABLE `tidemark_iceberg_views` (`id` uuid NOT NULL, `warehouse` text NOT NULL, `view_uuid` text NOT NULL, `identifier` text NOT NULL DEFAULT (''), `rest_namespace` text NULL, `rest_key` text NULL, `location` text NOT NULL, `metadata_dir` text NOT NULL, `metadata_location` text NOT NULL, `current_version_id` integer NOT NULL DEFAULT (0), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, `gone_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "tidemark_iceberg_views_view_uuid_key" to table: "tidemark_iceberg_views"
CREATE UNIQUE INDEX `tidemark_iceberg_views_view_uuid_key` ON `tidemark_iceberg_views` (`view_uuid`);
-- Create index "tidemark_iceberg_views_rest_key_key" to table: "tidemark_iceberg_views"
CREATE UNIQUE INDEX `tidemark_iceberg_views_rest_key_key` ON `tidemark_iceberg_views` (`rest_key`);
-- Create index "icebergview_rest_namespace" to table: "tidemark_iceberg_views"
CREATE INDEX `icebergview_rest_namespace` ON `tidemark_iceberg_views` (`rest_namespace`);
-- Create index "icebergview_warehouse_metadata_dir" to table: "tidemark_iceberg_views"
CREATE INDEX `icebergview_warehouse_metadata_dir` ON `tidemark_iceberg_views` (`warehouse`, `metadata_dir`);
