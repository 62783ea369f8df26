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

// SymlinkID is the external ID of an OpenLineage dataset identifier: "<namespace>|<name>", with
// '%' and '|' escaped so the pair is unambiguous.
func SymlinkID(namespace, name string) ExternalIDInput {
	esc := strings.NewReplacer("%", "%25", "|", "%7C")
	return ExternalIDInput{System: SystemSymlink, Value: esc.Replace(namespace) + "|" + esc.Replace(name)}
}
