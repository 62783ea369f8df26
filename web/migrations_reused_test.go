package web

import (
	"testing"

	"github.com/tidemark/tidemark/reconcile"
)

// TestReusedText: a run's verdict names every part of it that is the previous run's, and
// nothing when the run read everything.
func TestReusedText(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost reconcile.Cost
		want string
	}{
		{"ReadEverything", reconcile.Cost{Deep: 2}, ""},
		{"NewSide", reconcile.Cost{Reused: 99}, " The new-side figures of 99 windows are the previous run's (nothing changed there since)."},
		{"OldSide", reconcile.Cost{ReusedOld: 1}, " The old-side figures of 1 window are the previous run's (nothing changed there since)."},
		{"BothAndComparisons", reconcile.Cost{ReusedOld: 98, Reused: 97, ReusedDeep: 2},
			" The figures of 98 windows on the old side and 97 windows on the new side are the previous run's (nothing changed there since)." +
				" The record-by-record comparisons of 2 differing windows are the previous run's (neither side changed in them since)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reusedText(tc.cost); got != tc.want {
				t.Errorf("reusedText(%+v) = %q, want %q", tc.cost, got, tc.want)
			}
		})
	}
}
