package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/tidemark/tidemark/internal/clip"
)

// Class is what a difference in a window is.
type Class string

// Classes.
const (
	// Lag: the new side lacks records only in the newest windows, within the lag bound; it is
	// expected to converge on a later run.
	Lag Class = "lag"
	// Duplication: a key appears more than once on one side within the window.
	Duplication Class = "duplication"
	// Divergence: the same key holds different values, or a key is on one side only outside
	// the lag bound.
	Divergence Class = "divergence"
)

// SideFigures are one side's figures in one window.
type SideFigures struct {
	Rows          int64  `json:"rows"`
	Keys          int64  `json:"keys"`           // distinct keys
	DuplicateKeys int64  `json:"duplicate_keys"` // keys seen more than once
	Checksum      string `json:"checksum"`       // order-independent, over the deduplicated records
}

// Difference is one compared column of one record that differs.
type Difference struct {
	Key    string `json:"key"`
	Column string `json:"column"`
	Old    string `json:"old,omitempty"` // only with the spec's quote_values
	New    string `json:"new,omitempty"`
}

// WindowResult is the comparison of one window.
type WindowResult struct {
	Start time.Time   `json:"start"`
	Old   SideFigures `json:"old"`
	New   SideFigures `json:"new"`
	// Missing: keys on the old side only; Extra: on the new side only; Differing: on both,
	// with different values (after each side's dedup rule).
	Missing          int64        `json:"missing"`
	Extra            int64        `json:"extra"`
	Differing        int64        `json:"differing"`
	DifferingColumns []string     `json:"differing_columns"`
	Sample           []Difference `json:"sample"` // from the deep comparison of differing records
	Classes          []Class      `json:"classes"`
	// Why says, per class, what was seen.
	Why []string `json:"why"`
}

// Clean reports a window with no duplication or divergence (lag within its bound is fine).
func (w WindowResult) Clean() bool {
	return !slices.Contains(w.Classes, Duplication) && !slices.Contains(w.Classes, Divergence)
}

// side collects one side's records by key.
type side struct {
	rule DedupRule
	keys int // how many leading values are the key
	recs map[string][]row
}

func newSide(rule DedupRule, keys int) *side {
	return &side{rule: rule, keys: keys, recs: map[string][]row{}}
}

func keyOf(r row, keys int) string { return strings.Join(r.vals[:keys], "\x1f") }

func (s *side) add(r row) {
	k := keyOf(r, s.keys)
	s.recs[k] = append(s.recs[k], r)
}

// pick returns the record standing for a key under the side's dedup rule.
func (s *side) pick(rs []row) row {
	if len(rs) == 1 {
		return rs[0]
	}
	sorted := slices.SortedStableFunc(slices.Values(rs), func(a, b row) int { return a.at.Compare(b.at) })
	switch s.rule {
	case FirstWins:
		return sorted[0]
	case LastWins:
		return sorted[len(sorted)-1]
	}
	merged := row{at: sorted[len(sorted)-1].at, vals: slices.Clone(sorted[0].vals)}
	for _, r := range sorted[1:] {
		for i, v := range r.vals {
			if v != null {
				merged.vals[i] = v
			}
		}
	}
	return merged
}

func digest(r row) uint64 { return xxhash.Sum64String(strings.Join(r.vals, "\x1f")) }

// compare compares the two sides window by window. now and the lag bound decide whether a gap
// in the newest windows is lag or divergence.
func compare(spec *Spec, old, nw *side, now time.Time) []WindowResult {
	win := spec.Window()
	slot := func(t time.Time) time.Time {
		return spec.Since.Add(t.Sub(spec.Since) / win * win)
	}
	byWindow := map[time.Time]*WindowResult{}
	get := func(t time.Time) *WindowResult {
		st := slot(t)
		w := byWindow[st]
		if w == nil {
			w = &WindowResult{Start: st, DifferingColumns: []string{}, Sample: []Difference{}, Classes: []Class{}, Why: []string{}}
			byWindow[st] = w
		}
		return w
	}
	sums := map[time.Time]*[2]uint64{}
	figures := func(s *side, which int) map[string]row {
		picked := make(map[string]row, len(s.recs))
		for k, rs := range s.recs {
			perWindow := map[time.Time]int{}
			for _, r := range rs {
				w := get(r.at)
				f := &w.Old
				if which == 1 {
					f = &w.New
				}
				f.Rows++
				perWindow[w.Start]++
			}
			for st, n := range perWindow {
				f := &byWindow[st].Old
				if which == 1 {
					f = &byWindow[st].New
				}
				f.Keys++
				if n > 1 {
					f.DuplicateKeys++
				}
			}
			p := s.pick(rs)
			picked[k] = p
			st := slot(p.at)
			if sums[st] == nil {
				sums[st] = &[2]uint64{}
			}
			sums[st][which] += digest(p) // a sum: the order records come in does not matter
		}
		return picked
	}
	po, pn := figures(old, 0), figures(nw, 1)
	for st, s := range sums {
		w := get(st)
		w.Old.Checksum, w.New.Checksum = fmt.Sprintf("%016x", s[0]), fmt.Sprintf("%016x", s[1])
	}
	cols := append(slices.Clone(spec.KeyColumns), spec.Columns...)
	var differing []string
	for k, o := range po {
		n, ok := pn[k]
		if !ok {
			get(o.at).Missing++
			continue
		}
		if digest(o) != digest(n) {
			get(o.at).Differing++
			differing = append(differing, k)
		}
	}
	for k, n := range pn {
		if _, ok := po[k]; !ok {
			get(n.at).Extra++
		}
	}
	// The deep comparison: the differing records, column by column, up to the sample size.
	slices.Sort(differing)
	for i, k := range differing {
		o, n := po[k], pn[k]
		w := get(o.at)
		for c := range o.vals {
			if o.vals[c] == n.vals[c] {
				continue
			}
			if !slices.Contains(w.DifferingColumns, cols[c]) {
				w.DifferingColumns = append(w.DifferingColumns, cols[c])
			}
			if i < spec.SampleSize {
				d := Difference{Key: quoted(strings.ReplaceAll(k, "\x1f", ",")), Column: cols[c]}
				if spec.QuoteValues {
					d.Old, d.New = show(o.vals[c]), show(n.vals[c])
				}
				w.Sample = append(w.Sample, d)
			}
		}
	}
	out := make([]WindowResult, 0, len(byWindow))
	for _, w := range byWindow {
		classify(w, spec, win, now)
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b WindowResult) int { return cmp.Compare(a.Start.UnixNano(), b.Start.UnixNano()) })
	return out
}

func show(v string) string {
	if v == null {
		return "NULL"
	}
	return quoted(v)
}

// maxQuoted bounds a quoted key or value in a sample, in bytes: a sample points at a record, it
// does not carry it (a large text or JSON column would otherwise fill every stored window).
const maxQuoted = 256

func quoted(s string) string { return clip.String(s, maxQuoted) }

// classify names what a window's differences are.
func classify(w *WindowResult, spec *Spec, win time.Duration, now time.Time) {
	add := func(c Class, why string, args ...any) {
		if !slices.Contains(w.Classes, c) {
			w.Classes = append(w.Classes, c)
		}
		w.Why = append(w.Why, fmt.Sprintf(why, args...))
	}
	if w.Old.DuplicateKeys > 0 {
		add(Duplication, "%d keys appear more than once on the old side (%d records for %d keys)", w.Old.DuplicateKeys, w.Old.Rows, w.Old.Keys)
	}
	if w.New.DuplicateKeys > 0 {
		add(Duplication, "%d keys appear more than once on the new side (%d records for %d keys)", w.New.DuplicateKeys, w.New.Rows, w.New.Keys)
	}
	switch {
	case w.Differing > 0 && len(w.DifferingColumns) > 0:
		add(Divergence, "%d keys hold different values on the two sides (columns %s)", w.Differing, strings.Join(w.DifferingColumns, ", "))
	case w.Differing > 0:
		add(Divergence, "the same keys hold different values: the checksums differ (%s and %s)", w.Old.Checksum, w.New.Checksum)
	}
	recent := w.Start.Add(win).After(now.Add(-spec.LagBound()))
	if w.Missing > 0 {
		if recent {
			add(Lag, "the new side lacks %d keys in a window that ended less than the lag bound (%s) ago", w.Missing, spec.LagBound())
		} else {
			add(Divergence, "the new side lacks %d keys in a window older than the lag bound (%s)", w.Missing, spec.LagBound())
		}
	}
	if w.Extra > 0 {
		add(Divergence, "the new side holds %d keys the old side does not", w.Extra)
	}
}
