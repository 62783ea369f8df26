package reconcile

import (
	"context"
	"time"
)

// A record's hash is the XOR of one hash a column, each seeded by the column's position, and a
// window's checksum the wrapping sum of its records' hashes. The column hashes are the ones
// PostgreSQL computes natively and fast (timestamp_hash_extended for the time, hashint8extended
// for an integer column, hash_numeric_extended with the sign mixed in for a numeric one,
// hashtextextended for the canonical text of everything else), so a PostgreSQL side hashes in
// its own scan at about the cost of a count, and Tidemark computes the same values in Go for the
// sides it streams. How a column hashes follows how the PostgreSQL side stores it (hashPlan); a
// streamed value of an integer or numeric column whose canonical text is an integer or a
// canonical decimal hashes as that number, any other as its text, so two sides agree exactly
// when their canonical texts do.

// hashScheme names the scheme in stored runs: figures of another scheme are never reused.
const hashScheme = "pg-lookup3-2"

// colKind is how a column's values hash.
type colKind uint8

const (
	kindInt     colKind = iota // as an integer when the canonical text is one (the zero plan)
	kindText                   // as text, always
	kindNumeric                // as a number when the canonical text is a canonical decimal
)

// hashPlan says, by value position (keys, then compared columns), how each column hashes. The
// zero plan hashes every canonical integer as one (no PostgreSQL side says otherwise).
type hashPlan struct {
	kinds []colKind
}

func (p hashPlan) kind(pos int) colKind {
	if pos < len(p.kinds) {
		return p.kinds[pos]
	}
	return kindInt
}

// kindOf is how a PostgreSQL type's values hash.
func kindOf(dbType string) colKind {
	switch {
	case intType(dbType):
		return kindInt
	case dbType == "NUMERIC":
		return kindNumeric
	}
	return kindText
}

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
	return textHash(p, pos, v)
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
// the plan: as the number it reads as in an integer or numeric column, else as text.
func textHash[T string | []byte](p hashPlan, pos int, s T) uint64 {
	seed := seedOf(pos + 1)
	switch p.kind(pos) {
	case kindInt:
		if n, ok := canonInt(s); ok {
			return pgHashInt8(n, seed)
		}
	case kindNumeric:
		if h, ok := numericHash(s, seed); ok {
			return h
		}
	}
	return pgHash(s, seed)
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

func le32[T string | []byte](k T) uint32 {
	return uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
}

// pgHash is hash_bytes_extended(k, len(k), seed): hashtextextended(k, seed) for text.
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
	for _, k := range p.kinds {
		b = append(b, "itn"[k])
	}
	return string(b)
}

// planHashes makes the run's plan: a column hashes as an integer or a number when the
// PostgreSQL sides store it as one, else as text (PostgreSQL hashes such a column's text,
// whatever it reads as).
func planHashes(ctx context.Context, readers ...reader) (hashPlan, error) {
	var p hashPlan
	for _, r := range readers {
		pr, ok := r.(*postgresReader)
		if !ok {
			continue
		}
		types, err := pr.columnTypes(ctx)
		if err != nil {
			return hashPlan{}, err
		}
		if p.kinds == nil {
			p.kinds = make([]colKind, len(types)-1)
			for i, t := range types[1:] {
				p.kinds[i] = kindOf(t)
			}
			continue
		}
		for i, t := range types[1:] {
			if kindOf(t) != p.kinds[i] {
				p.kinds[i] = kindText // sides that store it differently agree on its text
			}
		}
	}
	return p, nil
}

// Numeric sign marks: hash_numeric_extended ignores the sign and gives every special value the
// seed, so the SQL mixes these in for a negative value and for Infinity.
const (
	negativeMark = 0x2d2d2d2d2d2d2d2d
	infinityMark = 0x494e46494e495459
)

// numericHash is hash_numeric_extended(v, seed), with negativeMark mixed in for a negative v, for
// v's canonical decimal text (canonDecimal's form); false for any other text. PostgreSQL hashes
// a numeric's base-10000 digits (as stored: 16-bit, little-endian) without its leading and
// trailing zero digits, XORed with the weight of its first digit.
func numericHash[T string | []byte](v T, seed uint64) (uint64, bool) {
	n := len(v)
	if n == 0 || n > 2000 {
		return 0, false
	}
	i, neg := 0, v[0] == '-'
	if neg {
		i = 1
	}
	dot := -1
	for j := i; j < n; j++ {
		switch c := v[j]; {
		case c == '.' && dot < 0:
			dot = j
		case c < '0' || c > '9':
			return 0, false
		}
	}
	intEnd := n
	if dot >= 0 {
		intEnd = dot
		// A canonical fraction has digits and no trailing zero.
		if dot == n-1 || v[n-1] == '0' {
			return 0, false
		}
	}
	// A canonical integer part has no leading zero (but a lone 0), and zero carries no sign.
	if intEnd == i || (v[i] == '0' && intEnd > i+1) {
		return 0, false
	}
	if intEnd == i+1 && v[i] == '0' && dot < 0 {
		if neg {
			return 0, false
		}
		return seed - 1, true
	}
	// Base-10000 digits: the integer part's groups aligned on the point from the right, the
	// fraction's from the left.
	intDigits, fracDigits := intEnd-i, 0
	if dot >= 0 {
		fracDigits = n - dot - 1
	}
	intGroups, fracGroups := (intDigits+3)/4, (fracDigits+3)/4
	groups := make([]uint16, 0, intGroups+fracGroups)
	for g := 0; g < intGroups; g++ {
		var d uint16
		for k := 0; k < 4; k++ {
			if pos := intEnd - (intGroups-g)*4 + k; pos >= i {
				d = d*10 + uint16(v[pos]-'0')
			}
		}
		groups = append(groups, d)
	}
	for g := 0; g < fracGroups; g++ {
		var d uint16
		for k := 0; k < 4; k++ {
			d *= 10
			if pos := dot + 1 + g*4 + k; pos < n {
				d += uint16(v[pos] - '0')
			}
		}
		groups = append(groups, d)
	}
	weight := intGroups - 1
	for len(groups) > 0 && groups[0] == 0 {
		groups, weight = groups[1:], weight-1
	}
	for len(groups) > 0 && groups[len(groups)-1] == 0 {
		groups = groups[:len(groups)-1]
	}
	b := make([]byte, 2*len(groups))
	for k, d := range groups {
		b[2*k], b[2*k+1] = byte(d), byte(d>>8)
	}
	h := pgHash(b, seed) ^ uint64(int64(weight))
	if neg {
		h ^= negativeMark
	}
	return h, true
}
