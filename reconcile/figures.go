package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"time"
)

// A run works in two passes so that it never holds a whole side in memory. The first computes
// each window's figures on each side: rows, distinct keys and a checksum, the wrapping sum of a
// hash of every record (its time, key and compared values in canonical form). PostgreSQL
// computes them itself, in one aggregate query, when every column has a canonical form in SQL;
// otherwise, and for Iceberg, Tidemark streams the side and keeps per record only its key's hash
// and window (16 bytes). The second pass reads records only for the windows whose figures differ
// or that hold a repeated key, and compares those record by record.

// figure is one side's figures in one window.
type figure struct {
	rows     int64
	keys     int64  // distinct keys with a record in the window
	sum      uint64 // the wrapping sum of the records' hashes
	versions int64  // a side that keeps history: records beyond their key's first
}

// sideFigures are one side's figures by window index (windows since the spec's since).
type sideFigures struct {
	windows map[int64]*figure
	// repeated are the windows holding a key that has more than one record on this side (a
	// unique side), or the same record twice (a side that keeps history); repeatedSegs the
	// key-range segments of those keys in those windows.
	repeated     map[int64]bool
	repeatedSegs map[segKey]bool
	read         int64 // records Tidemark read to compute them (0 when the side computed them)
	pushed       bool  // the side computed them (PostgreSQL)
	counted      int64 // records the side counted itself this run (reused windows' are not)
	// segs are the figures of every key-range segment with a record, computed in the first pass
	// for every window it read when segsAll (but segsMissing, windows it reused): the second
	// pass reads such a window's segments from here rather than from the side.
	segs        map[segKey]segFig
	segsAll     bool
	segsMissing map[int64]bool
	reused      int64     // windows whose figures are the previous run's (nothing in them changed)
	log         *logState // a PostgreSQL side's change log, when it has one
	// incremental: the figures were read from what changed since the previous run (changed,
	// by window); any other window's records are proved the same as that run's.
	incremental bool
	changed     map[int64]bool
}

// unchanged reports a window whose records are proved the previous run's.
func (f sideFigures) unchanged(w int64) bool { return f.incremental && !f.changed[w] }

// windowIndex is the window a time falls in.
func windowIndex(spec *Spec, t time.Time) int64 { return int64(t.Sub(spec.Since) / spec.Window()) }

func windowStart(spec *Spec, w int64) time.Time {
	return spec.Since.Add(time.Duration(w) * spec.Window())
}

// keyWin is one record's key hash, window and the low half of its record hash (16 bytes, so
// 10M records take 160 MB). Two different records sharing that half only send their window to
// the record-by-record pass; they never hide a difference.
type keyWin struct {
	key uint64
	win int32 // MaxWindows fits
	rec uint32
}

// figureAcc computes a side's figures from its records as they stream by. On a unique side a
// record takes 8 bytes: its key's hash in the high 50 bits and its window in the low 14 (80 MB
// for 10M records); keys sharing 50 bits (a few in 10M) can only send windows to the
// record-by-record pass. A side that keeps history also needs each record's hash: 16 bytes.
type figureAcc struct {
	spec    *Spec
	keys    int
	history bool
	by      map[int64]*figure
	packed  []uint64
	pairs   []keyWin
	// segs are the segment figures of windows segFirst on, (w-segFirst)<<segBits | segment.
	segs     []segFig
	segFirst int64
}

// winBits is the low bits of a packed record that hold its window.
const winBits = 14

var _ = [1]int{}[MaxWindows>>winBits] // MaxWindows must fit in winBits

func pack(key uint64, w int64) uint64 { return key&^(1<<winBits-1) | uint64(w) }

// segmentsOf sets the accumulator to count the segment figures of windows first to last too.
func (a *figureAcc) segmentsOf(first, last int64) {
	if last >= first {
		a.segFirst, a.segs = first, make([]segFig, (last-first+1)<<segBits)
	}
}

func newFigureAcc(spec *Spec, src SourceSpec) *figureAcc {
	return &figureAcc{spec: spec, keys: len(spec.KeyColumns), history: src.Keys == HistoryKeys, by: map[int64]*figure{}}
}

func (a *figureAcc) add(r row) {
	k, h := a.spec.hashing.hashes(r, a.keys)
	a.addHashed(windowIndex(a.spec, r.at), k, h)
}

// addHashed counts one record of window w by its key's hash and its own.
func (a *figureAcc) addHashed(w int64, k, h uint64) {
	f := a.by[w]
	if f == nil {
		f = &figure{}
		a.by[w] = f
	}
	f.rows++
	f.sum += h
	if i := (w-a.segFirst)<<segBits | int64(k>>(64-segBits)); a.segs != nil && w >= a.segFirst && i < int64(len(a.segs)) {
		a.segs[i].rows++
		a.segs[i].sum += h
	}
	if !a.history {
		a.packed = append(a.packed, pack(k, w))
		return
	}
	a.pairs = append(a.pairs, keyWin{key: k &^ (1<<winBits - 1), rec: uint32(h), win: int32(w)}) // the bits PostgreSQL groups on
}

// finish counts the distinct keys per window and finds the windows holding repeated keys. Key
// hashes are 64 bits: two keys sharing one (about one chance in 10^6 at 10M keys) can only mark
// windows for the record-by-record pass, never hide a difference.
func (a *figureAcc) finish(read int64) sideFigures {
	out := sideFigures{windows: a.by, repeated: map[int64]bool{}, repeatedSegs: map[segKey]bool{}, read: read}
	if a.segs != nil {
		out.segs, out.segsAll = map[segKey]segFig{}, true
		for i, f := range a.segs {
			if f.rows > 0 {
				out.segs[segKey{a.segFirst + int64(i)>>segBits, int64(i) & (1<<segBits - 1)}] = f
			}
		}
		a.segs = nil
	}
	if !a.history {
		sortKeys(a.packed)
		const key = ^uint64(1<<winBits - 1)
		for i := 0; i < len(a.packed); {
			j := i
			for j < len(a.packed) && a.packed[j]&key == a.packed[i]&key {
				j++
			}
			for k := i; k < j; k++ {
				if k == i || a.packed[k] != a.packed[k-1] {
					a.by[int64(a.packed[k]&^key)].keys++
				}
				if j-i > 1 {
					w := int64(a.packed[k] &^ key)
					out.repeated[w] = true
					out.repeatedSegs[segKey{w, int64(a.packed[k] >> (64 - segBits))}] = true
				}
			}
			i = j
		}
		a.packed = nil
		return out
	}
	slices.SortFunc(a.pairs, func(x, y keyWin) int {
		return cmp.Or(cmp.Compare(x.key, y.key), cmp.Compare(x.win, y.win), cmp.Compare(x.rec, y.rec))
	})
	for i := 0; i < len(a.pairs); {
		j := i
		for j < len(a.pairs) && a.pairs[j].key == a.pairs[i].key {
			j++
		}
		run := a.pairs[i:j]
		repeated := len(run) > 1 && !a.history
		for k := range run {
			if k == 0 || run[k].win != run[k-1].win {
				a.by[int64(run[k].win)].keys++
			}
			same := k > 0 && run[k].rec == run[k-1].rec && run[k].win == run[k-1].win
			if a.history && same {
				repeated = true // the same record twice (same time, so same window)
			}
			if a.history && k > 0 && !same {
				a.by[int64(run[k].win)].versions++ // the run's first is in its earliest window
			}
		}
		if repeated {
			for _, p := range run {
				out.repeated[int64(p.win)] = true
				out.repeatedSegs[segKey{int64(p.win), int64(p.key >> (64 - segBits))}] = true
			}
		}
		i = j
	}
	a.pairs = nil
	return out
}

// sizer is a reader that knows about how many records it holds (an Iceberg snapshot's summary).
type sizer interface {
	size(ctx context.Context) int64
}

// streamFigures computes a side's figures by reading it whole, keeping 8 bytes a record (16 on
// a side that keeps history).
func streamFigures(ctx context.Context, spec *Spec, src SourceSpec, r reader, from, to time.Time) (sideFigures, int64, error) {
	acc := newFigureAcc(spec, src)
	acc.segmentsOf(windowIndex(spec, from), windowIndex(spec, to.Add(-time.Nanosecond)))
	if sz, ok := r.(sizer); ok {
		// Sized once: growing by doubling would hold the old and the new array at once.
		if n := min(sz.size(ctx), maxSizeHint); acc.history {
			acc.pairs = make([]keyWin, 0, n)
		} else {
			acc.packed = make([]uint64, 0, n)
		}
	}
	bytes, n, err := hashSide(ctx, spec, r, acc, from, to)
	if err != nil {
		return sideFigures{}, bytes, err
	}
	return acc.finish(n), bytes, nil
}

// sumOf reads a PostgreSQL numeric sum of signed 64-bit hashes as the wrapping unsigned sum.
func sumOf(s string) (uint64, error) {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return 0, fmt.Errorf("reconcile: a checksum sum %q is not an integer", s)
	}
	mod := new(big.Int).Lsh(big.NewInt(1), 64)
	n.Mod(n, mod) // Mod is Euclidean: never negative
	return n.Uint64(), nil
}

// maxSizeHint caps the capacity taken on a reader's word (100M records).
const maxSizeHint = 100_000_000

// maxDeepRows bounds the records the second pass reads (both sides together): about 1.2 KB a
// record pair in memory, so a run stays near a quarter of a gigabyte however much differs. The
// windows past it are classified from their figures alone, and say so.
const maxDeepRows = 200_000

// candidates are the windows whose figures differ between the sides or that hold a repeated
// key: the ones the second pass looks into.
func candidates(o, n sideFigures) []int64 {
	var out []int64
	for w := range o.windows {
		out = append(out, w)
	}
	for w := range n.windows {
		if o.windows[w] == nil {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return slices.DeleteFunc(out, func(w int64) bool {
		fo, fn := o.windows[w], n.windows[w]
		return fo != nil && fn != nil && *fo == *fn && !o.repeated[w] && !n.repeated[w]
	})
}

// The second pass bisects a candidate window once: each side's records are counted and summed
// per segment of the key space (the top segBits of the key's hash, 64 segments), and only the
// records of segments that differ are kept for the record-by-record comparison, and those of the
// segments holding a repeated key (the repeats may match on both sides, and are duplication all
// the same).
const segBits = 6

type segKey struct{ w, seg int64 }

type segFig struct {
	rows int64
	sum  uint64
}

// segmentsInto copies the first pass's segment figures of the windows ws into m and returns the
// windows it has none for (the second pass computes those).
func (f sideFigures) segmentsInto(ws []int64, m map[segKey]segFig) (need []int64) {
	for _, w := range ws {
		if !f.segsAll || f.segsMissing[w] {
			need = append(need, w)
			continue
		}
		for seg := range int64(1 << segBits) {
			if sf, ok := f.segs[segKey{w, seg}]; ok {
				m[segKey{w, seg}] = sf
			}
		}
	}
	return need
}

func segmentOf(spec *Spec, r row) int64 {
	return int64(spec.hashing.key(r.vals[:len(spec.KeyColumns)]) >> (64 - segBits))
}

// keptSegments returns the segments to keep and the windows to read for them, in order, while
// their records fit maxDeepRows (the first window always does); skipped are the ones that did
// not fit.
func keptSegments(cands []int64, o, n sideFigures, segs [2]map[segKey]segFig) (keep map[segKey]bool, deep []int64, skipped map[int64]bool) {
	keep, skipped = map[segKey]bool{}, map[int64]bool{}
	size := map[int64]int64{}
	for _, m := range segs {
		for k := range m {
			a, b := segs[0][k], segs[1][k]
			if a != b || o.repeatedSegs[k] || n.repeatedSegs[k] {
				if !keep[k] {
					keep[k] = true
					size[k.w] += a.rows + b.rows
				}
			}
		}
	}
	var rows int64
	for _, w := range cands {
		if size[w] == 0 {
			continue // no segment differs: its figures classify it
		}
		if len(deep) > 0 && rows+size[w] > maxDeepRows {
			skipped[w] = true
			continue
		}
		deep = append(deep, w)
		rows += size[w]
	}
	return keep, deep, skipped
}

// ranges joins consecutive windows into [first, last] ranges, one read each.
func ranges(ws []int64) [][2]int64 {
	var out [][2]int64
	for _, w := range ws {
		if n := len(out); n > 0 && out[n-1][1] == w-1 {
			out[n-1][1] = w
			continue
		}
		out = append(out, [2]int64{w, w})
	}
	return out
}

func (f sideFigures) of(w int64, history bool) SideFigures {
	g := f.windows[w]
	if g == nil {
		return SideFigures{Checksum: fmt.Sprintf("%016x", 0)}
	}
	out := SideFigures{Rows: g.rows, Keys: g.keys, Versions: g.versions, Checksum: fmt.Sprintf("%016x", g.sum)}
	switch {
	case f.repeated[w] && !history:
		out.DuplicateKeys = max(1, g.rows-g.keys) // at least one; the records would say how many
	case f.repeated[w]:
		out.DuplicateKeys = 1
	}
	return out
}

// fromFigures classifies a window from its two sides' figures alone: an external checker's, or
// Tidemark's own for a window the second pass did not read.
func fromFigures(spec *Spec, st time.Time, o, n SideFigures, now time.Time) WindowResult {
	w := newWindow(st)
	w.Old, w.New = o, n
	if d := o.Keys - n.Keys; d > 0 {
		w.Missing = d
	} else {
		w.Extra = -d
	}
	if o.Keys == n.Keys && o.Keys > 0 && o.Checksum != n.Checksum {
		w.Differing = 1 // at least one: the figures do not say how many
	}
	classify(w, spec, spec.Window(), now)
	return *w
}

// mergeWindows is the run's windows in order: the record-by-record comparison where the second
// pass read the window, the figures everywhere else.
func mergeWindows(spec *Spec, o, n sideFigures, compared map[time.Time]WindowResult, skipped map[int64]bool, now time.Time) []WindowResult {
	idx := map[int64]bool{}
	for w := range o.windows {
		idx[w] = true
	}
	for w := range n.windows {
		idx[w] = true
	}
	for st := range compared {
		idx[windowIndex(spec, st)] = true
	}
	segsOf := func(w int64) []int64 {
		var out []int64
		for seg := range int64(1 << segBits) {
			if n.repeatedSegs[segKey{w, seg}] {
				out = append(out, seg)
			}
		}
		return out
	}
	out := make([]WindowResult, 0, len(idx))
	for _, w := range slices.Sorted(maps.Keys(idx)) {
		st := windowStart(spec, w)
		fo, fn := o.of(w, spec.Old.Keys == HistoryKeys), n.of(w, spec.New.Keys == HistoryKeys)
		if c, ok := compared[st]; ok {
			// The window's figures are the first pass's (the second kept only the segments that
			// differ); the repeated keys the records showed, and the classes again over both.
			fo.DuplicateKeys, fn.DuplicateKeys = c.Old.DuplicateKeys, c.New.DuplicateKeys
			c.Old, c.New, c.Classes, c.Why = fo, fn, []Class{}, []string{}
			classify(&c, spec, spec.Window(), now)
			c.NewRepeatedSegments, c.Deep = segsOf(w), true
			out = append(out, c)
			continue
		}
		r := fromFigures(spec, st, fo, fn, now)
		r.NewRepeatedSegments = segsOf(w)
		if skipped[w] {
			r.Why = append(r.Why, fmt.Sprintf("not compared record by record: the run read at most %d records of differing windows; this one is classified from its figures", maxDeepRows))
		}
		out = append(out, r)
	}
	return out
}
