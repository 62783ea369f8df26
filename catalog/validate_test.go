package catalog_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tidemark/tidemark/catalog"
)

func TestValidateName(t *testing.T) {
	cases := []struct {
		ns, name string
		ok       bool
	}{
		{"warehouse", "orders", true},
		{"postgres://db.internal:5432", "analytics.public.orders", true},
		{"s3://bucket", "path/to/data set", true},
		{"ns", "ünïcödé", true},
		{"", "orders", false},
		{"ns", "", false},
		{"ns", " orders", false},
		{"ns", "orders\n", false},
		{"ns", "a\tb", false},
		{"ns", string([]byte{0xff, 0xfe}), false},
		{strings.Repeat("x", catalog.MaxNamespaceBytes+1), "n", false},
		{"ns", strings.Repeat("x", catalog.MaxNameBytes), true},
	}
	for _, tc := range cases {
		err := catalog.ValidateName(tc.ns, tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateName(%q, %q) = %v, want ok=%v", tc.ns, tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, catalog.ErrInvalid) {
			t.Errorf("ValidateName(%q, %q) = %v, not ErrInvalid", tc.ns, tc.name, err)
		}
	}
}

// FuzzValidateName checks that whatever the validator accepts is safe to store and show: valid
// UTF-8, within the limits, no control characters, no surrounding space; and that it never panics.
func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"orders", "", " x", "a\x00", "postgres://h:1", "\xff", "ü"} {
		f.Add("warehouse", s)
	}
	f.Fuzz(func(t *testing.T, ns, name string) {
		err := catalog.ValidateName(ns, name)
		if err != nil {
			if !errors.Is(err, catalog.ErrInvalid) || err.Error() == "" {
				t.Fatalf("error %v is not a described ErrInvalid", err)
			}
			return
		}
		for _, s := range []string{ns, name} {
			if s == "" || !utf8.ValidString(s) || strings.TrimSpace(s) != s {
				t.Fatalf("accepted %q", s)
			}
			for _, r := range s {
				if unicode.IsControl(r) {
					t.Fatalf("accepted control character in %q", s)
				}
			}
		}
		if len(ns) > catalog.MaxNamespaceBytes || len(name) > catalog.MaxNameBytes {
			t.Fatalf("accepted oversized %d/%d", len(ns), len(name))
		}
	})
}
