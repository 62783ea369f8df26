package cleanup

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 30, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		spec string
		in   []time.Time
		out  []time.Time
		bad  bool
	}{
		{spec: "", in: []time.Time{at(0, 0), at(13, 0)}},
		{spec: "01:00-05:00", in: []time.Time{at(1, 0), at(4, 59)}, out: []time.Time{at(0, 59), at(5, 0), at(13, 0)}},
		{spec: "22:30-04:00", in: []time.Time{at(22, 30), at(23, 59), at(0, 0), at(3, 59)}, out: []time.Time{at(22, 29), at(4, 0), at(12, 0)}},
		{spec: "20:00-24:00", in: []time.Time{at(23, 59)}, out: []time.Time{at(0, 0)}},
		{spec: "1-5", bad: true},
		{spec: "25:00-01:00", bad: true},
		{spec: "03:00-03:00", bad: true},
		{spec: "01:00-05:00x", bad: true},
		{spec: "1:00-05:00", bad: true},
	} {
		w, err := ParseWindow(tc.spec)
		if (err != nil) != tc.bad {
			t.Errorf("%q: error %v, want bad=%v", tc.spec, err, tc.bad)
			continue
		}
		for _, x := range tc.in {
			if !w.Contains(x) {
				t.Errorf("%q should contain %s", tc.spec, x.Format("15:04"))
			}
		}
		for _, x := range tc.out {
			if w.Contains(x) {
				t.Errorf("%q should not contain %s", tc.spec, x.Format("15:04"))
			}
		}
	}
}
