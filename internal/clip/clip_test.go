package clip

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc…"},
		{"aéb", 2, "a…"}, // é is two bytes: the cut backs off to a character boundary
		{"éé", 1, "…"},
	} {
		if got := String(tc.in, tc.n); got != tc.want {
			t.Errorf("String(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
