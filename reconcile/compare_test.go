package reconcile

import (
	"slices"
	"testing"
	"time"
)

// TestClassify: what a difference is depends on where it is and how old the window is.
func TestClassify(t *testing.T) {
	since := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	spec := &Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
		DedupOld: FirstWins, DedupNew: LastWins, LagBoundSeconds: 6 * 3600, SampleSize: 10}
	rec := func(day, hour int, id, v string) row {
		return row{at: since.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour), vals: []string{id, v}}
	}
	cases := []struct {
		name string
		old  []row
		new  []row
		now  time.Time
		want []Class
	}{
		{"Same", []row{rec(0, 1, "1", "a")}, []row{rec(0, 1, "1", "a")}, since.AddDate(0, 0, 3), []Class{}},
		{"OrderAndDecimalsDoNotMatter", []row{rec(0, 1, "1", "a"), rec(0, 2, "2", "b")}, []row{rec(0, 2, "2", "b"), rec(0, 1, "1", "a")}, since.AddDate(0, 0, 3), []Class{}},
		{"LagInTheNewestWindow", []row{rec(0, 1, "1", "a")}, nil, since.Add(25 * time.Hour), []Class{Lag}},
		{"LagPastTheBoundIsDivergence", []row{rec(0, 1, "1", "a")}, nil, since.AddDate(0, 0, 2), []Class{Divergence}},
		{"OnlyOnTheNewSide", nil, []row{rec(0, 1, "1", "a")}, since.AddDate(0, 0, 3), []Class{Divergence}},
		{"DuplicateResolvedByTheRule", []row{rec(0, 1, "1", "b")}, []row{rec(0, 1, "1", "a"), rec(0, 3, "1", "b")}, since.AddDate(0, 0, 3), []Class{Duplication}},
		{"DuplicateAndTheRulePicksAnotherValue", []row{rec(0, 1, "1", "a")}, []row{rec(0, 1, "1", "a"), rec(0, 3, "1", "b")}, since.AddDate(0, 0, 3), []Class{Duplication, Divergence}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, n := newSide(spec.DedupOld, 1), newSide(spec.DedupNew, 1)
			for _, r := range tc.old {
				o.add(r)
			}
			for _, r := range tc.new {
				n.add(r)
			}
			ws := compare(spec, o, n, tc.now)
			if len(ws) != 1 || !slices.Equal(ws[0].Classes, tc.want) {
				t.Fatalf("windows %+v; want one with classes %v", ws, tc.want)
			}
			// The checksums are over the deduplicated records: they differ exactly when the facts do.
			differ := slices.Contains(tc.want, Divergence) || slices.Contains(tc.want, Lag)
			if differ != (ws[0].Old.Checksum != ws[0].New.Checksum) {
				t.Fatalf("checksums %s and %s for classes %v", ws[0].Old.Checksum, ws[0].New.Checksum, tc.want)
			}
		})
	}
}

func TestCanonDecimal(t *testing.T) {
	for in, want := range map[string]string{"12.50": "12.5", "12.00": "12", "-0.10": "-0.1", "7": "7", "0.000": "0"} {
		if got := canonDecimal(in); got != want {
			t.Errorf("canonDecimal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSampleQuotesValuesOnlyWhenAsked: differing values are data; a sample names the key and the
// column unless the spec says to quote values.
func TestSampleQuotesValuesOnlyWhenAsked(t *testing.T) {
	since := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	for _, quote := range []bool{false, true} {
		spec := &Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"ssn"}, WindowSeconds: 86400, Since: since,
			DedupOld: FirstWins, DedupNew: FirstWins, SampleSize: 10, QuoteValues: quote}
		o, n := newSide(FirstWins, 1), newSide(FirstWins, 1)
		o.add(row{at: since, vals: []string{"1", "123-45-6789"}})
		n.add(row{at: since, vals: []string{"1", "987-65-4321"}})
		ws := compare(spec, o, n, since.AddDate(0, 0, 3))
		s := ws[0].Sample
		if len(s) != 1 || s[0].Key != "1" || s[0].Column != "ssn" || (s[0].Old != "") != quote || (s[0].New != "") != quote {
			t.Fatalf("quote %v: sample %+v", quote, s)
		}
	}
}
