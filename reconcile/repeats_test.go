package reconcile

import (
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// TestRepeatedKeysByKey: on a side without a unique index, finding the repeated keys (whether
// any repeats, then by key: first and last window, count) gives the figures Go computes from
// every record: distinct keys per window, the repeated windows and segments. A key found three
// times across windows cannot be placed so, nor can more than maxRepeatedKeys repeated keys:
// PostgreSQL then counts distinct keys, with the same figures.
func TestRepeatedKeysByKey(t *testing.T) {
	ctx, db := sourceDB(t)
	var err error
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, insert string
		none, byKey  bool
	}{
		{"NoRepeats", `VALUES (1, '2026-11-01 01:00+00', 'a'), (2, '2026-11-02 01:00+00', 'b')`, true, true},
		// Key 1 three times in window 0, key 2 in windows 1 and 3, key 5 twice in window 4 with
		// the same values, key 6 once.
		{"WithinAndAcross", `VALUES (1, '2026-11-01 01:00+00', 'a'), (1, '2026-11-01 02:00+00', 'a'), (1, '2026-11-01 03:00+00', 'b'),
			(2, '2026-11-02 01:00+00', 'x'), (2, '2026-11-04 01:00+00', 'x'), (5, '2026-11-05 01:00+00', 'e'), (5, '2026-11-05 01:00+00', 'e'),
			(6, '2026-11-05 02:00+00', 'f')`, false, true},
		// Key 7 once in window 1, twice in window 8 (outside the run's span: not a repeat here).
		{"RepeatedOutsideTheSpan", `VALUES (7, '2026-11-02 01:00+00', 'g'), (7, '2026-11-10 01:00+00', 'g'), (7, '2026-11-10 02:00+00', 'g')`, true, true},
		// Key 3 in windows 1, 2 and 6: its middle window is unknown from its first and last.
		{"ThreeAcross", `VALUES (3, '2026-11-02 01:00+00', 'c'), (3, '2026-11-03 01:00+00', 'c'), (3, '2026-11-07 01:00+00', 'c'), (4, '2026-11-03 02:00+00', 'd')`, false, false},
		// Key 8 twice in window 1 and once in window 2: how many of its records are in which
		// window is unknown from its first and last.
		{"ThreeInTwoWindows", `VALUES (8, '2026-11-02 01:00+00', 'h'), (8, '2026-11-02 02:00+00', 'h'), (8, '2026-11-03 01:00+00', 'h')`, false, false},
		// One more repeated key than repeatsByKey places, each in two windows of the eight.
		{"OverTheBound", fmt.Sprintf(`SELECT i, timestamptz '2026-11-01 01:00+00' + (i %% 8) * interval '1 day', 'v' FROM generate_series(1, %[1]d) i
			UNION ALL SELECT i, timestamptz '2026-11-01 02:00+00' + ((i + 1) %% 8) * interval '1 day', 'v' FROM generate_series(1, %[1]d) i`, maxRepeatedKeys+1), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range []string{`DROP TABLE IF EXISTS public.r`, `CREATE TABLE public.r (id bigint NOT NULL, at timestamptz NOT NULL, v text)`,
				`INSERT INTO public.r ` + tc.insert} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			spec := &Spec{KeyColumns: []string{"id"}, TimeColumn: "at", Columns: []string{"v"}, WindowSeconds: 86400, Since: since}
			pr := &postgresReader{db: db, table: "public.r", spec: spec}
			if spec.hashing, err = planHashes(ctx, pr); err != nil {
				t.Fatal(err)
			}
			to := since.AddDate(0, 0, 9)
			src := SourceSpec{Kind: SourcePostgres, Keys: UniqueKeys}
			base, _, err := pr.base(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			none, err := pr.noRepeats(ctx, tx, base, []any{since, to})
			if err != nil || none != tc.none {
				t.Fatalf("no repeated key: %v (%v), want %v", none, err, tc.none)
			}
			probe := sideFigures{repeated: map[int64]bool{}, repeatedSegs: map[segKey]bool{}}
			_, byKey, err := pr.repeatsByKey(ctx, tx, base, []any{since, to}, &probe)
			tx.Rollback() //nolint:errcheck // read-only
			if err != nil || byKey != tc.byKey {
				t.Fatalf("repeats placed by key: %v (%v), want %v", byKey, err, tc.byKey)
			}
			if none && len(probe.repeated) > 0 {
				t.Errorf("no key repeats, yet repeatsByKey found windows %v", probe.repeated)
			}
			pushed, ok, err := pr.figures(ctx, src, since, to, nil)
			if err != nil || !ok {
				t.Fatalf("pushed down: %v %v", ok, err)
			}
			streamed, _, err := streamFigures(ctx, spec, src, pr, since, to)
			if err != nil {
				t.Fatal(err)
			}
			if len(pushed.windows) != len(streamed.windows) {
				t.Errorf("windows: pushed %d, Go %d", len(pushed.windows), len(streamed.windows))
			}
			for w, g := range streamed.windows {
				if p := pushed.windows[w]; p == nil || *p != *g {
					t.Errorf("window %d: pushed %+v, Go %+v", w, p, g)
				}
			}
			if got, want := slices.Sorted(maps.Keys(pushed.repeated)), slices.Sorted(maps.Keys(streamed.repeated)); !slices.Equal(got, want) {
				t.Errorf("repeated windows: pushed %v, Go %v", got, want)
			}
			for k := range streamed.repeatedSegs {
				if !pushed.repeatedSegs[k] {
					t.Errorf("repeated segment %v: Go found it, PostgreSQL did not", k)
				}
			}
		})
	}
}
