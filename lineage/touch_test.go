package lineage

import (
	"testing"
	"time"
)

// TestEdgeTouchMerge: an edge a batch saw both before and after it became known (a concurrent
// Sync added it to the graph mid-batch) keeps the earliest first sight and the latest last one
// with that sight's run. The merge used to move the last sight up with the other record's run,
// so the edge named the wrong run last (TestConcurrentBatchesShareDatasets failed now and then).
func TestEdgeTouchMerge(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	cases := []struct {
		name   string
		cur, o edgeTouch
		want   edgeTouch
	}{
		{"other later", edgeTouch{at(1), at(1), "a"}, edgeTouch{at(2), at(2), "b"}, edgeTouch{at(1), at(2), "b"}},
		{"other earlier", edgeTouch{at(2), at(2), "a"}, edgeTouch{at(1), at(1), "b"}, edgeTouch{at(1), at(2), "a"}},
		{"other inside", edgeTouch{at(1), at(4), "a"}, edgeTouch{at(2), at(3), "b"}, edgeTouch{at(1), at(4), "a"}},
		{"other around", edgeTouch{at(2), at(3), "a"}, edgeTouch{at(1), at(4), "b"}, edgeTouch{at(1), at(4), "b"}},
		{"tie", edgeTouch{at(1), at(2), "a"}, edgeTouch{at(2), at(2), "b"}, edgeTouch{at(1), at(2), "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.cur
			got.merge(&tc.o)
			if got != tc.want {
				t.Errorf("merge = %v..%v by %s, want %v..%v by %s", got.first, got.last, got.lastRun, tc.want.first, tc.want.last, tc.want.lastRun)
			}
		})
	}
}
