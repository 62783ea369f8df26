package reconcile

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortKeys: the radix sort orders as slices.Sort does, for sizes on both sides of its
// threshold, with repeats, extremes and digits every word shares.
func TestSortKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 1000, 1 << 16, 200_003} {
		for _, gen := range []func() uint64{r.Uint64, func() uint64 { return r.Uint64() % 50 }, func() uint64 { return r.Uint64()&^0xffff | 7 }} {
			a := make([]uint64, n)
			for i := range a {
				a[i] = gen()
			}
			if n > 2 {
				a[0], a[1] = 0, ^uint64(0)
			}
			want := slices.Clone(a)
			slices.Sort(want)
			sortKeys(a)
			if !slices.Equal(a, want) {
				t.Fatalf("n=%d: not sorted as slices.Sort sorts", n)
			}
		}
	}
}
