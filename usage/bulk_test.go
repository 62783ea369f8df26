package usage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/usage"
)

// TestBulkPathKeepsText: what clients write in text fields comes back exactly, through the bulk
// insert (PostgreSQL: arrays of the columns' types; SQLite: VALUES): quotes, backslashes,
// commas and braces (array syntax), the word NULL, control characters, non-ASCII.
func TestBulkPathKeepsText(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		a := e.create(t, "warehouse", "orders")
		e.clock.Set(t0.Add(time.Hour))
		tricky := []string{`plain`, `with "quotes"`, `back\slash`, `a,b`, `{braces}`, `NULL`, `null`, "tab\tand\nnewline", "\x01\x1f",
			`ünïcødé ✓`, ``, `"`, `\`, `{"json": [1, 2]}`, ` spaced `}
		var recs []usage.Record
		for i, s := range tricky {
			recs = append(recs, usage.Record{AssetID: a.ID, Kind: "read", Actor: s, Source: s, At: t0.Add(time.Duration(i) * time.Minute),
				QueryID: fmt.Sprintf("q-%d-%s", i, s)})
		}
		for i, r := range e.record(t, recs) {
			if r.Status != usage.StatusAccepted {
				t.Fatalf("record %d (%q): %+v", i, tricky[i], r)
			}
		}
		rows, err := e.db.Client.UsageEvent.Query().Where(usageevent.AssetID(a.ID)).Order(usageevent.ByAt()).All(context.Background())
		if err != nil || len(rows) != len(tricky) {
			t.Fatalf("%d events stored (%v), want %d", len(rows), err, len(tricky))
		}
		for i, r := range rows {
			if r.Actor != tricky[i] || r.Source != tricky[i] || r.QueryID != fmt.Sprintf("q-%d-%s", i, tricky[i]) || !r.At.Equal(t0.Add(time.Duration(i)*time.Minute)) {
				t.Errorf("event %d came back as actor %q source %q query %q at %s; sent %q", i, r.Actor, r.Source, r.QueryID, r.At, tricky[i])
			}
		}
	})
}

// TestBulkPathKeepsConstants: a column with one value in every row of a batch travels as one
// parameter on PostgreSQL, not an array; the rows come back as sent whichever columns are
// constant: all but the key, a tricky text, a NULL job, and a batch of one.
func TestBulkPathKeepsConstants(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		a := e.create(t, "warehouse", "orders")
		e.clock.Set(t0.Add(time.Hour))
		batches := [][]usage.Record{
			{{AssetID: a.ID, Kind: "read", Actor: `a,"b"`, Source: "NULL", At: t0, QueryID: "c-1"},
				{AssetID: a.ID, Kind: "read", Actor: `a,"b"`, Source: "NULL", At: t0, QueryID: "c-2"}},
			{{AssetID: a.ID, Kind: "write", Actor: "", Source: "", At: t0.Add(time.Minute), QueryID: "c-3"}},
			{{AssetID: a.ID, Kind: "read", Actor: "x", At: t0.Add(2 * time.Minute), QueryID: "c-4"},
				{AssetID: a.ID, Kind: "write", Actor: "x", At: t0.Add(3 * time.Minute), QueryID: "c-5"}},
		}
		var want []usage.Record
		for _, b := range batches {
			for i, r := range e.record(t, b) {
				if r.Status != usage.StatusAccepted {
					t.Fatalf("record %d of %+v: %+v", i, b, r)
				}
			}
			want = append(want, b...)
		}
		rows, err := e.db.Client.UsageEvent.Query().Where(usageevent.AssetID(a.ID)).Order(usageevent.ByQueryID()).All(context.Background())
		if err != nil || len(rows) != len(want) {
			t.Fatalf("%d events stored (%v), want %d", len(rows), err, len(want))
		}
		for i, r := range rows {
			w := want[i]
			if r.QueryID != w.QueryID || string(r.Kind) != w.Kind || r.Actor != w.Actor || r.Source != w.Source || !r.At.Equal(w.At) ||
				r.AssetID != a.ID || r.JobAssetID != nil || r.Late {
				t.Errorf("event %d came back as %+v; sent %+v", i, r, w)
			}
		}
		// Actors `a,"b"` and x (the empty one is none).
		if s := e.series(t, a.ID, t0); s.Reads != 3 || s.Writes != 2 || s.DistinctActors != 2 {
			t.Fatalf("series %+v, want 3 reads, 2 writes, 2 actors", s)
		}
	})
}
