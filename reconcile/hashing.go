package reconcile

import (
	"context"
	"time"
)

// A record's hash is the XOR of one hash a column, each seeded by the column's position, and a
// window's checksum the wrapping sum of its records' hashes. The column hashes are the ones
// PostgreSQL computes natively and fast (hashint8extended for integers, timestamp_hash_extended
// for the time, hashtextextended for the canonical text of everything else), so
// a PostgreSQL side hashes in its own scan at about the cost of a count, and Tidemark computes
// the same values in Go for the sides it streams. A column is hashed as an integer when the
// PostgreSQL side stores it as one (hashPlan); a streamed value of such a column whose canonical
// text is an integer hashes as that integer, any other as its text, so two sides agree exactly
// when their canonical texts do.

// hashScheme names the scheme in stored runs: figures of another scheme are never reused.
const hashScheme = "pg-lookup3-1"

// hashPlan says, by value position (keys, then compared columns), which columns hash as
// integers. The zero plan hashes every canonical integer as one (no PostgreSQL side stores the
// column as text).
type hashPlan struct {
	text []bool // true: hashed as text even when it reads as an integer
}

func (p hashPlan) asText(pos int) bool { return pos < len(p.text) && p.text[pos] }

// seedOf is a column's seed: position 0 is the time, then the values.
func seedOf(pos int) uint64 { return 0x5449444d00000000 + uint64(pos) }

// nullHash stands for NULL in a column.
func nullHash(pos int) uint64 { return pgHashUint32(0xffffffff, seedOf(pos)^0x4e554c4c) }

// timeHash hashes a record's time (to the microsecond, as canonical text keeps it) as
// PostgreSQL's timestamp_hash_extended does: the microseconds since 2000-01-01, as stored.
func timeHash(t time.Time) uint64 { return microsHash(t.UnixMicro()) }

// pgEpoch is 2000-01-01 in microseconds since 1970-01-01: PostgreSQL's timestamps count from it.
const pgEpoch = 946_684_800_000_000

// microsHash hashes a time given in microseconds since 1970-01-01.
func microsHash(us int64) uint64 { return pgHashInt8(us-pgEpoch, seedOf(0)) }

// valueHash hashes the canonical text of the value at position pos (0-based among the values).
func (p hashPlan) valueHash(pos int, v string) uint64 {
	if v == null {
		return nullHash(pos + 1)
	}
	if !p.asText(pos) {
		if n, ok := canonInt(v); ok {
			return pgHashInt8(n, seedOf(pos+1))
		}
	}
	return pgHash(v, seedOf(pos+1))
}

// hashes are a record's key hash and record hash.
func (p hashPlan) hashes(r row, keys int) (key, rec uint64) {
	rec = timeHash(r.at)
	for i, v := range r.vals {
		h := p.valueHash(i, v)
		rec ^= h
		if i < keys {
			key ^= h
		}
	}
	return key, rec
}

// record is a record's hash.
func (p hashPlan) record(r row) uint64 {
	_, h := p.hashes(r, 0)
	return h
}

// key is the hash of a record's key.
func (p hashPlan) key(vals []string) uint64 {
	var k uint64
	for i, v := range vals {
		k ^= p.valueHash(i, v)
	}
	return k
}

// canonInt reads the canonical text of a 64-bit integer (no sign on zero, no leading zeros).
func canonInt[T string | []byte](s T) (int64, bool) {
	n := len(s)
	if n == 0 || n > 20 {
		return 0, false
	}
	i, neg := 0, s[0] == '-'
	if neg {
		i = 1
	}
	if i == n || (s[i] == '0' && (n > i+1 || neg)) {
		return 0, false
	}
	var u uint64
	for j := i; j < n; j++ {
		d := s[j] - '0'
		if d > 9 || u > (1<<64-1)/10 {
			return 0, false
		}
		u = u*10 + uint64(d)
		if u < uint64(d) {
			return 0, false
		}
	}
	switch {
	case !neg && u <= 1<<63-1:
		return int64(u), true
	case neg && u <= 1<<63:
		return -int64(u), true
	}
	return 0, false
}

// textHash hashes a value's canonical text at position pos (0-based among the values) under
// the plan: as the integer it reads as, unless the column hashes as text.
func (p hashPlan) textHash(pos int, s []byte) uint64 {
	if !p.asText(pos) {
		if n, ok := canonInt(s); ok {
			return pgHashInt8(n, seedOf(pos+1))
		}
	}
	return pgHash(s, seedOf(pos+1))
}

// The functions below are PostgreSQL's hash_bytes_extended, hash_bytes_uint32_extended and
// hashint8extended (Bob Jenkins' lookup3, as PostgreSQL computes it on a little-endian machine,
// which is what hashtextextended gives for text under a deterministic collation).

func rot(x uint32, k uint) uint32 { return x<<k | x>>(32-k) }

func mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= rot(c, 4)
	c += b
	b -= a
	b ^= rot(a, 6)
	a += c
	c -= b
	c ^= rot(b, 8)
	b += a
	a -= c
	a ^= rot(c, 16)
	c += b
	b -= a
	b ^= rot(a, 19)
	a += c
	c -= b
	c ^= rot(b, 4)
	b += a
	return a, b, c
}

func final(a, b, c uint32) (uint32, uint32) {
	c ^= b
	c -= rot(b, 14)
	a ^= c
	a -= rot(c, 11)
	b ^= a
	b -= rot(a, 25)
	c ^= b
	c -= rot(b, 16)
	a ^= c
	a -= rot(c, 4)
	b ^= a
	b -= rot(a, 14)
	c ^= b
	c -= rot(b, 24)
	return b, c
}

// pgHashString is hashtextextended(s, seed).
func pgHashString(s string, seed uint64) uint64 { return pgHash(s, seed) }

func le32[T string | []byte](k T) uint32 {
	return uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
}

// pgHash is hash_bytes_extended(k, len(k), seed).
func pgHash[T string | []byte](k T, seed uint64) uint64 {
	a := 0x9e3779b9 + uint32(len(k)) + 3923095
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = mix(a, b, c)
	}
	for len(k) >= 12 {
		a += le32(k)
		b += le32(k[4:])
		c += le32(k[8:])
		a, b, c = mix(a, b, c)
		k = k[12:]
	}
	// The last 11 bytes; the lowest byte of c is left for the length.
	switch len(k) {
	case 11:
		c += uint32(k[10]) << 24
		fallthrough
	case 10:
		c += uint32(k[9]) << 16
		fallthrough
	case 9:
		c += uint32(k[8]) << 8
		fallthrough
	case 8:
		b += uint32(k[7]) << 24
		fallthrough
	case 7:
		b += uint32(k[6]) << 16
		fallthrough
	case 6:
		b += uint32(k[5]) << 8
		fallthrough
	case 5:
		b += uint32(k[4])
		fallthrough
	case 4:
		a += uint32(k[3]) << 24
		fallthrough
	case 3:
		a += uint32(k[2]) << 16
		fallthrough
	case 2:
		a += uint32(k[1]) << 8
		fallthrough
	case 1:
		a += uint32(k[0])
	}
	b, c = final(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

// pgHashUint32 is hash_bytes_uint32_extended(k, seed).
func pgHashUint32(k uint32, seed uint64) uint64 {
	a := uint32(0x9e3779b9 + 4 + 3923095)
	b, c := a, a
	if seed != 0 {
		a += uint32(seed >> 32)
		b += uint32(seed)
		a, b, c = mix(a, b, c)
	}
	a += k
	b, c = final(a, b, c)
	return uint64(b)<<32 | uint64(c)
}

// pgHashInt8 is hashint8extended(v, seed): an integer that fits 32 bits hashes as its int4 would.
func pgHashInt8(v int64, seed uint64) uint64 {
	lo, hi := uint32(v), uint32(v>>32)
	if v >= 0 {
		lo ^= hi
	} else {
		lo ^= ^hi
	}
	return pgHashUint32(lo, seed)
}

// String names the scheme and the plan, as stored with a run's figures.
func (p hashPlan) String() string {
	b := []byte(hashScheme + ":")
	for _, t := range p.text {
		if t {
			b = append(b, 't')
		} else {
			b = append(b, 'i')
		}
	}
	return string(b)
}

// planHashes makes the run's plan: a column hashes as text when a PostgreSQL side stores it as
// anything but an integer (PostgreSQL hashes such a column's text, whatever it reads as).
func planHashes(ctx context.Context, readers ...reader) (hashPlan, error) {
	var p hashPlan
	for _, r := range readers {
		pr, ok := r.(*postgresReader)
		if !ok {
			continue
		}
		types, err := pr.columnTypes(ctx, pr.db)
		if err != nil {
			return hashPlan{}, err
		}
		if p.text == nil {
			p.text = make([]bool, len(types)-1)
		}
		for i, t := range types[1:] {
			p.text[i] = p.text[i] || !intType(t)
		}
	}
	return p, nil
}
