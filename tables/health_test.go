package tables

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDistributionSelects: the selected median and 90th percentile are those of the sorted
// values, with many equal values, few, or none, and in sorted or reversed order.
func TestDistributionSelects(t *testing.T) {
	bySorting := func(v []int64) Distribution {
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		var sum float64
		for _, x := range sorted {
			sum += float64(x)
		}
		return Distribution{Min: sorted[0], Median: sorted[len(v)/2], Avg: math.Round(sum/float64(len(v))*100) / 100,
			P90: sorted[min(len(v)-1, len(v)*9/10)], Max: sorted[len(v)-1]}
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var cases [][]int64
	for _, tc := range []struct{ n, distinct int }{{1, 1}, {2, 2}, {3, 1}, {10, 3}, {1000, 1}, {1000, 3}, {1000, 1000}, {78001, 5000}, {500, 2}} {
		v := make([]int64, tc.n)
		for i := range v {
			v[i] = rnd.Int64N(int64(tc.distinct)) - int64(tc.distinct/3)
		}
		cases = append(cases, v)
	}
	up, down := make([]int64, 100_000), make([]int64, 100_000)
	for i := range up {
		up[i], down[i] = int64(i), int64(len(down)-i)
	}
	cases = append(cases, up, down)
	for _, v := range cases {
		want := bySorting(v)
		if got := distribution(v); got != want {
			t.Errorf("%d values: got %+v, want %+v", len(v), got, want)
		}
	}
	if got := distribution(nil); got != (Distribution{}) {
		t.Errorf("no values: %+v", got)
	}
}
