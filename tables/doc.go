// Package tables owns Tidemark's knowledge of Apache Iceberg tables: binding each table to an
// asset through its table-uuid, registering tables by metadata location, syncing them from
// configured Iceberg catalogs (a reconciliation that adds, renames and marks deleted, never
// touching a file), inspecting their snapshots, manifests and files through iceberg-go, and
// computing layout health with recommendations. What it reads is read through one guard (only
// under the warehouse roots, only regular files, within the size limit), and what a client
// names is read one way (ground.go).
//
// The warehouses Tidemark serves are package warehouse's, built on this one: tables keeps their
// configuration (their locations are roots), the table rows both share, and the Served hook
// through which its own changes of a served table (Drop, RemoveSnapshots) commit there.
//
// Every read of a table's metadata (a sync, an inspection, a registration) records its snapshots
// as versions of the table's asset through package versions, and marks expired the versions
// the table no longer has (versions.go).
//
// Manifest lists and manifests are immutable, so what was read from each is cached in the
// database by path: a refresh after new commits reads only the new ones. The cache is also the
// record the cleanup scans compare storage against.
package tables
