package usage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

// FuzzRowsJSON: whatever text the rows hold (valid UTF-8, no NUL: check refuses the rest), the
// hand-written encoding is valid JSON that decodes back to the same values.
func FuzzRowsJSON(f *testing.F) {
	f.Add("plain", "with \"quotes\" and \\ and \n\t and ü")
	f.Add("", "\x01\x1f")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !validText(a) || !validText(b) {
			return
		}
		id := uuid.Must(uuid.NewV7())
		at := time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.UTC)
		cols := []column{{"a", ""}, {"b", ""}, {"id", ""}, {"at", ""}, {"n", ""}, {"z", ""}}
		doc := appendRowsJSON(nil, cols, [][]any{{a, b, id, at, int64(-42), nil}})
		var got []map[string]any
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatalf("invalid JSON %q: %v", doc, err)
		}
		r := got[0]
		if r["a"] != a || r["b"] != b || r["id"] != id.String() || r["at"] != at.Format(time.RFC3339Nano) || r["n"] != float64(-42) || r["z"] != nil {
			t.Fatalf("round trip of %q, %q gave %v", a, b, r)
		}
	})
}

func validText(s string) bool {
	r := Record{Kind: "read", At: time.Now(), QueryID: "q", AssetID: uuid.New(), Actor: s}
	return (&Service{lateness: time.Hour}).check(r, time.Now(), time.Hour) == ""
}
