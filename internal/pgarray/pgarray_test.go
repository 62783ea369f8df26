package pgarray_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lib/pq"

	"github.com/tidemark/tidemark/internal/pgarray"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestTextRoundTrips sends arrays through a real PostgreSQL and reads back every element as it
// was, whatever it holds.
func TestTextRoundTrips(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	cases := map[string][]string{
		"one":      {"a"},
		"empty":    {""},
		"null":     {"NULL", "null", ""},
		"quotes":   {`say "hi"`, `"`, `""`},
		"escapes":  {`back\slash`, `\`, `\"`, `end\`},
		"syntax":   {"{a,b}", "x,y", "} {", " lead", "trail ", "tab\there", "new\nline"},
		"unicode":  {"é", "日本語", "\u00a0"},
		"json":     {`{"a":[1,"b\"c"],"d":{"e":null}}`},
		"uuids":    {"0190a6f1-7c2e-7d4a-9b1e-0123456789ab", "2026-12-01T04:48:01.123456Z"},
		"no items": {},
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			rows, err := db.SQL.QueryContext(context.Background(), "SELECT x FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i", pgarray.Text(in))
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				got = append(got, s)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, in) && !(len(got) == 0 && len(in) == 0) {
				t.Fatalf("got %q, want %q", got, in)
			}
		})
	}
	var isNull bool
	if err := db.SQL.QueryRowContext(context.Background(), "SELECT $1::text[] IS NULL", pgarray.Text(nil)).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("nil Text: NULL = %v, err %v", isNull, err)
	}
}

// TestTypedRoundTrips sends typed arrays through a real PostgreSQL: each element is read as its
// type, "" as NULL.
func TestTypedRoundTrips(t *testing.T) {
	db := storagetest.Open(t, "postgres")
	cases := []struct {
		name, pgType string
		in           []string
		want         string // the array as PostgreSQL prints it back
	}{
		{"uuids", "uuid", []string{"0190a6f1-7c2e-7d4a-9b1e-0123456789ab", ""}, "{0190a6f1-7c2e-7d4a-9b1e-0123456789ab,NULL}"},
		{"times", "timestamptz", []string{"2026-12-01T04:48:01.123456789Z", "", "2026-12-01T04:48:01Z"},
			"{\"2026-12-01 04:48:01.123457+00\",NULL,\"2026-12-01 04:48:01+00\"}"},
		{"numbers", "bigint", []string{"1", "", "-9223372036854775808"}, "{1,NULL,-9223372036854775808}"},
		{"booleans", "boolean", []string{"true", "false", ""}, "{t,f,NULL}"},
		{"all null", "uuid", []string{"", ""}, "{NULL,NULL}"},
		{"none", "uuid", []string{}, "{}"},
	}
	// The time zone is a session's: one connection sets it and runs every case.
	conn, err := db.SQL.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "SET TIME ZONE 'UTC'"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got string
			err := conn.QueryRowContext(context.Background(), fmt.Sprintf("SELECT ($1::%s[])::text", c.pgType), pgarray.Typed(c.in)).Scan(&got)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	var isNull bool
	if err := conn.QueryRowContext(context.Background(), "SELECT $1::uuid[] IS NULL", pgarray.Typed(nil)).Scan(&isNull); err != nil || !isNull {
		t.Fatalf("nil Typed: NULL = %v, err %v", isNull, err)
	}
	// Not a value of the type: the server refuses the batch rather than store something else.
	if _, err := conn.ExecContext(context.Background(), "SELECT $1::uuid[]", pgarray.Typed{"not-a-uuid"}); err == nil {
		t.Fatal("an invalid uuid was accepted")
	}
}

// TestTextMatchesPQ: the literal is the one lib/pq's StringArray writes (which always quotes).
func TestTextMatchesPQ(t *testing.T) {
	for _, in := range [][]string{nil, {}, {""}, {`a"b\c`, "d,e", "NULL"}, {strings.Repeat(`"\`, 40)}} {
		want, _ := pq.StringArray(in).Value()
		got, _ := pgarray.Text(in).Value()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: got %v, want %v", in, got, want)
		}
	}
}

// BenchmarkTextValue compares the literal for a batch's column of event payloads (JSON, quotes
// to escape) and of IDs with lib/pq's StringArray.
func BenchmarkTextValue(b *testing.B) {
	payload := `{"eventType":"COMPLETE","eventTime":"2026-12-01T04:48:01Z","run":{"runId":"0190a6f1-7c2e-7d4a-9b1e-0123456789ab"},"job":{"namespace":"bench","name":"job_1"}}`
	cols := map[string][]string{"payloads": slices.Repeat([]string{payload}, 400), "ids": slices.Repeat([]string{"0190a6f1-7c2e-7d4a-9b1e-0123456789ab"}, 400)}
	for name, col := range cols {
		b.Run(name+"/pgarray", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = pgarray.Text(col).Value()
			}
		})
		b.Run(name+"/pq", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = pq.StringArray(col).Value()
			}
		})
	}
}

// BenchmarkServerReads measures, on a real PostgreSQL, what the server pays to read a bulk
// statement's parameters (the client's encoding included), 2,000 rows at a time:
//   - uuids: a uuid[] (Typed) against a text[] cast per element (how uuid columns went before);
//   - constants: 7 columns with one value in every row, as arrays against as one parameter
//     each (how usage's bulk inserts send them now), into a temporary table with 2 varying columns.
func BenchmarkServerReads(b *testing.B) {
	db := storagetest.Open(b, "postgres")
	ctx := context.Background()
	conn, err := db.SQL.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const n = 2000
	ids, keys := make([]string, n), make([]string, n)
	for i := range n {
		ids[i], keys[i] = fmt.Sprintf("0190a6f1-7c2e-7d4a-9b1e-%012x", i), fmt.Sprintf("%064x", i)
	}
	run := func(b *testing.B, q string, args ...any) {
		for b.Loop() {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				b.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("uuids/text-cast", func(b *testing.B) {
		run(b, "SELECT count(NULLIF(x, '')::uuid) FROM unnest($1::text[]) AS u(x)", pgarray.Text(ids))
	})
	b.Run("uuids/typed", func(b *testing.B) { run(b, "SELECT count(x) FROM unnest($1::uuid[]) AS u(x)", pgarray.Typed(ids)) })

	if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE bench_rows (k text, a uuid, c1 text, c2 text, c3 timestamptz, c4 text,
		c5 boolean, c6 text, c7 text)`); err != nil {
		b.Fatal(err)
	}
	consts := [][2]string{{"openlineage", "text"}, {"", "text"}, {"2026-12-05T02:00:00.123456Z", "timestamptz"}, {"", "text"},
		{"false", "boolean"}, {"", "text"}, {"2026-12-05", "text"}}
	arrays := []any{pgarray.Text(keys), pgarray.Typed(ids)}
	scalars := []any{pgarray.Text(keys), pgarray.Typed(ids)}
	var arrayCols, scalarCols []string
	for i, c := range consts { // as usage's bulk inserts send them: text as Text and "", other types Typed
		var arr, one any = pgarray.Text(slices.Repeat([]string{c[0]}, n)), c[0]
		if c[1] != "text" {
			arr = pgarray.Typed(slices.Repeat([]string{c[0]}, n))
		}
		arrays, scalars = append(arrays, arr), append(scalars, one)
		arrayCols, scalarCols = append(arrayCols, fmt.Sprintf("$%d::%s[]", i+3, c[1])), append(scalarCols, fmt.Sprintf("$%d::%s", i+3, c[1]))
	}
	b.Run("constants/arrays", func(b *testing.B) {
		run(b, "INSERT INTO bench_rows SELECT * FROM unnest($1::text[], $2::uuid[], "+strings.Join(arrayCols, ", ")+")", arrays...)
	})
	b.Run("constants/scalars", func(b *testing.B) {
		run(b, "INSERT INTO bench_rows SELECT x.k, x.a, "+strings.Join(scalarCols, ", ")+" FROM unnest($1::text[], $2::uuid[]) AS x(k, a)", scalars...)
	})
}

// FuzzText: for any elements, the literal is lib/pq's.
func FuzzText(f *testing.F) {
	f.Add("a", `b"c\d`, "")
	f.Fuzz(func(t *testing.T, x, y, z string) {
		in := []string{x, y, z}
		want, _ := pq.StringArray(in).Value()
		got, _ := pgarray.Text(in).Value()
		if got != want {
			t.Fatalf("%q: got %v, want %v", in, got, want)
		}
		// Typed writes the same literal but for NULL in place of each "" element.
		typed, _ := pgarray.Typed(in).Value()
		parts := make([]string, len(in))
		for i, s := range in {
			parts[i] = "NULL"
			if s != "" {
				one, _ := pq.StringArray{s}.Value()
				parts[i] = strings.TrimSuffix(strings.TrimPrefix(one.(string), "{"), "}")
			}
		}
		if wantTyped := "{" + strings.Join(parts, ",") + "}"; typed != wantTyped {
			t.Fatalf("%q: Typed got %v, want %v", in, typed, wantTyped)
		}
	})
}
