package restcatalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/ent/usageevent"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// keepClock is the injected clock of TestServedExpiryHonorsVersionUsage.
type keepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *keepClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *keepClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestServedExpiryHonorsVersionUsage, end to end over a table iceberg-go writes through
// Tidemark's REST catalog, with the process built by app.Open: a snapshot read by time travel
// two days before the proposal is kept and the proposal says so; a snapshot approved for expiry
// and read by time travel after the approval is kept at the last moment, the outcome says so,
// and the other approved snapshots are expired through the served table's compare-and-swap.
func TestServedExpiryHonorsVersionUsage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clk := &keepClock{t: time.Now().UTC()}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clk.Now))
			c.Versions = append(c.Versions, versions.WithClock(clk.Now))
		})
		if err := s.App.Lineage.Open(ctx); err != nil {
			t.Fatal(err)
		}
		cat := s.client(t)
		tbl := create(t, cat, "mart", "orders")
		for i := range 6 {
			tbl = s.append(t, tbl, i, 1)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{cleanup.PropertyExpireSnapshots: "true", cleanup.PropertySnapshotKeep: "2", cleanup.PropertySnapshotMaxAge: "1ms"}); err != nil {
			t.Fatal(err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id := assetOf(t, s, tbl)
		if _, err := s.App.Tables.Refresh(ctx, id); err != nil {
			t.Fatal(err)
		}
		// The snapshots as versions, dated by the table (what the commits record).
		snaps := slices.Clone(tbl.Metadata().Snapshots())
		slices.SortFunc(snaps, func(a, b table.Snapshot) int { return int(a.TimestampMs - b.TimestampMs) })
		var obs []versions.Observed
		for _, sn := range snaps {
			sid := sn.SnapshotID
			obs = append(obs, versions.Observed{AssetID: id, SnapshotID: &sid, CommittedAt: time.UnixMilli(sn.TimestampMs).UTC(), Source: versions.SourceCommit})
		}
		if err := s.App.Versions.Record(ctx, obs); err != nil {
			t.Fatal(err)
		}
		read := func(snapshot int64, actor string, at time.Time) {
			t.Helper()
			if err := db.Client.UsageEvent.Create().SetEventKey(uuid.NewString()).SetAssetID(id).SetKind(usageevent.KindRead).
				SetActor(actor).SetSource("iceberg-rest").SetAt(at).SetDay(at.Format(time.DateOnly)).SetReceivedAt(clk.Now()).
				SetVersion(fmt.Sprint(snapshot)).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}

		// Three days on, a read of the second-oldest snapshot two days ago: time travel.
		time.Sleep(5 * time.Millisecond) // snapshots age by the wall clock
		clk.Add(72 * time.Hour)
		early := snaps[1].SnapshotID
		earlyAt := clk.Now().Add(-48 * time.Hour).Truncate(time.Microsecond)
		read(early, "token:analyst", earlyAt)
		if _, err := s.App.Cleanup.Propose(ctx); err != nil {
			t.Fatal(err)
		}
		ps, err := s.App.Cleanup.Proposals(ctx, cleanup.ProposalFilter{Kind: cleanup.KindExpireSnapshots, State: "open", Limit: 10})
		if err != nil || len(ps) != 1 {
			t.Fatalf("expiry proposals %+v (err %v), want one", ps, err)
		}
		p := ps[0]
		// The four oldest of six are old enough; the one read is kept.
		approved := p.Evidence.Snapshots
		if len(approved) != 3 || slices.Contains(approved, early) || len(p.Evidence.Kept) != 1 || p.Evidence.Kept[0].Snapshot != early ||
			!strings.Contains(p.Evidence.Summary, fmt.Sprintf("snapshot %d: read by time travel by token:analyst, 1 read, last at %s", early, earlyAt.Format(time.RFC3339))) {
			t.Fatalf("proposal: snapshots %v, kept %+v\n%s", approved, p.Evidence.Kept, p.Evidence.Summary)
		}
		// The API shows what it keeps and why, with the reader.
		var api struct {
			Evidence struct {
				Kept []struct {
					Snapshot int64  `json:"snapshot"`
					Reason   string `json:"reason"`
					Readers  []struct {
						Reader string `json:"reader"`
					} `json:"readers"`
				} `json:"kept"`
			} `json:"evidence"`
		}
		if code, body := s.do(t, "GET", "/api/v1/proposals/"+p.ID.String(), s.Token, "", &api); code != 200 ||
			len(api.Evidence.Kept) != 1 || api.Evidence.Kept[0].Snapshot != early || api.Evidence.Kept[0].Reason != "read by time travel" ||
			len(api.Evidence.Kept[0].Readers) != 1 || api.Evidence.Kept[0].Readers[0].Reader != "token:analyst" {
			t.Fatalf("GET proposal: %d %+v %s", code, api, body)
		}
		if _, err := s.App.Cleanup.Approve(catalog.WithActor(ctx, "token:alice"), p.ID, ""); err != nil {
			t.Fatal(err)
		}

		// After the approval, a time-travel read of an approved snapshot.
		clk.Add(time.Hour)
		late := approved[1]
		read(late, "token:auditor", clk.Now())
		clk.Add(100 * time.Hour)
		rep, err := s.App.Cleanup.Execute(ctx, uuid.Nil, nil)
		if err != nil || rep.Executed != 1 {
			t.Fatalf("execute: %+v %v", rep, err)
		}
		got, err := s.App.Cleanup.GetProposal(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out cleanup.OrphanOutcome
		if err := json.Unmarshal(got.Outcome, &out); err != nil {
			t.Fatal(err)
		}
		if k := out.SnapshotsKept; len(k) != 1 || k[0].Snapshot != late || k[0].Reason != versions.KeepTimeTravel || !strings.Contains(k[0].Detail, "by token:auditor, 1 read") {
			t.Fatalf("outcome: %s", got.Outcome)
		}
		final, err := cat.LoadTable(ctx, table.Identifier{"mart", "orders"})
		if err != nil {
			t.Fatal(err)
		}
		for _, sn := range snaps {
			kept := !slices.Contains(approved, sn.SnapshotID) || sn.SnapshotID == late
			if has := final.Metadata().SnapshotByID(sn.SnapshotID) != nil; has != kept {
				t.Fatalf("snapshot %d in the table: %v, want %v", sn.SnapshotID, has, kept)
			}
		}
		var rows int64
		for _, f := range s.lake.Files(final, *final.CurrentSnapshot()) {
			rows += f[1]
		}
		if rows != 6 {
			t.Fatalf("the table holds %d rows, want 6", rows)
		}
	})
}
