package web

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/reconcile"
)

// TestVerdict: the newest run's line says what was compared and never that windows agree when
// the run read nothing or compared no rows.
func TestVerdict(t *testing.T) {
	done := time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		run         reconcile.Run
		differ      int
		ok          bool
		says        string
		causes      int
		notAgreeing bool
	}{
		{"CouldNotRead", reconcile.Run{FinishedAt: &done, Error: "pq: connection refused", Causes: []string{"the run could not read both sides: pq: connection refused"}},
			0, false, "could not read both sides, so it compared nothing", 0, true},
		{"NoRows", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 3}, Causes: []string{"the run compared no rows"}},
			0, false, "nothing was compared", 0, true},
		{"Unfinished", reconcile.Run{}, 0, false, "has not finished", 0, true},
		{"Differs", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 4, Differing: 2, Unclean: 1}, Cost: reconcile.Cost{Compared: 80},
			Causes: []string{"a", "b"}}, 2, false, "2 of the newest run's 4 windows differ", 0, true},
		{"NotCleanNoWindow", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 2, CausesTotal: 3}, Cost: reconcile.Cost{Compared: 8},
			Causes: []string{"first", "second"}}, 0, false, "but the run is not clean", 2, true},
		{"OnlyLag", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 4, Differing: 2, Unclean: 0}, Cost: reconcile.Cost{Compared: 80}},
			2, false, "2 of the newest run's 4 windows differ (all of them only lag within the bound); 80 records compared", 0, true},
		{"UncleanNoLag", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 4, Differing: 2, Unclean: 2}, Cost: reconcile.Cost{Compared: 80}},
			2, false, "differ (2 not clean); 80", 0, true},
		// The old side is empty: the 300 records are the new side's alone, none compared with anything.
		{"OldSideEmpty", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 3, Differing: 3, Unclean: 3, Rows: &reconcile.SideRows{New: 300}},
			Cost: reconcile.Cost{Compared: 300}}, 3, false, "The old side held no rows over the newest run's 3 windows, the new side 300 records", 0, true},
		{"NewSideEmptyOneWindow", reconcile.Run{FinishedAt: &done, Summary: reconcile.Summary{Windows: 1, Unclean: 1, Rows: &reconcile.SideRows{Old: 1}},
			Cost: reconcile.Cost{Compared: 1}}, 0, false, "The new side held no rows over the newest run's 1 window, the old side 1 record", 0, true},
		{"Clean", reconcile.Run{FinishedAt: &done, Clean: true, Summary: reconcile.Summary{Windows: 5}, Cost: reconcile.Cost{Compared: 100}},
			0, true, "All 5 windows of the newest run agree: 100 records compared", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := verdictOf(tc.run, tc.differ)
			if v.OK != tc.ok || !strings.Contains(v.Text, tc.says) || len(v.Causes) != tc.causes {
				t.Fatalf("verdict %+v; want ok %v, saying %q, %d causes listed", v, tc.ok, tc.says, tc.causes)
			}
			if strings.Contains(v.Text, "records compared") && tc.run.Summary.Rows != nil && (tc.run.Summary.Rows.Old == 0 || tc.run.Summary.Rows.New == 0) {
				t.Fatalf("a run over an empty side counts records as compared: %q", v.Text)
			}
			if strings.Contains(v.Text, "the rest lag") {
				t.Fatalf("the verdict says %q", v.Text)
			}
			if tc.notAgreeing && strings.Contains(v.Text, "agree") && !strings.Contains(v.Text, "nothing is shown to agree") && !strings.Contains(v.Text, "shows nothing to agree") {
				t.Fatalf("a run that is not clean says the windows agree: %q", v.Text)
			}
		})
	}
}

// TestStreakChartSpan: the x axis spans the runs, padded, and at least an hour: one run is not
// drawn over years.
func TestStreakChartSpan(t *testing.T) {
	at := time.Date(2027, 2, 1, 12, 0, 0, 0, time.UTC)
	run := func(d time.Duration, clean bool) reconcile.Run {
		f := at.Add(d)
		return reconcile.Run{StartedAt: at.Add(d), FinishedAt: &f, Clean: clean}
	}
	for _, tc := range []struct {
		name     string
		runs     []reconcile.Run // newest first, as Runs answers
		min, max time.Duration
		streak   []int
	}{
		{"OneRun", []reconcile.Run{run(0, true)}, time.Hour, 2 * time.Hour, []int{1}},
		{"ThreeDays", []reconcile.Run{run(72*time.Hour, true), run(24*time.Hour, false), run(0, true)}, 72 * time.Hour, 80 * time.Hour, []int{1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := streakOf(tc.runs)
			span := time.Duration(c.To-c.From) * time.Second
			if span < tc.min || span > tc.max || c.From > c.X[0] || c.To < c.X[len(c.X)-1] {
				t.Fatalf("axis %d..%d (%s) for runs %v; want %s to %s covering them", c.From, c.To, span, c.X, tc.min, tc.max)
			}
			if len(c.Streak) != len(tc.streak) {
				t.Fatalf("streak %v, want %v", c.Streak, tc.streak)
			}
			for i := range tc.streak {
				if c.Streak[i] != tc.streak[i] {
					t.Fatalf("streak %v, want %v", c.Streak, tc.streak)
				}
			}
		})
	}
}
