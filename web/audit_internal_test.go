package web

import (
	"slices"
	"testing"
)

// TestReadableValue: an audit change's structured value reads as fields, never as raw JSON.
func TestReadableValue(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"Plain", "orders", []string{"orders"}},
		{"SchemaChange", `[{"op":"added","column_id":"0192","field_id":3,"path":"email","type":"string"},{"op":"retyped","path":"amount","type":"decimal(10,2)","old_type":"double"}]`,
			[]string{"added, email, field id 3, type string", "retyped, amount, old type double, type decimal(10,2)"}},
		{"List", `["a","b"]`, []string{"a, b"}},
		{"Record", `{"old_side":"postgres table t","owner":"team"}`, []string{"old side: postgres table t", "owner: team"}},
		{"OnlyIDs", `[{"id":"x1"}]`, []string{"id x1"}},
		{"NotJSON", "[not json", []string{"[not json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readableValue(tc.in); !slices.Equal(got, tc.want) {
				t.Fatalf("readableValue(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
