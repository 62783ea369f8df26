package tables

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParseFilesCursor: a cursor from a client either is refused or names a non-negative
// position that prints back to the same cursor.
func FuzzParseFilesCursor(f *testing.F) {
	for _, s := range []string{"", "42:0:0", "42:3:17", "42:-1:0", "41:0:0", "42:0", "a:b:c", "42:01:2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mi, ei, err := parseFilesCursor(s, 42)
		if err != nil {
			return
		}
		if mi < 0 || ei < 0 {
			t.Fatalf("%q parsed to a negative position %d:%d", s, mi, ei)
		}
		if s != "" && strings.Count(s, ":") != 2 {
			t.Fatalf("%q accepted with the wrong shape", s)
		}
		if s == "" {
			if mi != 0 || ei != 0 {
				t.Fatalf("empty cursor starts at %d:%d", mi, ei)
			}
			return
		}
		// What it accepted names a position the server would print the same way (no leading
		// zeros, signs or spaces smuggled through).
		back := fmt.Sprintf("42:%d:%d", mi, ei)
		if m2, e2, err := parseFilesCursor(back, 42); err != nil || m2 != mi || e2 != ei {
			t.Fatalf("%q -> %d:%d does not round-trip: %v", s, mi, ei, err)
		}
	})
}

// FuzzLocationName: every location gets a namespace, and the s3 scheme aliases name the same
// dataset as s3.
func FuzzLocationName(f *testing.F) {
	for _, s := range []string{"s3://bucket/db/t", "file:///tmp/wh/db/t", "/tmp/wh/db/t", "hdfs://nn:8020/wh/t", "gs://b/x/", "abfss://c@a.dfs.core.windows.net/p", "::", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		ns, _ := LocationName(loc)
		if ns == "" {
			t.Fatalf("%q: empty namespace", loc)
		}
		if rest, ok := strings.CutPrefix(loc, "s3://"); ok {
			a1, b1 := LocationName("s3a://" + rest)
			a2, b2 := LocationName(loc)
			if a1 != a2 || b1 != b2 {
				t.Fatalf("s3a and s3 differ for %q: %q %q vs %q %q", loc, a1, b1, a2, b2)
			}
		}
	})
}
