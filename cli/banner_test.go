package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInvokedAs: the banner names the command the reader has.
func TestInvokedAs(t *testing.T) {
	for _, tc := range []struct{ arg0, want string }{
		{filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "tidemark"), "go run ."},
		{"tidemark", "tidemark"},
		{"/usr/local/bin/tidemark", "/usr/local/bin/tidemark"},
		{"./tidemark", "./tidemark"},
	} {
		if got := invokedAs(tc.arg0); got != tc.want {
			t.Errorf("invokedAs(%q) = %q, want %q", tc.arg0, got, tc.want)
		}
	}
}
