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
	// Duplication: on a side whose keys are unique, a key appears more than once (in one window
	// or across windows); on a side that keeps history, the same record (time and values) twice.
	Duplication Class = "duplication"
	// Moved: the same key's record carries another time on the new side (a time-zone or clock
	// bug in the writer), most often in another window. Not clean: the data is not the same.
	Moved Class = "moved"
	// Divergence: the same key holds different values, a key is on one side only outside the
	// lag bound, or the window's figures differ in a way no key-level difference explains.
	Divergence Class = "divergence"
)

// SideFigures are one side's figures in one window.
type SideFigures struct {
	Rows          int64 `json:"rows"`
	Keys          int64 `json:"keys"`           // distinct keys with a record in the window
	DuplicateKeys int64 `json:"duplicate_keys"` // keys whose records here are duplication
	// Versions are the records beyond a key's first on a side that keeps history: the rule
	// collapses them, they are not duplication (always 0 on a side whose keys are unique).
	Versions int64  `json:"versions"`
	Checksum string `json:"checksum"` // order-independent, over every record of the window (time, key, values)
}

// Difference is one compared column of one record that differs.
type Difference struct {
	Key    string `json:"key"`
	Column string `json:"column"`
	Old    string `json:"old,omitempty"` // only with the spec's quote_values
	New    string `json:"new,omitempty"`
}

// Offset is how far moved records' times moved (new minus old), and how many moved so.
type Offset struct {
	Seconds float64 `json:"seconds"`
	Records int64   `json:"records"`
}

// Duplicate is one duplicated key of a sample: on which side, in how many records, and in
// which windows (every one, not only this window's).
type Duplicate struct {
	Key     string      `json:"key"`
	Side    string      `json:"side"`
	Records int         `json:"records"`
	Windows []time.Time `json:"windows"`
}

// WindowResult is the comparison of one window.
type WindowResult struct {
	Start time.Time   `json:"start"`
	Old   SideFigures `json:"old"`
	New   SideFigures `json:"new"`
	// Missing: keys on the old side only; Extra: on the new side only; Differing: on both,
	// with different values (after each side's dedup rule). Moved: keys whose record stands in
	// this window on the old side and carries another time on the new side (MovedIn: moved into
	// this window from another), by offset.
	Missing          int64        `json:"missing"`
	Extra            int64        `json:"extra"`
	Differing        int64        `json:"differing"`
	Moved            int64        `json:"moved"`
	MovedIn          int64        `json:"moved_in"`
	MovedOffsets     []Offset     `json:"moved_offsets"`
	DifferingColumns []string     `json:"differing_columns"`
	Sample           []Difference `json:"sample"`     // from the deep comparison of differing and moved records
	Duplicates       []Duplicate  `json:"duplicates"` // a sample of the duplicated keys
	// Writers are the runs lineage saw write the new side during the window, named when the
	// new side holds duplicated keys in it (where to look for the retry).
	Writers []Writer `json:"writers,omitempty"`
	// Snapshots are the Iceberg new side's commits that added data files holding the window's
	// records, named when the new side holds duplicated keys in it.
	Snapshots []SnapshotRef `json:"snapshots,omitempty"`
	// NewRepeatedSegments are the key-range segments holding the new side's repeated keys in this
	// window, kept with the run so that an incremental run reusing the window's figures looks
	// into those segments only (not part of the API's answer).
	NewRepeatedSegments []int64 `json:"new_repeated_segments,omitempty"`
	// Deep says the window was compared record by record (kept with the run: a later run in
	// which neither side changed in any such window reuses those comparisons; not in the API).
	Deep    bool    `json:"deep,omitempty"`
	Classes []Class `json:"classes"`
	// Why says, per class, what was seen.
	Why []string `json:"why"`
}

// Clean reports a window with nothing but lag within its bound.
func (w WindowResult) Clean() bool {
	return !slices.ContainsFunc(w.Classes, func(c Class) bool { return c != Lag })
}

func newWindow(start time.Time) *WindowResult {
	return &WindowResult{Start: start, MovedOffsets: []Offset{}, DifferingColumns: []string{}, Sample: []Difference{},
		Duplicates: []Duplicate{}, Classes: []Class{}, Why: []string{}}
}

// side collects one side's records by key.
type side struct {
	rule    DedupRule
	history bool // the side keeps versions of a key (KeyRule history)
	keys    int  // how many leading values are the key
	recs    map[string][]row
}

func newSide(src SourceSpec, rule DedupRule, keys int) *side {
	return &side{rule: rule, history: src.Keys == HistoryKeys, keys: keys, recs: map[string][]row{}}
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

// versions splits a key's records beyond its earliest into versions and repeats: a record that
// repeats an earlier one exactly (time and values) is the same fact twice, duplication.
func (s *side) versions(rs []row) (versions, repeats []row) {
	sorted := slices.SortedStableFunc(slices.Values(rs), func(a, b row) int { return a.at.Compare(b.at) })
	seen := map[string]bool{}
	for i, r := range sorted {
		f := canonTime(r.at) + "\x1f" + strings.Join(r.vals, "\x1f")
		switch {
		case seen[f]:
			repeats = append(repeats, r)
		case i > 0:
			versions = append(versions, r)
		}
		seen[f] = true
	}
	return versions, repeats
}

func digest(r row) uint64 { return xxhash.Sum64String(strings.Join(r.vals, "\x1f")) }

// windows holds a run's windows by start.
type windows struct {
	since      time.Time
	win        time.Duration
	by         map[time.Time]*WindowResult
	duplicated map[string]bool // keys duplicated on either side
	hashing    hashPlan
}

func (ws *windows) slot(t time.Time) time.Time {
	return ws.since.Add(t.Sub(ws.since) / ws.win * ws.win)
}

func (ws *windows) get(t time.Time) *WindowResult {
	st := ws.slot(t)
	w := ws.by[st]
	if w == nil {
		w = newWindow(st)
		ws.by[st] = w
	}
	return w
}

// figures counts one side into the windows (which 0 is old, 1 new) and returns the record
// standing for each key. sums collects the per-window checksums.
func (ws *windows) figures(s *side, which int, sums map[time.Time]*[2]uint64, dups *[]dupKey) map[string]row {
	of := func(w *WindowResult) *SideFigures {
		if which == 1 {
			return &w.New
		}
		return &w.Old
	}
	picked := make(map[string]row, len(s.recs))
	for k, rs := range s.recs {
		perWindow := map[time.Time]int{}
		for _, r := range rs {
			w := ws.get(r.at)
			of(w).Rows++
			perWindow[w.Start]++
		}
		// Unique keys: any second record is duplication, in whichever window it is. History:
		// the repeats are versions, and only the same record twice is duplication.
		dup := len(rs) > 1 && !s.history
		var repeatedIn map[time.Time]bool // history: the windows holding a repeated record
		if s.history && len(rs) > 1 {
			vs, repeats := s.versions(rs)
			for _, r := range vs {
				of(ws.get(r.at)).Versions++
			}
			repeatedIn = map[time.Time]bool{}
			for _, r := range repeats {
				repeatedIn[ws.slot(r.at)] = true
			}
			dup = len(repeats) > 0
		}
		for st := range perWindow {
			f := of(ws.by[st])
			f.Keys++
			if dup && (!s.history || repeatedIn[st]) {
				f.DuplicateKeys++
			}
		}
		if dup {
			*dups = append(*dups, dupKey{key: k, side: which, rs: rs})
			ws.duplicated[k] = true
		}
		picked[k] = s.pick(rs)
		// The checksum is over every record of the window (its time, key and values), the same
		// figure the first pass computes (PostgreSQL's pushed-down one too): a sum, so the order
		// records come in does not matter.
		for _, r := range rs {
			st := ws.slot(r.at)
			if sums[st] == nil {
				sums[st] = &[2]uint64{}
			}
			sums[st][which] += ws.hashing.record(r)
		}
	}
	return picked
}

type dupKey struct {
	key  string
	side int
	rs   []row
}

// compare compares the two sides window by window. now and the lag bound decide whether a gap
// in the newest windows is lag or divergence.
func compare(spec *Spec, old, nw *side, now time.Time) []WindowResult {
	ws := &windows{since: spec.Since, win: spec.Window(), by: map[time.Time]*WindowResult{}, duplicated: map[string]bool{}, hashing: spec.hashing}
	sums := map[time.Time]*[2]uint64{}
	var dups []dupKey
	po, pn := ws.figures(old, 0, sums, &dups), ws.figures(nw, 1, sums, &dups)
	for st, s := range sums {
		w := ws.get(st)
		w.Old.Checksum, w.New.Checksum = fmt.Sprintf("%016x", s[0]), fmt.Sprintf("%016x", s[1])
	}
	ws.sampleDuplicates(dups, spec.SampleSize)
	cols := append(slices.Clone(spec.KeyColumns), spec.Columns...)
	var differing, moved []string
	offsets := map[time.Time]map[time.Duration]int64{}
	for k, o := range po {
		n, ok := pn[k]
		if !ok {
			ws.get(o.at).Missing++
			continue
		}
		// Moved: the records standing for the key carry different times. Not for a duplicated
		// key: which of its records stands is the dedup rule's pick, and it is duplication anyway.
		if !n.at.Equal(o.at) && !ws.duplicated[k] {
			w := ws.get(o.at)
			w.Moved++
			ws.get(n.at).MovedIn++
			if offsets[w.Start] == nil {
				offsets[w.Start] = map[time.Duration]int64{}
			}
			offsets[w.Start][n.at.Sub(o.at)]++
			moved = append(moved, k)
		}
		if digest(o) != digest(n) {
			ws.get(o.at).Differing++
			differing = append(differing, k)
		}
	}
	for k, n := range pn {
		if _, ok := po[k]; !ok {
			ws.get(n.at).Extra++
		}
	}
	for st, by := range offsets {
		ws.by[st].MovedOffsets = topOffsets(by)
	}
	// The deep comparison: the differing records, column by column, then the moved ones' times,
	// up to the sample size.
	slices.Sort(differing)
	for i, k := range differing {
		o, n := po[k], pn[k]
		w := ws.get(o.at)
		for c := range o.vals {
			if o.vals[c] == n.vals[c] {
				continue
			}
			if !slices.Contains(w.DifferingColumns, cols[c]) {
				w.DifferingColumns = append(w.DifferingColumns, cols[c])
			}
			if i < spec.SampleSize {
				w.Sample = append(w.Sample, sampled(spec, k, cols[c], o.vals[c], n.vals[c]))
			}
		}
	}
	slices.Sort(moved)
	for _, k := range moved[:min(len(moved), spec.SampleSize)] {
		o, n := po[k], pn[k]
		w := ws.get(o.at)
		w.Sample = append(w.Sample, sampled(spec, k, spec.TimeColumn, canonTime(o.at), canonTime(n.at)))
	}
	out := make([]WindowResult, 0, len(ws.by))
	for _, w := range ws.by {
		classify(w, spec, spec.Window(), now)
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b WindowResult) int { return cmp.Compare(a.Start.UnixNano(), b.Start.UnixNano()) })
	return out
}

func sampled(spec *Spec, key, col, old, nw string) Difference {
	d := Difference{Key: quoted(strings.ReplaceAll(key, "\x1f", ",")), Column: col}
	if spec.QuoteValues {
		d.Old, d.New = show(old), show(nw)
	}
	return d
}

// maxOffsets bounds the offsets a window lists (the most common first).
const maxOffsets = 5

func topOffsets(by map[time.Duration]int64) []Offset {
	out := make([]Offset, 0, len(by))
	for d, n := range by {
		out = append(out, Offset{Seconds: d.Seconds(), Records: n})
	}
	slices.SortFunc(out, func(a, b Offset) int {
		if c := cmp.Compare(b.Records, a.Records); c != 0 {
			return c
		}
		return cmp.Compare(a.Seconds, b.Seconds)
	})
	return out[:min(len(out), maxOffsets)]
}

// sampleDuplicates lists up to limit duplicated keys in each window they appear in, with every
// window each appears in, in key order.
func (ws *windows) sampleDuplicates(dups []dupKey, limit int) {
	slices.SortFunc(dups, func(a, b dupKey) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.side, b.side)
	})
	for _, d := range dups {
		var starts []time.Time
		for _, r := range d.rs {
			if st := ws.slot(r.at); !slices.ContainsFunc(starts, st.Equal) {
				starts = append(starts, st)
			}
		}
		slices.SortFunc(starts, time.Time.Compare)
		dk := Duplicate{Key: quoted(strings.ReplaceAll(d.key, "\x1f", ",")), Side: [2]string{"old", "new"}[d.side], Records: len(d.rs), Windows: starts}
		for _, st := range starts {
			if w := ws.by[st]; len(w.Duplicates) < limit {
				w.Duplicates = append(w.Duplicates, dk)
			}
		}
	}
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
	for _, sd := range []struct {
		name string
		f    SideFigures
		src  SourceSpec
	}{{"old", w.Old, spec.Old}, {"new", w.New, spec.New}} {
		if sd.f.DuplicateKeys == 0 {
			continue
		}
		if sd.src.Keys == HistoryKeys {
			add(Duplication, "%d keys on the %s side (which keeps history) hold the same record twice: same time, same values (%d records for %d keys)",
				sd.f.DuplicateKeys, sd.name, sd.f.Rows, sd.f.Keys)
		} else {
			add(Duplication, "%d keys appear more than once on the %s side, whose keys are unique, in this window or another (%d records for %d keys)",
				sd.f.DuplicateKeys, sd.name, sd.f.Rows, sd.f.Keys)
		}
	}
	if w.Moved > 0 {
		top := w.MovedOffsets[0]
		add(Moved, "the records standing for %d keys of this window carry another time on the new side (%.0f of them moved by %s)",
			w.Moved, float64(top.Records), time.Duration(top.Seconds*float64(time.Second)))
	}
	if w.MovedIn > 0 {
		add(Moved, "the records standing for %d keys are in this window on the new side and in another on the old side", w.MovedIn)
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
	if why := unexplained(w, spec); why != "" {
		add(Divergence, "%s", why)
	}
}

// unexplained checks the window's figures against what the key-level comparison found: a gap
// in the counts or the checksums that no class accounts for is a difference too (the verdict
// covers every figure, not only the joins). A window with duplication or moved records has its
// figures explained by them; it is not clean anyway.
func unexplained(w *WindowResult, spec *Spec) string {
	if slices.Contains(w.Classes, Duplication) || slices.Contains(w.Classes, Moved) {
		return ""
	}
	unique := spec.Old.Keys != HistoryKeys && spec.New.Keys != HistoryKeys
	for _, sd := range []struct {
		name string
		f    SideFigures
	}{{"old", w.Old}, {"new", w.New}} {
		if unique && sd.f.Rows != sd.f.Keys {
			return fmt.Sprintf("the %s side has %d records for %d keys and no key is repeated: the figures do not add up", sd.name, sd.f.Rows, sd.f.Keys)
		}
	}
	if unique && w.Old.Keys-w.Missing+w.Extra != w.New.Keys {
		return fmt.Sprintf("the key counts differ (%d old, %d new) by more than the %d missing and %d extra keys explain",
			w.Old.Keys, w.New.Keys, w.Missing, w.Extra)
	}
	if w.Missing == 0 && w.Extra == 0 && w.Differing == 0 && w.Old.Checksum != w.New.Checksum {
		return fmt.Sprintf("the checksums differ (%s old, %s new) although every key matched", w.Old.Checksum, w.New.Checksum)
	}
	return ""
}
