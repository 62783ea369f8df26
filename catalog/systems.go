package catalog

import "strings"

// External-ID systems that more than one package binds.
const (
	// SystemSymlink binds an OpenLineage dataset identifier (a symlink, or a table's storage
	// location named the way OpenLineage names datasets) to an asset.
	SystemSymlink = "openlineage.symlink"
	// SystemIcebergTable binds an Iceberg table's table-uuid, which survives renames.
	SystemIcebergTable = "iceberg-table-uuid"
)

// symlinkEscape is built once: building a Replacer costs more than using it, and ingest calls
// SymlinkID for every dataset of every event.
var symlinkEscape = strings.NewReplacer("%", "%25", "|", "%7C")

// SymlinkID is the external ID of an OpenLineage dataset identifier: "<namespace>|<name>", with
// '%' and '|' escaped so the pair is unambiguous.
func SymlinkID(namespace, name string) ExternalIDInput {
	return ExternalIDInput{System: SystemSymlink, Value: symlinkEscape.Replace(namespace) + "|" + symlinkEscape.Replace(name)}
}
