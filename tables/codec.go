package tables

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// The manifest cache stores manifest lists and manifests in a compact binary form: a version
// byte, a count, then one record after another. A path is stored as the prefix and suffix it
// shares with the previous path and what lies between; the fields an entry shares with the
// previous entry (format, spec, snapshot, partition fields) are left out. Decoding it is
// several times cheaper than gzip'd JSON and encoding needs no compressor (whose state alone,
// about 1 MiB per writer, cost more than the encoding); it takes about 2.6 times the bytes of
// gzip'd JSON on the benchmark's very regular tables. Rows written before hold gzip'd JSON,
// recognised by gzip's first byte, and are still read.
const (
	codecV2   byte = 2
	gzipMagic byte = 0x1f
)

// Kinds of partition values; scalarValue maps every value to one of them.
const (
	kindNil byte = iota
	kindString
	kindFalse
	kindTrue
	kindInt
	kindFloat
	kindIntDelta // an integer stored as its difference from the previous entry's
)

var errTruncated = errors.New("truncated cache record")

func encodeRefs(refs []manifestRef) []byte {
	b := make([]byte, 0, 16+len(refs)*48)
	b = append(b, codecV2)
	b = binary.AppendUvarint(b, uint64(len(refs)))
	prev := ""
	for _, r := range refs {
		b = appendPath(b, prev, r.Path)
		prev = r.Path
		b = binary.AppendVarint(b, r.Length)
		b = binary.AppendVarint(b, int64(r.Content))
		b = binary.AppendVarint(b, int64(r.SpecID))
		b = binary.AppendVarint(b, r.Added)
	}
	return b
}

func decodeRefs(b []byte) ([]manifestRef, error) {
	if len(b) > 0 && b[0] == gzipMagic {
		var refs []manifestRef
		return refs, gunzipJSON(b, &refs)
	}
	d, n, err := newDecoder(b)
	if err != nil {
		return nil, err
	}
	refs := make([]manifestRef, n)
	for i := range refs {
		r := &refs[i]
		d.path()
		r.Length = d.varint()
		r.Content = int(d.varint())
		r.SpecID = int32(d.varint())
		r.Added = d.varint()
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	for i, p := range d.paths() {
		refs[i].Path = p
	}
	return refs, nil
}

// Flags of an entry record: which fields repeat the previous entry's and are left out.
const (
	sameFormat byte = 1 << iota
	sameSpec
	sameSnapshot
	sameFields // the same partition field IDs, so only the values follow
)

func encodeEntries(es []entry) []byte {
	b := make([]byte, 0, 16+len(es)*32)
	b = append(b, codecV2)
	b = binary.AppendUvarint(b, uint64(len(es)))
	var prev entry
	for i := range es {
		e := &es[i]
		b = appendPath(b, prev.Path, e.Path)
		var flags byte
		if i > 0 && e.Format == prev.Format {
			flags |= sameFormat
		}
		if i > 0 && e.SpecID == prev.SpecID {
			flags |= sameSpec
		}
		if i > 0 && e.Snapshot == prev.Snapshot {
			flags |= sameSnapshot
		}
		fields := i > 0 && len(e.Partition) == len(prev.Partition)
		for j := 0; fields && j < len(e.Partition); j++ {
			fields = e.Partition[j].FieldID == prev.Partition[j].FieldID
		}
		if fields {
			flags |= sameFields
		}
		b = append(b, flags, byte(e.Content), byte(e.Status))
		if flags&sameFormat == 0 {
			b = binary.AppendUvarint(b, uint64(len(e.Format)))
			b = append(b, e.Format...)
		}
		if flags&sameSpec == 0 {
			b = binary.AppendVarint(b, int64(e.SpecID))
		}
		b = binary.AppendVarint(b, e.Size)
		b = binary.AppendVarint(b, e.Records)
		if flags&sameSnapshot == 0 {
			b = binary.AppendVarint(b, e.Snapshot)
		}
		if !fields {
			b = binary.AppendUvarint(b, uint64(len(e.Partition)))
		}
		for j, pv := range e.Partition {
			if !fields {
				b = binary.AppendVarint(b, int64(pv.FieldID))
				b = appendScalar(b, pv.Value)
				continue
			}
			// Partition values of neighbouring entries are usually equal or close (the same
			// hour, the next one): an integer after an integer is stored as the difference.
			x, ok1 := pv.Value.(int64)
			y, ok2 := prev.Partition[j].Value.(int64)
			if ok1 && ok2 {
				b = binary.AppendVarint(append(b, kindIntDelta), x-y)
			} else {
				b = appendScalar(b, pv.Value)
			}
		}
		prev = *e
	}
	return b
}

func decodeEntries(b []byte) ([]entry, error) {
	if len(b) > 0 && b[0] == gzipMagic {
		var es []entry
		if err := gunzipJSON(b, &es); err != nil {
			return nil, err
		}
		// JSON gave numbers as json.Number; fresh entries hold int64 or float64, and partition
		// keys must render the same whichever way a manifest came.
		for i := range es {
			for j := range es[i].Partition {
				if n, ok := es[i].Partition[j].Value.(json.Number); ok {
					es[i].Partition[j].Value = numberValue(n)
				}
			}
		}
		return es, nil
	}
	d, n, err := newDecoder(b)
	if err != nil {
		return nil, err
	}
	es := make([]entry, n)
	var parts []partValue // one backing array for every entry's partition
	var prev entry
	for i := range es {
		e := &es[i]
		d.path()
		flags := d.byte()
		if i == 0 && flags != 0 {
			d.corrupt("the first entry repeats a previous one")
		}
		e.Content, e.Status = int8(d.byte()), int8(d.byte())
		if flags&sameFormat != 0 {
			e.Format = prev.Format // one string for all the entries of a format
		} else {
			e.Format = string(d.bytes())
		}
		if flags&sameSpec != 0 {
			e.SpecID = prev.SpecID
		} else {
			e.SpecID = int32(d.varint())
		}
		e.Size = d.varint()
		e.Records = d.varint()
		if flags&sameSnapshot != 0 {
			e.Snapshot = prev.Snapshot
		} else {
			e.Snapshot = d.varint()
		}
		np := len(prev.Partition)
		if flags&sameFields == 0 {
			np = d.count(2)
		}
		if np > 0 {
			if cap(parts)-len(parts) < np {
				// Room for the rest of the entries if they are partitioned alike, bounded by
				// what the rest of the record can hold (a byte a value at least).
				parts = make([]partValue, 0, max(min(np*(n-i), len(d.b)), np))
			}
			start := len(parts)
			for j := range np {
				var pv partValue
				if flags&sameFields == 0 {
					pv.FieldID = int(d.varint())
					pv.Value = d.scalar(nil)
				} else {
					pv.FieldID = prev.Partition[j].FieldID
					pv.Value = d.scalar(prev.Partition[j].Value)
				}
				parts = append(parts, pv)
			}
			e.Partition = parts[start:len(parts):len(parts)]
		}
		prev = *e
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	for i, p := range d.paths() {
		es[i].Path = p
	}
	return es, nil
}

// numberValue is a JSON number as the value a fresh read gives: int64, else float64.
func numberValue(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	if f, err := n.Float64(); err == nil {
		return f
	}
	return n.String()
}

// appendPath stores a path as the lengths of the prefix and the suffix it shares with the
// previous path, and what lies between ("...data/00001.parquet" after "...data/00000.parquet"
// is a byte of its own).
func appendPath(b []byte, prev, path string) []byte {
	pre := 0
	for pre < len(prev) && pre < len(path) && prev[pre] == path[pre] {
		pre++
	}
	suf := 0
	for suf < len(prev)-pre && suf < len(path)-pre && prev[len(prev)-1-suf] == path[len(path)-1-suf] {
		suf++
	}
	b = binary.AppendUvarint(b, uint64(pre))
	b = binary.AppendUvarint(b, uint64(suf))
	b = binary.AppendUvarint(b, uint64(len(path)-pre-suf))
	return append(b, path[pre:len(path)-suf]...)
}

func appendScalar(b []byte, v any) []byte {
	switch x := scalarValue(v).(type) {
	case nil:
		return append(b, kindNil)
	case string:
		b = append(b, kindString)
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case bool:
		if x {
			return append(b, kindTrue)
		}
		return append(b, kindFalse)
	case int64:
		return binary.AppendVarint(append(b, kindInt), x)
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, kindFloat), math.Float64bits(x))
	case json.Number:
		return appendScalar(b, numberValue(x))
	}
	panic(fmt.Sprintf("tables: scalarValue returned %T", v)) // unreachable: scalarValue ends in a string
}

// decoder reads a cache record; the first error sticks and later reads return zero values.
type decoder struct {
	b    []byte
	err  error
	prev []byte // the previous path
	all  []byte // the paths read, one after another
	ends []int  // where each ends in all
}

func newDecoder(b []byte) (*decoder, int, error) {
	if len(b) == 0 || b[0] != codecV2 {
		return nil, 0, errors.New("unknown cache record format")
	}
	d := &decoder{b: b[1:]}
	n := d.count(4)
	return d, n, d.err
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errTruncated
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count of items that take at least min bytes each, refusing one the rest of
// the record cannot hold (a corrupt count must not allocate gigabytes).
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if n > uint64(len(d.b)/min) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// path reads a prefix-compressed path into the decoder; paths hands them out.
func (d *decoder) path() {
	pre, suf := d.uvarint(), d.uvarint()
	if pre > uint64(len(d.prev)) || suf > uint64(len(d.prev))-pre {
		d.fail()
		return
	}
	mid := d.bytes()
	start := len(d.all)
	d.all = append(d.all, d.prev[:pre]...)
	d.all = append(d.all, mid...)
	d.all = append(d.all, d.prev[len(d.prev)-int(suf):]...)
	d.prev = d.all[start:]
	d.ends = append(d.ends, len(d.all))
}

// paths returns the paths read, in order, cut from one string: one allocation for a whole
// manifest instead of one per entry.
func (d *decoder) paths() []string {
	all := string(d.all)
	out := make([]string, len(d.ends))
	start := 0
	for i, end := range d.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// scalar reads a partition value; prev is the previous entry's value in the same field.
func (d *decoder) scalar(prev any) any {
	switch d.byte() {
	case kindNil:
		return nil
	case kindString:
		return string(d.bytes())
	case kindFalse:
		return false
	case kindTrue:
		return true
	case kindInt:
		return d.varint()
	case kindFloat:
		if len(d.b) < 8 {
			d.fail()
			return nil
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return v
	case kindIntDelta:
		if y, ok := prev.(int64); ok {
			return y + d.varint()
		}
		d.corrupt("an integer difference without a previous integer")
		return nil
	}
	d.corrupt("unknown partition value kind")
	return nil
}

func (d *decoder) corrupt(why string) {
	if d.err == nil {
		d.err = errors.New("corrupt cache record: " + why)
	}
	d.b = nil
}

func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		return errors.New("trailing bytes after cache record")
	}
	return d.err
}
