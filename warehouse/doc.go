// Package warehouse owns the warehouses Tidemark serves over the Iceberg REST catalog protocol:
// their namespaces, their tables' metadata pointers, and every commit that moves one (a
// compare-and-swap in Tidemark's own store, all or nothing across tables). It keeps the record
// each commit leaves: the commit rows (committed, refused, abandoned or pending until settled),
// the write-path inventory (the files each commit added, removed or staged), the known leftovers
// that inventory implies, commit health, and the Idempotency-Keys that make a retried request
// one application. It says which assets are served (their name and life are the catalog's) and
// which served tables to inspect again after their commits. It is also how tables itself
// changes a served table (a drop, the cleanup bot's snapshot expiry: tables.Served).
//
// A commit reads top to bottom, a file a step: commit.go is the entry (Commit) and the order of
// the steps; stage.go reads each table and checks the requirements; prepare.go checks where the
// commit's files may be (the warehouse, the table's own ground) and gives new tables their
// assets; metadata.go writes the new metadata file; swap.go moves the pointers by
// compare-and-swap and records the inventory (inventory.go) in the same transaction; settle.go
// settles a commit that did not happen, or was left pending; versions.go then records the
// snapshots a commit added as versions and marks those it removed expired (after the swap,
// never failing the commit). record.go reads the record back.
// Around them: namespaces.go, served.go (create, register, load, rename, drop), views.go
// (served Iceberg views: their pointers, commits by compare-and-swap, stated lineage and
// versions; views_*.go),
// idempotency.go, leftovers.go, commithealth.go, servedcheck.go, bounds.go, hooks.go.
//
// It is built on tables, which keeps the warehouses' configuration, the guarded IO and the
// table rows it shares with the tables Tidemark observes; tables never imports it.
package warehouse
