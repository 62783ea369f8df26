package handlers

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
)

// FuzzAppendString: the compact lineage encoder writes names (outside input) by hand; whatever
// the name, the result is one JSON string that decodes to it (invalid UTF-8 as encoding/json
// would write it).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "orders", `a"b`, `back\slash`, "tab\there", "\x01\x1f", "ünïcødé", "\u2028", "\xff\xfe", "</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString([]byte("["), s)
		b = append(b, ']')
		var got []string
		if err := json.Unmarshal(b, &got); err != nil || len(got) != 1 {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		want := s
		if !utf8.ValidString(s) {
			q, _ := json.Marshal(s)
			_ = json.Unmarshal(q, &want)
		}
		if got[0] != want {
			t.Fatalf("appendString(%q) decodes to %q", s, got[0])
		}
	})
}

func TestAppendUUID(t *testing.T) {
	for range 100 {
		id := uuid.New()
		if got := string(appendUUID(nil, id)); got != id.String() {
			t.Fatalf("appendUUID = %s; want %s", got, id)
		}
	}
}
