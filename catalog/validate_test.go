package catalog_test

import (
	"errors"
	"fmt"
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
		{"ns", "orders-\u05d0\u05d1", true}, // right-to-left letters are text, not overrides
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
// TestNamesAreVisible: characters that hide themselves or turn text around are refused in
// namespaces and names, with the code point in the message.
func TestNamesAreVisible(t *testing.T) {
	for _, r := range []rune{0x85, 0x202E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202D, 0x2066, 0x2069, 0xFEFF, 0xAD, 0x2028, 0x2029, 0x061C, 0x9F} {
		for _, tc := range []struct{ field, ns, name string }{
			{"name", "warehouse", "ord" + string(r) + "ers"},
			{"name", "warehouse", "orders" + string(r)},
			{"namespace", "ware" + string(r) + "house", "orders"},
		} {
			err := catalog.ValidateName(tc.ns, tc.name)
			var ce *catalog.Error
			if !errors.As(err, &ce) || !errors.Is(err, catalog.ErrInvalid) || ce.Field != tc.field || !strings.Contains(ce.Message, fmt.Sprintf("%U", r)) {
				t.Errorf("ValidateName(%+q, %+q) = %v, want ErrInvalid on %s naming %U", tc.ns, tc.name, err, tc.field, r)
			}
		}
	}
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"orders", "", " x", "a\x00", "postgres://h:1", "\xff", "ü", "a\u202eb", "a\u200bb", "a\u0085b"} {
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
				if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029 {
					t.Fatalf("accepted invisible character %U in %q", r, s)
				}
			}
		}
		if len(ns) > catalog.MaxNamespaceBytes || len(name) > catalog.MaxNameBytes {
			t.Fatalf("accepted oversized %d/%d", len(ns), len(name))
		}
	})
}
