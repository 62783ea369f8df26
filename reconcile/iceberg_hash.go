package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// hashReader is a reader that hashes its records itself, column by column, without writing
// each value as text: the first pass's hot loop over an Iceberg side.
type hashReader interface {
	hashRecords(ctx context.Context, spec *Spec, from, to time.Time, fn func(w int64, key, rec uint64)) (bytes, n int64, err error)
}

// hashSide feeds acc the records of [from, to), hashed by the reader when it can.
func hashSide(ctx context.Context, spec *Spec, r reader, acc *figureAcc, from, to time.Time) (bytes, n int64, err error) {
	if hr, ok := r.(hashReader); ok {
		return hr.hashRecords(ctx, spec, from, to, acc.addHashed)
	}
	bytes, err = r.read(ctx, from, to, func(rw row) { acc.add(rw); n++ })
	return bytes, n, err
}

// hashRecords gives fn the window, key hash and record hash of every record of [from, to): the
// same hashes hashPlan computes from canonical text, computed from the Arrow values.
func (r *icebergReader) hashRecords(ctx context.Context, spec *Spec, from, to time.Time, fn func(w int64, key, rec uint64)) (bytes, n int64, err error) {
	names, records, err := r.scan(ctx, [2]time.Time{from, to})
	if err != nil || records == nil {
		return 0, 0, err
	}
	lo, hi := ceilMicro(from), ceilMicro(to)
	since, win := spec.Since.UnixMicro(), spec.Window().Microseconds()
	keys := len(spec.KeyColumns)
	hs := make([]uint64, len(names)-1)
	var buf []byte
	for rec, err := range records {
		if err != nil {
			return bytes, n, fmt.Errorf("scan the Iceberg table: %w", err)
		}
		cols, err := columnsOf(rec, names)
		if err != nil {
			rec.Release()
			return bytes, n, err
		}
		micros, ok := microsOf(cols[0])
		if !ok {
			rec.Release()
			return bytes, n, fmt.Errorf("the time column %s is not a timestamp", r.spec.TimeColumn)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if cols[0].IsNull(i) {
				rec.Release()
				return bytes, n, fmt.Errorf("the time column %s is not a timestamp", r.spec.TimeColumn)
			}
			us := micros(i)
			if us < lo || us >= hi {
				continue
			}
			h, k := microsHash(us), uint64(0)
			for c := range hs {
				var size int
				hs[c], size, buf = spec.hashing.arrowHash(c, cols[c+1], i, buf)
				bytes += int64(size)
				h ^= hs[c]
				if c < keys {
					k ^= hs[c]
				}
			}
			fn((us-since)/win, k, h)
			n++
		}
		rec.Release()
	}
	return bytes, n, nil
}

// ceilMicro is t in microseconds since the epoch, rounded up: a record at microsecond us is at
// or after t exactly when us >= ceilMicro(t) (records keep microseconds, as canonical text does).
func ceilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if t.Nanosecond()%1000 != 0 {
		us++
	}
	return us
}

// microsOf reads a timestamp column as microseconds since the epoch (truncated, as canonical
// text keeps them).
func microsOf(a arrow.Array) (func(int) int64, bool) {
	ts, ok := a.(*array.Timestamp)
	if !ok {
		return nil, false
	}
	v := ts.Values()
	switch ts.DataType().(*arrow.TimestampType).Unit {
	case arrow.Second:
		return func(i int) int64 { return int64(v[i]) * 1_000_000 }, true
	case arrow.Millisecond:
		return func(i int) int64 { return int64(v[i]) * 1_000 }, true
	case arrow.Microsecond:
		return func(i int) int64 { return int64(v[i]) }, true
	default:
		return func(i int) int64 { return floorDiv(int64(v[i]), 1_000) }, true
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// arrowHash is the hash of the i-th value of column a at position pos (0-based among the
// values), the one valueHash gives its canonical text, and that text's length. buf is scratch.
func (p hashPlan) arrowHash(pos int, a arrow.Array, i int, buf []byte) (uint64, int, []byte) {
	if a.IsNull(i) {
		return nullHash(pos + 1), 1, buf
	}
	switch c := a.(type) {
	case *array.Int64:
		return p.intHash(pos, c.Value(i), buf)
	case *array.Int32:
		return p.intHash(pos, int64(c.Value(i)), buf)
	case *array.String:
		s := c.Value(i)
		return textHash(p, pos, s), len(s), buf
	case *array.Decimal128:
		if scale := c.DataType().(*arrow.Decimal128Type).Scale; scale >= 0 {
			if b, ok := appendDecimal(buf[:0], c.Value(i), scale); ok {
				return textHash(p, pos, b), len(b), b
			}
		}
	}
	s := canonArrow(a, i)
	return p.valueHash(pos, s), len(s), buf
}

func (p hashPlan) intHash(pos int, v int64, buf []byte) (uint64, int, []byte) {
	if p.kind(pos) == kindInt {
		return pgHashInt8(v, seedOf(pos+1)), digits(v), buf
	}
	buf = strconv.AppendInt(buf[:0], v, 10)
	return textHash(p, pos, buf), len(buf), buf
}

// digits is the length of v's decimal text.
func digits(v int64) int {
	n := 1
	if v < 0 {
		n++
	}
	u := uint64(v)
	if v < 0 {
		u = -u
	}
	for u >= 10 {
		u /= 10
		n++
	}
	return n
}

// appendDecimal appends the canonical text canonDecimal gives a decimal of this scale (no
// trailing zeros in the fraction, no point without one, no minus on zero), for one that fits
// 64 bits; false for a larger one.
func appendDecimal(b []byte, d decimal128.Num, scale int32) ([]byte, bool) {
	lo, hi := d.LowBits(), d.HighBits()
	if scale > 38 || !(hi == 0 && lo <= 1<<63-1) && !(hi == -1 && lo >= 1<<63) {
		return b, false
	}
	v := int64(lo)
	if v == 0 {
		return append(b, '0'), true
	}
	u := uint64(v)
	if v < 0 {
		b, u = append(b, '-'), -u
	}
	var tmp [64]byte
	t := strconv.AppendUint(tmp[:0], u, 10)
	if pad := int(scale) - len(t) + 1; pad > 0 { // 5 at scale 2 is 0.05
		t = append(append(tmp[32:32], zeros[:pad]...), t...)
	}
	whole, frac := t[:len(t)-int(scale)], t[len(t)-int(scale):]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	b = append(b, whole...)
	if len(frac) > 0 {
		b = append(append(b, '.'), frac...)
	}
	return b, true
}

var zeros = []byte("000000000000000000000000000000000000000")
