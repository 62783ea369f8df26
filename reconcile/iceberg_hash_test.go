package reconcile

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestArrowHashesAreTheTextHashes: hashing an Arrow value directly gives what hashing its
// canonical text gives, under either plan, for every type with a fast path (integers, text
// that reads as an integer or not, decimals small, negative, zero, whole and too large for 64
// bits) and for NULL; and the time read as microseconds is the canonical time's.
func TestArrowHashesAreTheTextHashes(t *testing.T) {
	mem := memory.DefaultAllocator
	i64 := array.NewInt64Builder(mem)
	i64.AppendValues([]int64{0, -1, 42, math.MaxInt64, math.MinInt64, 1 << 40}, nil)
	i64.AppendNull()
	i32 := array.NewInt32Builder(mem)
	i32.AppendValues([]int32{0, -7, math.MaxInt32, math.MinInt32}, nil)
	str := array.NewStringBuilder(mem)
	str.AppendValues([]string{"", "123", "-0", "007", "naïve café", "O'Brien", "9223372036854775808"}, nil)
	str.AppendNull()
	dec := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 2})
	for _, v := range []int64{0, 5, -5, 100, -100, 1250, 123456789, -1, 10, math.MaxInt64, math.MinInt64 + 1} {
		dec.Append(decimal128.FromI64(v))
	}
	dec.Append(decimal128.New(1, 5)) // past 64 bits
	dec.Append(decimal128.New(-2, 5))
	dec.AppendNull()
	dec0 := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 10, Scale: 0})
	dec0.AppendValues([]decimal128.Num{decimal128.FromI64(0), decimal128.FromI64(-3), decimal128.FromI64(1000)}, nil)
	arrays := []arrow.Array{i64.NewArray(), i32.NewArray(), str.NewArray(), dec.NewArray(), dec0.NewArray()}
	every := func(k colKind) hashPlan { return hashPlan{kinds: []colKind{k, k, k, k, k}} }
	for _, plan := range []hashPlan{{}, every(kindText), every(kindNumeric)} {
		for pos, a := range arrays {
			for i := 0; i < a.Len(); i++ {
				want := plan.valueHash(pos, canonArrow(a, i))
				got, size, _ := plan.arrowHash(pos, a, i, nil)
				if got != want {
					t.Errorf("%s column %d value %d (%q), plan %v: %x from Arrow, %x from text", a.DataType(), pos, i, canonArrow(a, i), plan, got, want)
				}
				if c := canonArrow(a, i); c != null && size != len(c) {
					t.Errorf("%s value %q: size %d, want %d", a.DataType(), c, size, len(c))
				}
			}
		}
	}
	for _, unit := range []arrow.TimeUnit{arrow.Second, arrow.Millisecond, arrow.Microsecond, arrow.Nanosecond} {
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: unit, TimeZone: "UTC"})
		for _, at := range []time.Time{time.Date(2026, 6, 1, 12, 0, 0, 123456789, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC)} {
			v, err := arrow.TimestampFromTime(at, unit)
			if err != nil {
				t.Fatal(err)
			}
			b.Append(v)
		}
		a := b.NewArray()
		micros, ok := microsOf(a)
		if !ok {
			t.Fatalf("%s: not read as a timestamp", unit)
		}
		for i := 0; i < a.Len(); i++ {
			at, err := time.Parse(time.RFC3339Nano, canonArrow(a, i))
			if err != nil {
				t.Fatal(err)
			}
			if micros(i) != at.UnixMicro() {
				t.Errorf("%s value %d: %d µs, canonical text says %d", unit, i, micros(i), at.UnixMicro())
			}
		}
	}
}
