package versions_test

import (
	"context"
	stdsql "database/sql"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/versions"
)

// counting is a driver that counts the statements writing dataset_versions.
type counting struct {
	dialect.Driver
	mu      sync.Mutex
	inserts int
	updates int
}

func (c *counting) count(q string) {
	q = strings.TrimSpace(q)
	if !strings.Contains(q, "dataset_versions") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(q, "INSERT"):
		c.inserts++
	case strings.HasPrefix(q, "UPDATE"):
		c.updates++
	}
}

func (c *counting) Exec(ctx context.Context, q string, args, v any) error {
	c.count(q)
	return c.Driver.Exec(ctx, q, args, v)
}

func (c *counting) Query(ctx context.Context, q string, args, v any) error {
	c.count(q)
	return c.Driver.Query(ctx, q, args, v)
}

// Tx counts inside transactions too (ent updates one row in its own).
func (c *counting) Tx(ctx context.Context) (dialect.Tx, error) {
	tx, err := c.Driver.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return &countingTx{Tx: tx, c: c}, nil
}

type countingTx struct {
	dialect.Tx
	c *counting
}

func (t *countingTx) Exec(ctx context.Context, q string, args, v any) error {
	t.c.count(q)
	return t.Tx.Exec(ctx, q, args, v)
}

func (t *countingTx) Query(ctx context.Context, q string, args, v any) error {
	t.c.count(q)
	return t.Tx.Query(ctx, q, args, v)
}

func (c *counting) QueryContext(ctx context.Context, q string, args ...any) (*stdsql.Rows, error) {
	c.count(q)
	return c.Driver.(interface {
		QueryContext(context.Context, string, ...any) (*stdsql.Rows, error)
	}).QueryContext(ctx, q, args...)
}

func (c *counting) reset() (inserts, updates int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inserts, updates = c.inserts, c.updates
	c.inserts, c.updates = 0, 0
	return inserts, updates
}

// newCounted is a versions service over db whose writes to dataset_versions are counted.
func newCounted(t *testing.T, db *storage.DB) (*versions.Service, *counting) {
	t.Helper()
	cat, err := catalog.New(db)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Driver: entsql.OpenDB(db.Dialect, db.SQL)}
	svc, err := versions.New(&storage.DB{Client: ent.NewClient(ent.Driver(c)), SQL: db.SQL, Dialect: db.Dialect}, cat)
	if err != nil {
		t.Fatal(err)
	}
	return svc, c
}

var recT0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// snapshots are n snapshots of a format-2 table: IDs 1000+i, sequence numbers i, a parent chain,
// a minute apart from recT0.
func snapshots(n int) []versions.Observed {
	out := make([]versions.Observed, n)
	for i := range n {
		id, seq := int64(1001+i), int64(i+1)
		o := versions.Observed{SnapshotID: &id, SequenceNumber: &seq, Operation: "append", CommittedAt: recT0.Add(time.Duration(i) * time.Minute),
			Summary: map[string]string{"added-records": strconv.Itoa(i)}}
		if i > 0 {
			o.Parent = strconv.Itoa(1000 + i)
		}
		out[i] = o
	}
	return out
}

func read(asset uuid.UUID, snaps []versions.Observed, lastSeq int64, at time.Time) versions.TableRead {
	return versions.TableRead{AssetID: asset, Source: versions.SourceSync, Snapshots: snaps, LastSequenceNumber: lastSeq,
		LastUpdated: recT0.Add(time.Duration(lastSeq) * time.Minute), By: "sync", At: at}
}

func count(t *testing.T, db *storage.DB, asset uuid.UUID) int {
	t.Helper()
	n, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset)).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRecordTableBulk: a read of a table of a thousand snapshots records them in a couple of
// statements; the same read again writes nothing; a read that lacks the oldest ten marks
// exactly those expired (kept, with when and by whom) and never a snapshot newer than the read.
func TestRecordTableBulk(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		svc, c := newCounted(t, db)
		asset := uuid.Must(uuid.NewV7())
		const n = 1000
		snaps := snapshots(n)

		rec, err := svc.RecordTable(ctx, read(asset, snaps, n, recT0))
		if err != nil {
			t.Fatal(err)
		}
		if got := count(t, db, asset); got != n || rec.Expired != 0 {
			t.Fatalf("first read: %d versions, %d expired; want %d, 0", got, rec.Expired, n)
		}
		if ins, _ := c.reset(); ins < 1 || ins > 4 {
			t.Fatalf("first read: %d insert statements for %d snapshots; want a bulk insert (at most 4)", ins, n)
		}
		v, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset), datasetversion.Version("1500")).Only(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.ParentVersion != "1499" || v.SequenceNumber == nil || *v.SequenceNumber != 500 || v.Operation != "append" ||
			v.Source != versions.SourceSync || !v.SeenInTable || v.CommittedAt == nil || !v.CommittedAt.Equal(recT0.Add(499*time.Minute)) ||
			v.Summary != `{"added-records":"499"}` || v.SnapshotID == nil || *v.SnapshotID != 1500 {
			t.Fatalf("version 1500 = %+v", v)
		}

		// The same read again (a second sync) writes nothing.
		if _, err := svc.RecordTable(ctx, read(asset, snaps, n, recT0)); err != nil {
			t.Fatal(err)
		}
		if ins, upd := c.reset(); ins != 0 || upd != 0 || count(t, db, asset) != n {
			t.Fatalf("second read: %d inserts, %d updates, %d versions; want nothing written", ins, upd, count(t, db, asset))
		}

		// A commit after the read the next sync makes (sequence number n+1) is missing from it
		// without having been removed.
		late := int64(1001 + n)
		lateSeq := int64(n + 1)
		if err := svc.Record(ctx, []versions.Observed{{AssetID: asset, SnapshotID: &late, SequenceNumber: &lateSeq, Source: versions.SourceCommit,
			CommittedAt: recT0.Add(time.Duration(n) * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		at := recT0.Add(48 * time.Hour)
		rec, err = svc.RecordTable(ctx, read(asset, snaps[10:], n, at))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Expired != 10 || count(t, db, asset) != n+1 {
			t.Fatalf("read without the oldest ten: %d expired, %d versions; want 10, %d (kept)", rec.Expired, count(t, db, asset), n+1)
		}
		expired, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset), datasetversion.ExpiredAtNotNil()).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range expired {
			if id, _ := strconv.Atoi(e.Version); id > 1010 || e.ExpiredBy != "sync" || !e.ExpiredAt.Equal(at) {
				t.Fatalf("expired %s by %q at %v; want only 1001..1010, by sync at %v", e.Version, e.ExpiredBy, e.ExpiredAt, at)
			}
		}
		if len(expired) != 10 {
			t.Fatalf("%d expired; want 10", len(expired))
		}
		// Expired stays expired: the same read again changes nothing.
		if rec, err = svc.RecordTable(ctx, read(asset, snaps[10:], n, at.Add(time.Hour))); err != nil || rec.Expired != 0 {
			t.Fatalf("again: %+v, %v", rec, err)
		}
	})
}

// TestRecordFillsGaps: a version a run stated first, or a commit recorded, gains only what it
// lacked from a later read of the table; the table showing a stated version clears the flag
// on runs that stated it, whether the version was known or new.
func TestRecordFillsGaps(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		svc, c := newCounted(t, db)
		asset := uuid.Must(uuid.NewV7())
		stated := versions.Observed{AssetID: asset, Version: "1001", Source: versions.SourceOpenLineage}
		commitID := uuid.Must(uuid.NewV7())
		snaps := snapshots(3)
		committed := snaps[1]
		committed.AssetID, committed.Source, committed.Principal, committed.CommitID = asset, versions.SourceCommit, "token:etl", &commitID
		committed.Operation = "overwrite"
		if err := svc.Record(ctx, []versions.Observed{stated, committed}); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"1001", "1003"} {
			if err := db.Client.RunVersion.Create().SetRunID("run-" + v).SetAssetID(asset).SetRole(runversion.RoleInput).SetVersion(v).
				SetKind(runversion.KindStated).SetFlagged(true).SetAt(recT0).SetUpdatedAt(recT0).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		c.reset()
		if _, err := svc.RecordTable(ctx, read(asset, snaps, 3, recT0)); err != nil {
			t.Fatal(err)
		}
		if ins, upd := c.reset(); ins != 1 || upd != 1 {
			t.Fatalf("%d inserts, %d updates; want one insert (1003) and one update (1001's gaps), 1002 left alone", ins, upd)
		}
		rows, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset)).Order(ent.Asc(datasetversion.FieldVersion)).All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Fatalf("%d versions; want 3", len(rows))
		}
		s1, s2 := rows[0], rows[1]
		if s1.Source != versions.SourceOpenLineage || !s1.SeenInTable || s1.CommittedAt == nil || s1.SnapshotID != nil || s1.Operation != "append" {
			t.Fatalf("stated version after the read = %+v; want its first source kept, seen, dated, filled", s1)
		}
		if s2.Source != versions.SourceCommit || s2.Principal != "token:etl" || s2.CommitID == nil || *s2.CommitID != commitID || s2.Operation != "overwrite" {
			t.Fatalf("committed version after the read = %+v; want what the commit said kept", s2)
		}
		flagged, err := db.Client.RunVersion.Query().Where(runversion.AssetID(asset), runversion.Flagged(true)).Count(ctx)
		if err != nil || flagged != 0 {
			t.Fatalf("%d runs still flagged (%v); want none: the table shows both versions", flagged, err)
		}
	})
}

// TestRecordTwiceInOneBatch: one version named twice in a batch is one row with what both said.
func TestRecordTwiceInOneBatch(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		svc, _ := newCounted(t, db)
		asset := uuid.Must(uuid.NewV7())
		id := int64(7)
		a := versions.Observed{AssetID: asset, SnapshotID: &id, Source: versions.SourceCommit, Operation: "append"}
		b := versions.Observed{AssetID: asset, SnapshotID: &id, Source: versions.SourceSync, Parent: "6", Principal: "token:x"}
		if err := svc.Record(ctx, []versions.Observed{a, b}); err != nil {
			t.Fatal(err)
		}
		v, err := db.Client.DatasetVersion.Query().Where(datasetversion.AssetID(asset)).Only(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Version != "7" || v.Source != versions.SourceCommit || v.Operation != "append" || v.ParentVersion != "6" || v.Principal != "token:x" {
			t.Fatalf("version = %+v", v)
		}
	})
}
