// Package warehouse owns the warehouses Tidemark serves over the Iceberg REST catalog protocol:
// their namespaces, their tables' metadata pointers, and every commit that moves one (a
// compare-and-swap in Tidemark's own store, all or nothing across tables). It keeps the record
// each commit leaves: the commit rows (committed, refused, abandoned or pending until settled),
// the write-path inventory (the files each commit added, removed or staged), the known leftovers
// that inventory implies, commit health, and the Idempotency-Keys that make a retried request
// one application. It is also how tables itself changes a served table (a drop, the cleanup
// bot's snapshot expiry: tables.Served).
//
// It is built on tables, which keeps the warehouses' configuration, the guarded IO and the
// table rows it shares with the tables Tidemark observes; tables never imports it.
package warehouse
