package reconcile

import (
	"database/sql"
	"maps"
	"slices"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

// TestPushedDownFiguresMatchGo: PostgreSQL's own figures (its hash functions, sums) equal
// the figures Go computes from the same rows read through canonSQL, for every type with a
// canonical form in SQL, NULLs, time zones, trailing decimal zeros and multi-byte text included.
// A float column has no canonical form in SQL: the side is streamed instead.
func TestPushedDownFiguresMatchGo(t *testing.T) {
	ctx, db := sourceDB(t)
	stmts := []string{
		`SET TIME ZONE 'America/New_York'`, // the session's zone must not change a figure
		`CREATE TABLE public.t (id bigint, sub int, at timestamptz, local timestamp, d date, amount numeric(12,4), small smallint,
			name text, code varchar(8), ok boolean, ref uuid, f double precision)`,
		`INSERT INTO public.t VALUES
			(1, 1, '2026-11-02 00:00:00+00', '2026-11-02 01:02:03.5', '2026-11-02', 12.5000, 1, 'plain', 'a', true, '0190b6e2-7a4c-7d3e-9f1a-2b3c4d5e6f70', 1.5),
			(2, 1, '2026-11-02 23:59:59.999999+00', '2026-11-02 00:00:00', '2026-01-31', -0.1000, -3, 'naïve café 東京', 'b', false, NULL, 1e6),
			(3, 2, '2026-11-03 00:00:00+00', NULL, NULL, 7, NULL, NULL, NULL, NULL, NULL, NULL),
			(3, 2, '2026-11-03 05:00:00+09', '1999-12-31 23:59:59.000001', '1999-12-31', 0, 0, '', '', true, '00000000-0000-0000-0000-000000000000', -0.0),
			(4, 7, '2026-11-04 12:34:56.789+02', '2026-11-04 12:34:56.789', '2026-11-04', 123456.7890, 32767, 'semi;colon:9', 'N;', false, NULL, NULL)`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		timeCol string
		cols    []string
		history bool
		pushed  bool
		windows int
	}{
		{"EveryType", "at", []string{"local", "d", "amount", "small", "name", "code", "ok", "ref"}, false, true, 3},
		{"EveryTypeAsHistory", "at", []string{"local", "d", "amount", "small", "name", "code", "ok", "ref"}, true, true, 3},
		{"AFloat", "at", []string{"amount", "f"}, false, false, 3},
		// A time column without a zone (read as UTC); key (3, 2)'s records are outside the span.
		{"ZonelessTime", "local", []string{"at", "amount", "name"}, false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &Spec{KeyColumns: []string{"id", "sub"}, TimeColumn: tc.timeCol, Columns: tc.cols, WindowSeconds: 86400, Since: since}
			src := SourceSpec{Kind: SourcePostgres, Keys: UniqueKeys}
			if tc.history {
				src.Keys = HistoryKeys
			}
			pr := &postgresReader{db: db, table: "public.t", spec: spec}
			plan, err := planHashes(ctx, pr)
			if err != nil {
				t.Fatal(err)
			}
			spec.hashing = plan
			pushed, ok, err := pr.figures(ctx, src, since, to, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.pushed {
				t.Fatalf("pushed down: %v, want %v", ok, tc.pushed)
			}
			streamed, _, err := streamFigures(ctx, spec, src, pr, since, to)
			if err != nil {
				t.Fatal(err)
			}
			if len(streamed.windows) != tc.windows {
				t.Fatalf("streamed windows %v; want %d", streamed.windows, tc.windows)
			}
			if !ok {
				return
			}
			for w, g := range streamed.windows {
				p := pushed.windows[w]
				if p == nil || *p != *g {
					t.Errorf("window %d: pushed %+v, Go %+v", w, p, g)
				}
			}
			if len(pushed.windows) != len(streamed.windows) {
				t.Errorf("pushed %d windows, Go %d", len(pushed.windows), len(streamed.windows))
			}
			// The segment figures of the second pass too.
			inSQL, inGo := map[segKey]segFig{}, map[segKey]segFig{}
			if ok, err := pr.segments(ctx, slices.Sorted(maps.Keys(streamed.windows)), to, inSQL); err != nil || !ok {
				t.Fatalf("segments pushed down: %v %v", ok, err)
			}
			if _, err := pr.read(ctx, since, to, func(r row) {
				k := segKey{windowIndex(spec, r.at), segmentOf(spec, r)}
				f := inGo[k]
				f.rows++
				f.sum += spec.hashing.record(r)
				inGo[k] = f
			}); err != nil {
				t.Fatal(err)
			}
			if len(inSQL) != len(inGo) {
				t.Errorf("segments: %d in SQL, %d in Go", len(inSQL), len(inGo))
			}
			for k, f := range inGo {
				if inSQL[k] != f {
					t.Errorf("segment %+v: SQL %+v, Go %+v", k, inSQL[k], f)
				}
			}
			// The first pass computed the same segment figures on both sides, in the same scan.
			for _, f := range []sideFigures{pushed, streamed} {
				if !f.segsAll || len(f.segs) != len(inGo) {
					t.Errorf("first-pass segments: all %v, %d of them; want all, %d", f.segsAll, len(f.segs), len(inGo))
				}
				for k, g := range inGo {
					if f.segs[k] != g {
						t.Errorf("first-pass segment %+v: %+v, want %+v", k, f.segs[k], g)
					}
				}
			}
			// Key (3, 2) is in two windows: repeated on a unique side, versions on a history one.
			want := map[int64]bool{}
			if !tc.history && tc.timeCol == "at" {
				want = map[int64]bool{1: true, 2: true}
			}
			for _, f := range []sideFigures{pushed, streamed} {
				if len(f.repeated) != len(want) || (len(want) > 0 && (!f.repeated[1] || !f.repeated[2])) {
					t.Errorf("repeated windows %v; want %v", f.repeated, want)
				}
			}
		})
	}
}

// TestUniqueIndexProvesNoRepeats: a valid unique index over NOT NULL key columns (or a subset
// of them) lets PostgreSQL skip the distinct count and the search for repeated keys, with the
// same figures; a partial index, one over a NULLable column, one over a column that is not a
// key, or none at all, do not, and a key repeated across windows is then still found.
func TestUniqueIndexProvesNoRepeats(t *testing.T) {
	ctx, db := sourceDB(t)
	var err error
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, ddl string
		keys      []string
		unique    bool
		again     string // rows repeating a key in windows 1 and 3, where the index allows it
	}{
		{"PrimaryKey", `CREATE TABLE public.u (id bigint PRIMARY KEY, sub int NOT NULL, at timestamptz NOT NULL, v text)`, []string{"id"}, true, ""},
		{"SubsetOfTheKeys", `CREATE TABLE public.u (id bigint NOT NULL UNIQUE, sub int NOT NULL, at timestamptz NOT NULL, v text)`, []string{"id", "sub"}, true, ""},
		{"IncludeColumns", `CREATE TABLE public.u (id bigint NOT NULL, sub int, at timestamptz NOT NULL, v text); CREATE UNIQUE INDEX ON public.u (id) INCLUDE (v)`, []string{"id"}, true, ""},
		{"Nullable", `CREATE TABLE public.u (id bigint UNIQUE, sub int, at timestamptz NOT NULL, v text)`, []string{"id"}, false,
			`(NULL, 4, '2026-11-02 12:00+00', 'n'), (NULL, 5, '2026-11-04 10:00+00', 'n')`},
		{"Partial", `CREATE TABLE public.u (id bigint NOT NULL, sub int, at timestamptz NOT NULL, v text); CREATE UNIQUE INDEX ON public.u (id) WHERE sub > 0`, []string{"id"}, false, `(1, 0, '2026-11-04 10:00+00', 'a')`},
		{"NotAKey", `CREATE TABLE public.u (id bigint NOT NULL, sub int NOT NULL UNIQUE, at timestamptz NOT NULL, v text)`, []string{"id"}, false, `(1, 4, '2026-11-04 10:00+00', 'a')`},
		{"NoIndex", `CREATE TABLE public.u (id bigint NOT NULL, sub int, at timestamptz NOT NULL, v text)`, []string{"id"}, false, `(1, 4, '2026-11-04 10:00+00', 'a')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range []string{`DROP TABLE IF EXISTS public.u`, tc.ddl} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			rows := `INSERT INTO public.u VALUES (1, 1, '2026-11-02 10:00+00', 'a'), (2, 2, '2026-11-02 11:00+00', NULL), (3, 3, '2026-11-03 10:00+00', 'c')`
			if tc.again != "" {
				rows += ", " + tc.again
			}
			if _, err := db.ExecContext(ctx, rows); err != nil {
				t.Fatal(err)
			}
			spec := &Spec{KeyColumns: tc.keys, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since}
			pr := &postgresReader{db: db, table: "public.u", spec: spec}
			if spec.hashing, err = planHashes(ctx, pr); err != nil {
				t.Fatal(err)
			}
			src := SourceSpec{Kind: SourcePostgres, Keys: UniqueKeys}
			pushed, ok, err := pr.figures(ctx, src, since, since.AddDate(0, 0, 9), nil)
			if err != nil || !ok {
				t.Fatalf("pushed down: %v %v", ok, err)
			}
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			unique, err := pr.uniqueKeys(ctx, tx)
			tx.Rollback() //nolint:errcheck // read-only
			if err != nil || unique != tc.unique {
				t.Errorf("unique keys proved: %v (%v), want %v", unique, err, tc.unique)
			}
			streamed, _, err := streamFigures(ctx, spec, src, pr, since, since.AddDate(0, 0, 9))
			if err != nil {
				t.Fatal(err)
			}
			for w, g := range streamed.windows {
				if p := pushed.windows[w]; p == nil || *p != *g {
					t.Errorf("window %d: pushed %+v, Go %+v", w, p, g)
				}
			}
			if want := !tc.unique; pushed.repeated[1] != want || pushed.repeated[3] != want || streamed.repeated[1] != want {
				t.Errorf("repeated windows: pushed %v, streamed %v; want windows 1 and 3 repeated: %v", pushed.repeated, streamed.repeated, want)
			}
		})
	}
}
