package lineage

import (
	"encoding/json"
	"strconv"
	"testing"
)

// TestStatedVersions: the version an event states for an input or output, read exactly: a
// snapshot ID past 2^53 keeps every digit, the Iceberg report wins over the version facet and
// the disagreement is kept, and an unusable snapshotId is kept as the text stated, never as a
// snapshot.
func TestStatedVersions(t *testing.T) {
	const big = `9007199254740993` // 2^53 + 1: a float64 would make it ...992
	cases := []struct {
		name       string
		ds         string
		input      bool
		want       StatedVersion
		wantStated bool
	}{
		{"ScanReportPastFloat", `{"inputFacets":{"icebergScanReport":{"snapshotId":` + big + `}}}`, true,
			StatedVersion{Version: big, Snapshot: 9007199254740993, HasSnapshot: true, Source: "icebergScanReport"}, true},
		{"CommitReport", `{"outputFacets":{"icebergCommitReport":{"snapshotId":42,"operation":"append"}}}`, false,
			StatedVersion{Version: "42", Snapshot: 42, HasSnapshot: true, Source: "icebergCommitReport"}, true},
		{"QuotedSnapshot", `{"inputFacets":{"icebergScanReport":{"snapshotId":"77"}}}`, true,
			StatedVersion{Version: "77", Snapshot: 77, HasSnapshot: true, Source: "icebergScanReport"}, true},
		{"VersionFacet", `{"facets":{"version":{"datasetVersion":"v2025-01-01"}}}`, true,
			StatedVersion{Version: "v2025-01-01", Source: "version"}, true},
		{"NumericVersionFacet", `{"facets":{"version":{"datasetVersion":"123"}}}`, false,
			StatedVersion{Version: "123", Snapshot: 123, HasSnapshot: true, Source: "version"}, true},
		{"ReportWinsAndConflictKept", `{"facets":{"version":{"datasetVersion":"5"}},"inputFacets":{"icebergScanReport":{"snapshotId":6}}}`, true,
			StatedVersion{Version: "6", Snapshot: 6, HasSnapshot: true, Source: "icebergScanReport", Conflict: `the version facet says "5"`}, true},
		{"FractionalSnapshotFallsBack", `{"facets":{"version":{"datasetVersion":"8"}},"inputFacets":{"icebergScanReport":{"snapshotId":1.5}}}`, true,
			StatedVersion{Version: "8", Snapshot: 8, HasSnapshot: true, Source: "version",
				Conflict: `the icebergScanReport facet's snapshotId is unusable: snapshotId "1.5" is not a 64-bit integer`}, true},
		// Accepted and kept as the stated text, flagged later since no table has it.
		{"ExponentKeptAsText", `{"inputFacets":{"icebergScanReport":{"snapshotId":1e20}}}`, true,
			StatedVersion{Version: "1e20", Source: "icebergScanReport", Conflict: `snapshotId "1e20" is not a 64-bit integer`}, true},
		{"NonNumericKeptAsText", `{"inputFacets":{"icebergScanReport":{"snapshotId":"latest"}}}`, true,
			StatedVersion{Version: "latest", Source: "icebergScanReport", Conflict: `snapshotId "latest" is not a 64-bit integer`}, true},
		{"ObjectSnapshotIsNothing", `{"inputFacets":{"icebergScanReport":{"snapshotId":{"a":1}}}}`, true, StatedVersion{}, false},
		{"OutputFacetOnAnInputIgnored", `{"outputFacets":{"icebergCommitReport":{"snapshotId":9}}}`, true, StatedVersion{}, false},
		{"NothingStated", `{"facets":{"schema":{"fields":[]}}}`, false, StatedVersion{}, false},
		{"EmptyVersion", `{"facets":{"version":{"datasetVersion":""}}}`, false, StatedVersion{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d Dataset
			if err := json.Unmarshal([]byte(tc.ds), &d); err != nil {
				t.Fatal(err)
			}
			get := d.OutputVersion
			if tc.input {
				get = d.InputVersion
			}
			got, ok := get()
			if ok != tc.wantStated || got != tc.want {
				t.Fatalf("got %+v (%v), want %+v (%v)", got, ok, tc.want, tc.wantStated)
			}
		})
	}
}

// FuzzStatedVersions: whatever the facets hold, a stated snapshot is exactly the decimal version
// it reports, and a version is never longer than the bound.
func FuzzStatedVersions(f *testing.F) {
	f.Add(`{"snapshotId":9007199254740993}`, `{"datasetVersion":"1"}`)
	f.Add(`{"snapshotId":"12"}`, `{"datasetVersion":"x"}`)
	f.Add(`[]`, `null`)
	f.Fuzz(func(t *testing.T, report, version string) {
		d := Dataset{Facets: Facets{"version": json.RawMessage(version)},
			InputFacets: Facets{"icebergScanReport": json.RawMessage(report)}}
		v, ok := d.InputVersion()
		if !ok {
			return
		}
		if v.Version == "" || len(v.Version) > maxVersionLen {
			t.Fatalf("version of %d bytes", len(v.Version))
		}
		if v.HasSnapshot && v.Version != itoa(v.Snapshot) {
			t.Fatalf("stated %+v", v)
		}
		// A report's text that is not a snapshot always says why.
		if v.Source == "icebergScanReport" && !v.HasSnapshot && v.Conflict == "" {
			t.Fatalf("stated %+v without a reason", v)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
