package cleanup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestScanRequestMakesDue: a table scanned a minute ago is not due; a person's request makes it
// due at the scheduler's next round, before the tables due by their cadence, and the request is
// pending until that scan exists, then closed with it. A repeated request while one is pending
// is the same request; bad requests are refused and record nothing.
func TestScanRequestMakesDue(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newRequestStory(t, db)
		s.refusedRequests()
		ctx := catalog.WithActor(s.e.ctx, "web:alice")
		s.requestMakesDue(ctx)
		s.requestedFirst(ctx)
		s.requestsOnly(ctx)
	})
}

// requestStory is TestScanRequestMakesDue's two tables, e.id and other, both just scanned.
type requestStory struct {
	t     *testing.T
	e     *env
	other uuid.UUID // after e.id in the scheduler's order
}

// newRequestStory adds a second table and scans both, so a round a minute later finds none due.
func newRequestStory(t *testing.T, db *storage.DB) *requestStory {
	t.Helper()
	e := newEnv(t, db)
	e.lake.Append(e.lake.Create("db.other", nil), tablestest.Rows(0, 1, time.Now()))
	rep, err := e.tables.Sync(e.ctx, nil)
	if err != nil || rep.Added != 1 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	s := &requestStory{t: t, e: e, other: rep.Connections[0].Added[0].AssetID}
	if n := s.due(); n != 2 {
		t.Fatalf("first round scanned %d tables, want 2", n)
	}
	e.clock.Add(time.Minute)
	if n := s.due(); n != 0 {
		t.Fatalf("a round a minute later scanned %d tables, want 0", n)
	}
	return s
}

// due runs a scheduler round and says how many tables it scanned.
func (s *requestStory) due() int {
	s.t.Helper()
	n, err := s.e.svc.ScanDue(s.e.ctx, 24*time.Hour, cleanup.ScanOptions{})
	must(s.t, err)
	return n
}

// pending is e.id's pending scan requests.
func (s *requestStory) pending() []cleanup.ScanRequest {
	s.t.Helper()
	p, err := s.e.svc.PendingScanRequests(s.e.ctx, []uuid.UUID{s.e.id})
	must(s.t, err)
	return p[s.e.id]
}

// refusedRequests: requests for an unknown table or for an inventory Tidemark does not keep
// are refused and leave nothing pending.
func (s *requestStory) refusedRequests() {
	e := s.e
	for _, tc := range []struct {
		name      string
		asset     uuid.UUID
		inventory bool
		want      error
	}{
		{"UnknownTable", uuid.Must(uuid.NewV7()), false, catalog.ErrNotFound},
		{"InventoryOfATableNotServed", e.id, true, catalog.ErrInvalid},
	} {
		s.t.Run(tc.name, func(t *testing.T) {
			if _, _, err := e.svc.RequestScan(e.ctx, tc.asset, tc.inventory); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if p := s.pending(); len(p) != 0 {
				t.Fatalf("a refused request was recorded: %+v", p)
			}
		})
	}
}

// requestMakesDue: a request (made once, asked twice) makes e.id due at the next round, whose
// scan closes it.
func (s *requestStory) requestMakesDue(ctx context.Context) {
	t, e := s.t, s.e
	t.Helper()
	req, created, err := e.svc.RequestScan(ctx, e.id, false)
	must(t, err)
	if !created || req.Actor != "web:alice" || !req.RequestedAt.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("request: %+v created %v", req, created)
	}
	again, created, err := e.svc.RequestScan(ctx, e.id, false)
	must(t, err)
	if created || again.ID != req.ID {
		t.Fatalf("a second request while one is pending: %+v created %v, want request %s again", again, created, req.ID)
	}
	if p := s.pending(); len(p) != 1 || p[0].ID != req.ID || !p[0].Pending() {
		t.Fatalf("pending: %+v", p)
	}

	// Neither table is due by its cadence, but the requested one is due now.
	if n := s.due(); n != 1 {
		t.Fatalf("the round after the request scanned %d tables, want 1 (the requested one)", n)
	}
	if p := s.pending(); len(p) != 0 {
		t.Fatalf("still pending after the round: %+v", p)
	}
	mine, err := e.svc.Scans(e.ctx, cleanup.ScanFilter{AssetID: e.id, Limit: 1})
	must(t, err)
	closed, err := e.svc.ScanRequests(e.ctx, e.id, 10)
	must(t, err)
	if len(closed) != 1 || closed[0].ScanID == nil || *closed[0].ScanID != mine[0].ScanID || closed[0].DoneAt == nil || closed[0].Pending() {
		t.Fatalf("the request was not closed with scan %s: %+v", mine[0].ScanID, closed)
	}
	if n := s.due(); n != 0 {
		t.Fatalf("a round after the answered request scanned %d tables, want 0", n)
	}
}

// requestedFirst: when both come due by their cadence at the same round, the requested one is
// scanned first, though it comes later in the scheduler's order.
func (s *requestStory) requestedFirst(ctx context.Context) {
	t, e := s.t, s.e
	t.Helper()
	_, _, err := e.svc.RequestScan(ctx, s.other, false)
	must(t, err)
	e.clock.Add(24 * time.Hour)
	if n := s.due(); n != 2 {
		t.Fatalf("a day later: %d tables scanned, want 2", n)
	}
	all, err := e.svc.Scans(e.ctx, cleanup.ScanFilter{Limit: 2})
	must(t, err)
	if all[1].AssetID != s.other { // newest first: the requested table's scan is the older one
		t.Fatalf("the requested table %s was not scanned first: %s then %s", s.other, all[1].AssetID, all[0].AssetID)
	}
}

// requestsOnly: with scheduled scans off, only requests run; a scan started by someone else
// (the CLI) after a request answers it without a second scan.
func (s *requestStory) requestsOnly(ctx context.Context) {
	t, e := s.t, s.e
	t.Helper()
	e.clock.Add(time.Minute)
	_, _, err := e.svc.RequestScan(ctx, e.id, false)
	must(t, err)
	if n, err := e.svc.ScanRequested(e.ctx, cleanup.ScanOptions{}); err != nil || n != 1 {
		t.Fatalf("requested scans with the schedule off: %d, %v; want 1", n, err)
	}
	e.clock.Add(time.Minute)
	_, _, err = e.svc.RequestScan(ctx, e.id, false)
	must(t, err)
	e.clock.Add(time.Minute)
	cli := e.scan(cleanup.ScanOptions{})
	if p := s.pending(); len(p) != 0 {
		t.Fatalf("a scan started after the request did not answer it: %+v", p)
	}
	if n, err := e.svc.ScanRequested(e.ctx, cleanup.ScanOptions{}); err != nil || n != 0 {
		t.Fatalf("requests already answered ran %d more scans, %v", n, err)
	}
	closed, err := e.svc.ScanRequests(e.ctx, e.id, 1)
	must(t, err)
	if closed[0].ScanID == nil || *closed[0].ScanID != cli.ScanID {
		t.Fatalf("the newest request names scan %v, want the CLI's %s", closed[0].ScanID, cli.ScanID)
	}
}
