package reconcile

import (
	"fmt"
	"math"
	"strings"
	"testing"

	_ "github.com/lib/pq"
)

// TestHashesArePostgreSQLs: the Go ports give what PostgreSQL's hashtextextended and
// hashint8extended give, for texts of every length around the 12-byte blocks, multi-byte text,
// integers across the int4 boundary and negative ones, with and without a seed.
func TestHashesArePostgreSQLs(t *testing.T) {
	ctx, db := sourceDB(t)
	texts := []string{"", "naïve café 東京", "O'Brien\\x", strings.Repeat("é", 40)}
	for n := 1; n <= 37; n++ {
		texts = append(texts, strings.Repeat("abcdefghijk", 4)[:n])
	}
	ints := []int64{0, 1, -1, 42, math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxInt64, math.MinInt64, 1780272000123456}
	for _, seed := range []uint64{0, 1, seedOf(3), math.MaxUint64} {
		for _, s := range texts {
			var want int64
			if err := db.QueryRowContext(ctx, `SELECT hashtextextended($1 COLLATE "C", $2)`, s, int64(seed)).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got := pgHash(s, seed); got != uint64(want) {
				t.Errorf("hashtextextended(%q, %d) = %x in PostgreSQL, %x in Go", s, seed, uint64(want), got)
			}
		}
		for _, v := range ints {
			var want int64
			if err := db.QueryRowContext(ctx, `SELECT hashint8extended($1::int8, $2)`, v, int64(seed)).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if got := pgHashInt8(v, seed); got != uint64(want) {
				t.Errorf("hashint8extended(%d, %d) = %x in PostgreSQL, %x in Go", v, seed, uint64(want), got)
			}
		}
	}
}

// TestCanonInt: only the canonical text of a 64-bit integer reads as one (so a value hashes
// as an integer exactly when PostgreSQL's integer column would print that text).
func TestCanonInt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"0", true}, {"7", true}, {"-7", true}, {"9223372036854775807", true}, {"-9223372036854775808", true},
		{"", false}, {"-", false}, {"-0", false}, {"007", false}, {"+7", false}, {"7.0", false}, {" 7", false},
		{"9223372036854775808", false}, {"1e3", false},
	} {
		if _, ok := canonInt(tc.in); ok != tc.want {
			t.Errorf("canonInt(%q) = %v, want %v", tc.in, ok, tc.want)
		}
	}
}

// TestNumericHashIsPostgreSQLs: numericHash of a canonical decimal is what PostgreSQL's
// hash_numeric_extended gives the number, with the sign mixed in as the SQL does (so -5 and 5
// differ), for integers, fractions, values under one, long ones and zero; a decimal text that is
// not canonical (trailing or leading zeros, a bare point, -0) does not hash as a number.
func TestNumericHashIsPostgreSQLs(t *testing.T) {
	ctx, db := sourceDB(t)
	// Stored with trailing zeros (as numeric(60,12) keeps them), which PostgreSQL ignores.
	values := []string{"0", "1", "-1", "5", "-5", "12.5", "-12.5", "0.05", "-0.0001", "0.00000001", "10000", "10000.0001",
		"99999999", "123456789012345678901234567890.123456789", "7", "1234.5678", "100000000", "0.1", "12345.6"}
	seed := seedOf(2)
	for _, v := range values {
		var want int64
		err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT hash_numeric_extended(c, $1) # CASE WHEN c < 0 THEN %d WHEN c = 'Infinity' THEN %d ELSE 0 END
			FROM (SELECT $2::numeric(60,12) AS c) x`, int64(negativeMark), int64(infinityMark)), int64(seed), v).Scan(&want)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := numericHash(v, seed)
		if !ok || got != uint64(want) {
			t.Errorf("%s: PostgreSQL %x, Go %x (%v)", v, uint64(want), got, ok)
		}
	}
	if a, _ := numericHash("5", seed); a == func() uint64 { b, _ := numericHash("-5", seed); return b }() {
		t.Error("5 and -5 hash alike")
	}
	for _, v := range []string{"", "-", "1.50", "01", "-0", "1.", ".5", "1e3", "1.2.3", "- 1", "0.0"} {
		if _, ok := numericHash(v, seed); ok {
			t.Errorf("%q hashes as a number; it is not a canonical decimal", v)
		}
	}
}
