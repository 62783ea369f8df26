package chunk

import (
	"errors"
	"slices"
	"testing"
)

func TestEach(t *testing.T) {
	for _, n := range []int{0, 1, Size, Size + 1, 3*Size - 7} {
		xs := make([]int, n)
		for i := range xs {
			xs[i] = i
		}
		var got []int
		calls := 0
		if err := Each(xs, func(part []int) error {
			if len(part) == 0 || len(part) > Size {
				t.Fatalf("part of %d", len(part))
			}
			calls++
			got = append(got, part...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, xs) || calls != (n+Size-1)/Size {
			t.Fatalf("n=%d: %d calls, %d elements back", n, calls, len(got))
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := Each(make([]int, 3*Size), func([]int) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("err %v after %d calls; want stop after 1", err, calls)
	}
}
