package sqltime

import (
	"testing"
	"time"
)

// TestScan: every form either database hands back reads as the same instant in UTC; NULL is zero;
// anything else is an error.
func TestScan(t *testing.T) {
	want := time.Date(2026, 12, 4, 9, 30, 1, 500_000_000, time.UTC)
	for _, src := range []any{want.In(time.FixedZone("x", 3600)), "2026-12-04 10:30:01.5+01:00", []byte("2026-12-04T09:30:01.5Z"),
		"2026-12-04 09:30:01.5", "2026-12-04 09:30:01.5Z"} {
		var v Time
		if err := v.Scan(src); err != nil || !v.T.Equal(want) || v.T.Location() != time.UTC {
			t.Errorf("Scan(%v) = %v, %v; want %v", src, v.T, err, want)
		}
	}
	v := Time{T: want}
	if err := v.Scan(nil); err != nil || !v.T.IsZero() {
		t.Errorf("Scan(nil) = %v, %v", v.T, err)
	}
	for _, bad := range []any{"yesterday", 42} {
		if err := v.Scan(bad); err == nil {
			t.Errorf("Scan(%v) accepted", bad)
		}
	}
}
