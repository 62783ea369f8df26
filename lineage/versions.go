package lineage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// StatedVersion is the version of a dataset an OpenLineage event states for one of its inputs
// (the version the run read) or outputs (the version it produced): for an Iceberg table the
// snapshot ID, for anything else the DatasetVersionDatasetFacet's datasetVersion as sent.
type StatedVersion struct {
	// Version is the snapshot ID in decimal, or datasetVersion as sent.
	Version string
	// Snapshot is the Iceberg snapshot ID when the facet gave one exactly (HasSnapshot).
	Snapshot    int64
	HasSnapshot bool
	// Source is the facet that stated it: "icebergScanReport", "icebergCommitReport" or
	// "version".
	Source string
	// Conflict says, when two facets of the dataset disagree, what the other one said; the
	// Iceberg report (the engine's own account of the scan or commit) is kept.
	Conflict string
}

// Facet names (OpenLineage: IcebergScanReportInputDatasetFacet, IcebergCommitReportOutputDatasetFacet,
// DatasetVersionDatasetFacet).
const (
	facetScanReport   = "icebergScanReport"
	facetCommitReport = "icebergCommitReport"
	facetVersion      = "version"
)

// maxVersionLen bounds a stated datasetVersion: a version names a snapshot or a file's
// generation, never a document.
const maxVersionLen = 256

// InputVersion is the version the event states the run read of an input: the scan report's
// snapshot, else the dataset's version facet.
func (d Dataset) InputVersion() (StatedVersion, bool) {
	return d.statedVersion(d.InputFacets, facetScanReport)
}

// OutputVersion is the version the event states the run produced of an output: the commit
// report's snapshot, else the dataset's version facet.
func (d Dataset) OutputVersion() (StatedVersion, bool) {
	return d.statedVersion(d.OutputFacets, facetCommitReport)
}

func (d Dataset) statedVersion(io Facets, report string) (StatedVersion, bool) {
	rep, repOK, repText, repErr := snapshotFacet(io, report)
	ver, verOK := versionFacet(d.Facets)
	switch {
	case repOK:
		out := StatedVersion{Version: strconv.FormatInt(rep, 10), Snapshot: rep, HasSnapshot: true, Source: report}
		if verOK && ver != out.Version {
			out.Conflict = fmt.Sprintf("the version facet says %q", ver)
		}
		return out, true
	case verOK:
		out := StatedVersion{Version: ver, Source: facetVersion}
		if n, err := strconv.ParseInt(ver, 10, 64); err == nil && strconv.FormatInt(n, 10) == ver {
			out.Snapshot, out.HasSnapshot = n, true
		}
		if repErr != "" {
			out.Conflict = fmt.Sprintf("the %s facet's snapshotId is unusable: %s", report, repErr)
		}
		return out, true
	case repText != "":
		// Not a snapshot ID, and nothing else names the version: kept as the text the producer
		// stated (a table never has it, so the edge is flagged), never re-bound to a guess.
		return StatedVersion{Version: repText, Source: report, Conflict: repErr}, true
	}
	return StatedVersion{}, false
}

// snapshotFacet reads a report facet's snapshotId exactly. The schema types it as a JSON number
// and snapshot IDs routinely exceed 2^53, so it is read as written, never through a float; a
// fraction, an exponent or a value outside int64 is unusable (reason says why; text is what was
// sent, at most maxVersionLen bytes, when it was a string or a number).
func snapshotFacet(f Facets, name string) (id int64, ok bool, text, reason string) {
	raw, present := f[name]
	if !present || len(raw) == 0 || string(raw) == "null" {
		return 0, false, "", ""
	}
	var v struct {
		SnapshotID json.RawMessage `json:"snapshotId"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false, "", "the facet is not an object"
	}
	s := string(bytes.TrimSpace(v.SnapshotID))
	if s == "" || s == "null" {
		return 0, false, "", "it has no snapshotId"
	}
	if s[0] == '"' {
		var str string
		if json.Unmarshal([]byte(s), &str) != nil {
			return 0, false, "", "snapshotId is not a JSON string or number"
		}
		s = str // some producers quote longs
	} else if s[0] == '{' || s[0] == '[' || s == "true" || s == "false" {
		return 0, false, "", "snapshotId is not a number"
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if s == "" || len(s) > maxVersionLen {
			return 0, false, "", "snapshotId is empty or too long"
		}
		return 0, false, s, fmt.Sprintf("snapshotId %.40q is not a 64-bit integer", s)
	}
	return n, true, s, ""
}

// versionFacet reads the DatasetVersionDatasetFacet's datasetVersion (at most maxVersionLen
// bytes; a longer one is not a version).
func versionFacet(f Facets) (string, bool) {
	var v struct {
		DatasetVersion string `json:"datasetVersion"`
	}
	if !f.facet(facetVersion, &v) || v.DatasetVersion == "" || len(v.DatasetVersion) > maxVersionLen {
		return "", false
	}
	return v.DatasetVersion, true
}
