package reconcile

import (
	"context"
	"database/sql"
	"math"
	"strings"
	"testing"

	_ "github.com/lib/pq"

	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestHashesArePostgreSQLs: the Go ports give what PostgreSQL's hashtextextended and
// hashint8extended give, for texts of every length around the 12-byte blocks, multi-byte text,
// integers across the int4 boundary and negative ones, with and without a seed.
func TestHashesArePostgreSQLs(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("postgres", storagetest.DSN(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
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
			if got := pgHashString(s, seed); got != uint64(want) {
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
