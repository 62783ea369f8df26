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

// TestStatements: on SQLite the parts are Each's chunks; on PostgreSQL one part of everything;
// nothing for nothing; every element once, in order.
func TestStatements(t *testing.T) {
	for _, sqlite := range []bool{true, false} {
		for _, n := range []int{0, 1, Size, Size + 1, 3*Size - 7} {
			xs := make([]int, n)
			for i := range xs {
				xs[i] = i
			}
			var got []int
			parts := 0
			if err := EachStatement(sqlite, xs, func(part []int) error {
				parts++
				got = append(got, part...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			want := (n + Size - 1) / Size
			if !sqlite {
				want = min(n, 1)
			}
			if parts != want || !slices.Equal(got, xs) {
				t.Errorf("sqlite=%v, %d elements: %d parts (want %d), elements in order %v", sqlite, n, parts, want, slices.Equal(got, xs))
			}
		}
	}
}
