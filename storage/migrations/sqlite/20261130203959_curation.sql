-- Create "classifications" table
CREATE TABLE `classifications` (`id` text NOT NULL, `description` text NOT NULL DEFAULT (''), `values` json NOT NULL, `propagate` bool NOT NULL DEFAULT (true), `version` integer NOT NULL DEFAULT (1), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create "columns" table
CREATE TABLE `columns` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `field_id` integer NULL, `path` text NOT NULL, `type` text NOT NULL DEFAULT (''), `ordinal` integer NOT NULL DEFAULT (0), `source_doc` text NOT NULL DEFAULT (''), `description` text NOT NULL DEFAULT (''), `added_at` datetime NOT NULL, `removed_at` datetime NULL, PRIMARY KEY (`id`));
-- Create index "column_current_path" to table: "columns"
CREATE UNIQUE INDEX `column_current_path` ON `columns` (`asset_id`, `path`) WHERE removed_at IS NULL;
-- Create index "column_asset_id_field_id" to table: "columns"
CREATE INDEX `column_asset_id_field_id` ON `columns` (`asset_id`, `field_id`);
-- Create "glossary_terms" table
CREATE TABLE `glossary_terms` (`id` uuid NOT NULL, `name` text NOT NULL, `name_key` text NOT NULL, `definition` text NOT NULL DEFAULT (''), `owners` json NULL, `related` json NULL, `version` integer NOT NULL DEFAULT (1), `created_at` datetime NOT NULL, `updated_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "glossary_terms_name_key_key" to table: "glossary_terms"
CREATE UNIQUE INDEX `glossary_terms_name_key_key` ON `glossary_terms` (`name_key`);
-- Create "labels" table
CREATE TABLE `labels` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `column_id` uuid NOT NULL, `kind` text NOT NULL, `value` text NOT NULL, `source` text NOT NULL, `from_asset_id` uuid NULL, `from_column_id` uuid NULL, `added_at` datetime NOT NULL, `added_by` text NOT NULL, `removed_at` datetime NULL, `removed_by` text NOT NULL DEFAULT (''), PRIMARY KEY (`id`));
-- Create index "label_current" to table: "labels"
CREATE UNIQUE INDEX `label_current` ON `labels` (`asset_id`, `column_id`, `kind`, `value`) WHERE removed_at IS NULL;
-- Create index "label_kind_value" to table: "labels"
CREATE INDEX `label_kind_value` ON `labels` (`kind`, `value`);
-- Create "schema_changes" table
CREATE TABLE `schema_changes` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `at` datetime NOT NULL, `source` text NOT NULL, `schema_id` integer NULL, `changes` text NOT NULL, PRIMARY KEY (`id`));
-- Create index "schemachange_asset_id_id" to table: "schema_changes"
CREATE INDEX `schemachange_asset_id_id` ON `schema_changes` (`asset_id`, `id`);
-- Create "search_docs" table
CREATE TABLE `search_docs` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `asset_id` uuid NOT NULL, `kind` text NOT NULL, `status` text NOT NULL, `namespace` text NOT NULL, `name` text NOT NULL, `name_key` text NOT NULL, `t_name` text NOT NULL, `t_former` text NOT NULL, `t_labels` text NOT NULL, `t_body` text NOT NULL, `asset_version` integer NOT NULL);
-- Create index "search_docs_asset_id_key" to table: "search_docs"
CREATE UNIQUE INDEX `search_docs_asset_id_key` ON `search_docs` (`asset_id`);
-- Create index "searchdoc_name_key" to table: "search_docs"
CREATE INDEX `searchdoc_name_key` ON `search_docs` (`name_key`);
-- Create "search_facets" table
CREATE TABLE `search_facets` (`id` integer NOT NULL PRIMARY KEY AUTOINCREMENT, `doc_id` integer NOT NULL, `facet` text NOT NULL, `value` text NOT NULL);
-- Create index "searchfacet_doc_id_facet_value" to table: "search_facets"
CREATE UNIQUE INDEX `searchfacet_doc_id_facet_value` ON `search_facets` (`doc_id`, `facet`, `value`);
-- Create index "searchfacet_facet_value_doc_id" to table: "search_facets"
CREATE INDEX `searchfacet_facet_value_doc_id` ON `search_facets` (`facet`, `value`, `doc_id`);
-- Create "suggestion_decisions" table
CREATE TABLE `suggestion_decisions` (`id` uuid NOT NULL, `asset_id` uuid NOT NULL, `column_path` text NOT NULL, `tag` text NOT NULL, `from_column_id` uuid NOT NULL, `decided_by` text NOT NULL, `decided_at` datetime NOT NULL, PRIMARY KEY (`id`));
-- Create index "suggestiondecision_asset_id_column_path_tag_from_column_id" to table: "suggestion_decisions"
CREATE UNIQUE INDEX `suggestiondecision_asset_id_column_path_tag_from_column_id` ON `suggestion_decisions` (`asset_id`, `column_path`, `tag`, `from_column_id`);
