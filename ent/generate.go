// Package ent holds Tidemark's storage schema (ent/schema) and the code ent generates from it.
// Regenerate with `go generate ./...` after changing a schema, then add a migration (see
// storage/README.md).
package ent

//go:generate go tool ent generate --feature sql/lock,sql/execquery,sql/versioned-migration ./schema
