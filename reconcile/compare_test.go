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
			o, n := newSide(SourceSpec{}, spec.DedupOld, 1), newSide(SourceSpec{}, spec.DedupNew, 1)
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
			// The checksums are over every record of the window: they differ exactly when the
			// records do (the order they come in does not matter).
			differ := len(tc.want) > 0
			if differ != (ws[0].Old.Checksum != ws[0].New.Checksum) {
				t.Fatalf("checksums %s and %s for classes %v", ws[0].Old.Checksum, ws[0].New.Checksum, tc.want)
			}
		})
	}
}

// TestClassifyAcrossWindows: differences that only show across windows: a record whose time
// moved into the next window, a retry a day later, and history kept as versions.
func TestClassifyAcrossWindows(t *testing.T) {
	since := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	rec := func(day, hour int, id, v string) row {
		return row{at: since.AddDate(0, 0, day).Add(time.Duration(hour) * time.Hour), vals: []string{id, v}}
	}
	history := SourceSpec{Keys: HistoryKeys}
	cases := []struct {
		name     string
		old, new SourceSpec
		oldRows  []row
		newRows  []row
		want     [][]Class // per window, in order
	}{
		{"MovedIntoTheNextWindow", SourceSpec{}, SourceSpec{}, []row{rec(0, 23, "1", "a"), rec(0, 5, "2", "b")}, []row{rec(1, 1, "1", "a"), rec(0, 5, "2", "b")},
			[][]Class{{Moved}, {Moved}}},
		{"MovedInsideTheWindow", SourceSpec{}, SourceSpec{}, []row{rec(0, 3, "1", "a")}, []row{rec(0, 5, "1", "a")}, [][]Class{{Moved}}},
		{"RetryInTheNextWindow", SourceSpec{}, SourceSpec{}, []row{rec(0, 1, "1", "a"), rec(1, 1, "2", "b")}, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "a"), rec(1, 1, "2", "b")},
			[][]Class{{Duplication}, {Duplication}}},
		{"SameRetryOnBothSidesIsStillDuplication", SourceSpec{}, SourceSpec{}, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "a")}, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "a")},
			[][]Class{{Duplication}, {Duplication}}},
		{"HistoryWithTheStatedRuleIsClean", history, history, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "b")}, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "b")},
			[][]Class{{}, {}}},
		{"HistoryWithTheSameRecordTwiceIsDuplication", history, history, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "b")}, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "b"), rec(1, 1, "1", "b")},
			[][]Class{{}, {Duplication}}},
		{"HistoryWithAMissingVersion", history, history, []row{rec(0, 1, "1", "a"), rec(1, 1, "1", "b")}, []row{rec(0, 1, "1", "a")},
			[][]Class{{Moved}, {Moved, Divergence}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
				DedupOld: LastWins, DedupNew: LastWins, SampleSize: 10, Old: tc.old, New: tc.new}
			o, n := newSide(tc.old, spec.DedupOld, 1), newSide(tc.new, spec.DedupNew, 1)
			for _, r := range tc.oldRows {
				o.add(r)
			}
			for _, r := range tc.newRows {
				n.add(r)
			}
			ws := compare(spec, o, n, since.AddDate(0, 0, 10))
			if len(ws) != len(tc.want) {
				t.Fatalf("%d windows %+v; want %d", len(ws), ws, len(tc.want))
			}
			for i, w := range ws {
				if !slices.Equal(w.Classes, tc.want[i]) {
					t.Errorf("window %d: classes %v (%v); want %v", i, w.Classes, w.Why, tc.want[i])
				}
				if w.Clean() != (len(tc.want[i]) == 0) {
					t.Errorf("window %d: clean %v with classes %v", i, w.Clean(), w.Classes)
				}
			}
		})
	}
}

// TestMovedCarriesItsOffset: a time-zone shift is reported with how far the records moved, and
// the moved keys are sampled with both times.
func TestMovedCarriesItsOffset(t *testing.T) {
	since := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	spec := &Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since,
		DedupOld: FirstWins, DedupNew: FirstWins, SampleSize: 10, QuoteValues: true}
	o, n := newSide(SourceSpec{}, FirstWins, 1), newSide(SourceSpec{}, FirstWins, 1)
	for i := range 5 {
		at := since.Add(22*time.Hour + time.Duration(i)*time.Minute)
		o.add(row{at: at, vals: []string{string(rune('a' + i)), "x"}})
		n.add(row{at: at.Add(2 * time.Hour), vals: []string{string(rune('a' + i)), "x"}})
	}
	ws := compare(spec, o, n, since.AddDate(0, 0, 5))
	if len(ws) != 2 {
		t.Fatalf("windows %+v", ws)
	}
	first, next := ws[0], ws[1]
	if first.Moved != 5 || next.MovedIn != 5 || len(first.MovedOffsets) != 1 || first.MovedOffsets[0] != (Offset{Seconds: 7200, Records: 5}) {
		t.Fatalf("moved %d out, %d in, offsets %+v", first.Moved, next.MovedIn, first.MovedOffsets)
	}
	if len(first.Sample) != 5 || first.Sample[0].Column != "at" || first.Sample[0].Old != "2026-11-02T22:00:00Z" || first.Sample[0].New != "2026-11-03T00:00:00Z" {
		t.Fatalf("sample %+v", first.Sample)
	}
	if first.Old.Rows != 5 || first.New.Rows != 0 || next.New.Rows != 5 {
		t.Fatalf("rows: %+v / %+v", first, next)
	}
}

// TestUnexplainedFiguresAreDivergence: posted figures whose counts or checksums differ with no
// key-level difference to account for them are a difference, never clean.
func TestUnexplainedFiguresAreDivergence(t *testing.T) {
	spec := &Spec{}
	cases := []struct {
		name     string
		old, new SideFigures
	}{
		{"MoreRowsThanKeys", SideFigures{Rows: 10, Keys: 10, Checksum: "a"}, SideFigures{Rows: 11, Keys: 10, Checksum: "a"}},
		{"ChecksumsDiffer", SideFigures{Rows: 10, Keys: 10, Checksum: "a"}, SideFigures{Rows: 10, Keys: 10, Checksum: "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(time.Now())
			w.Old, w.New = tc.old, tc.new
			classify(w, spec, time.Hour, time.Now())
			if w.Clean() || !slices.Contains(w.Classes, Divergence) {
				t.Fatalf("classes %v (%v); want divergence", w.Classes, w.Why)
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
		o, n := newSide(SourceSpec{}, FirstWins, 1), newSide(SourceSpec{}, FirstWins, 1)
		o.add(row{at: since, vals: []string{"1", "123-45-6789"}})
		n.add(row{at: since, vals: []string{"1", "987-65-4321"}})
		ws := compare(spec, o, n, since.AddDate(0, 0, 3))
		s := ws[0].Sample
		if len(s) != 1 || s[0].Key != "1" || s[0].Column != "ssn" || (s[0].Old != "") != quote || (s[0].New != "") != quote {
			t.Fatalf("quote %v: sample %+v", quote, s)
		}
	}
}

// TestCanonDecimalFastPath: the text path agrees with the exact one on every form it takes.
func TestCanonDecimalFastPath(t *testing.T) {
	for _, in := range []string{"0", "-0", "0.00", "-0.00", "12.50", "12.00", "-0.10", "7", "100", "100.000", "-100.010",
		"123456789012345678901234567890.120", "0.5", "-7"} {
		if !plainDecimal(in) {
			t.Fatalf("%q is not taken by the text path", in)
		}
		if got, want := canonDecimal(in), canonDecimalExact(in); got != want {
			t.Errorf("canonDecimal(%q) = %q, the exact path %q", in, got, want)
		}
	}
	for _, in := range []string{"", "-", "1.", ".5", "007", "1e5", "1.2.3", "+1"} {
		if plainDecimal(in) {
			t.Errorf("%q is taken by the text path", in)
		}
	}
}
