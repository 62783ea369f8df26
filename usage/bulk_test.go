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
// insert (PostgreSQL: text arrays cast by the server; SQLite: VALUES): quotes, backslashes,
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
