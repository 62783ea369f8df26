package handlers

import (
	"testing"

	"github.com/google/uuid"
)

func TestCursorRoundTrip(t *testing.T) {
	id := uuid.Must(uuid.NewV7())
	c := encodeCursor(id, "ns=a")
	got, err := decodeCursor(c, "ns=a")
	if err != nil || got != id {
		t.Fatalf("decode = %s, %v; want %s", got, err, id)
	}
	if _, err := decodeCursor(c, "ns=b"); err == nil {
		t.Fatal("a cursor from another filter was accepted")
	}
	for _, bad := range []string{"x", "!!!", encodeCursor(id, "")[:10], "djE6bm90LWEtdXVpZDow"} {
		if _, err := decodeCursor(bad, ""); err == nil {
			t.Errorf("decodeCursor(%q) accepted", bad)
		}
	}
}

// FuzzDecodeCursor: no input panics, and any accepted cursor is exactly what encodeCursor
// produces for the position it decodes to (so there is one spelling per position).
func FuzzDecodeCursor(f *testing.F) {
	f.Add(encodeCursor(uuid.Must(uuid.NewV7()), ""), "")
	f.Add("", "")
	f.Add("djE6", "q=x")
	f.Add("%%%", "")
	f.Fuzz(func(t *testing.T, s, scope string) {
		id, err := decodeCursor(s, scope)
		if err != nil || s == "" {
			return
		}
		if again := encodeCursor(id, scope); again != s {
			t.Fatalf("accepted %q, which encodes back as %q", s, again)
		}
	})
}
