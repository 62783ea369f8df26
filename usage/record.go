package usage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	chunkpkg "github.com/tidemark/tidemark/internal/chunk"
	"github.com/tidemark/tidemark/internal/pgarray"
)

// Record is one usage record from a query log: a read or write of an asset (by ID, or by the
// name the query used), by an actor, at a time.
type Record struct {
	AssetID        uuid.UUID
	Namespace      string
	Name           string
	Kind           string // read or write
	Actor          string
	At             time.Time
	QueryID        string
	Source         string // the engine or proxy that logged it
	IdempotencyKey string // required when there is no QueryID
	// Version is the version of the asset read or written when the source says (a scan
	// report's snapshot ID in decimal); "" when it does not. At most MaxVersionBytes.
	Version string
}

// Statuses of a record.
const (
	StatusAccepted   = "accepted"
	StatusDuplicate  = "duplicate"  // recorded before (or earlier in the same batch): not counted again
	StatusRefused    = "refused"    // invalid, too old, in the future: Reason says which
	StatusUnresolved = "unresolved" // no asset held that name at that time: kept, attributed when one takes it
)

// How a name resolved (Result.Resolution, and kept on the stored record).
const (
	ResolvedExact           = ""                  // the asset held the name at the record's time
	ResolvedBeforeFirstSeen = "before_first_seen" // the name's first holder, before Tidemark knew it
	ResolvedRenameWindow    = "rename_window"     // renamed by an engine between two catalog syncs
)

// Result is what happened to one record.
type Result struct {
	Status     string
	AssetID    uuid.UUID
	Reason     string
	Resolution string // for a name: how it resolved (ResolvedExact, ...)
}

// Limits on records.
const (
	MaxRecords   = 5000
	maxTextBytes = 512
	// MaxVersionBytes bounds a record's version (as versions bounds a version's name).
	MaxVersionBytes = 256
)

// row is an accepted record ready to store.
type row struct {
	key       string
	assetID   uuid.UUID
	kind      string
	actor     string
	jobID     *uuid.UUID
	source    string
	queryID   string
	namespace string
	name      string
	at        time.Time
	resolved  string // Resolution
	late      bool   // attributed after the fact, from the pending records
	version   string // the version read or written, "" when unknown
}

// Record validates, resolves and stores a batch of records. Every record gets a result; the
// valid ones are stored together, each counted once however often it is sent. Records whose name
// no asset held at their time are kept (unresolved) and attributed when an asset takes the name.
// Records older than the lateness are refused.
func (s *Service) Record(ctx context.Context, recs []Record) ([]Result, error) {
	return s.record(ctx, recs, s.lateness)
}

// Backfill is Record for a query log posted after the fact (an admin's): records up to the
// retention old are accepted, and the rollups of their days count them.
func (s *Service) Backfill(ctx context.Context, recs []Record) ([]Result, error) {
	return s.record(ctx, recs, s.retention)
}

func (s *Service) record(ctx context.Context, recs []Record, maxAge time.Duration) ([]Result, error) {
	if len(recs) > MaxRecords {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "events", Message: fmt.Sprintf("usage: %d records in one batch; the limit is %d: split it", len(recs), MaxRecords)}
	}
	now := s.clock()
	out := make([]Result, len(recs))
	for i, r := range recs {
		if reason := s.check(r, now, maxAge); reason != "" {
			out[i] = Result{Status: StatusRefused, Reason: reason}
		}
	}
	if err := s.resolve(ctx, recs, out); err != nil {
		return nil, err
	}
	var rows []row
	at := map[string][]int{} // key -> record indexes
	for i, r := range recs {
		if out[i].Status != "" {
			continue
		}
		key := recordKey(r, out[i].AssetID)
		if len(at[key]) == 0 {
			rows = append(rows, row{key: key, assetID: out[i].AssetID, kind: r.Kind, actor: r.Actor, source: r.Source,
				queryID: r.QueryID, namespace: r.Namespace, name: r.Name, at: r.At.UTC().Truncate(time.Microsecond), resolved: out[i].Resolution,
				version: r.Version})
		}
		at[key] = append(at[key], i)
	}
	var pending []Record
	for i, r := range recs {
		if out[i].Status == StatusUnresolved && r.AssetID == uuid.Nil {
			pending = append(pending, r)
		}
	}
	var inserted map[string]bool
	err := s.inTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
		var err error
		if inserted, err = s.store(ctx, rows); err != nil {
			return err
		}
		return s.keepPending(ctx, tx, pending, now)
	})
	if err != nil {
		return nil, err
	}
	for key, idxs := range at {
		for n, i := range idxs {
			out[i].Status = StatusDuplicate
			if n == 0 && inserted[key] {
				out[i].Status = StatusAccepted
			}
		}
	}
	return out, nil
}

// check returns why a record is refused, or "".
func (s *Service) check(r Record, now time.Time, maxAge time.Duration) string {
	switch {
	case r.Kind != "read" && r.Kind != "write":
		return fmt.Sprintf("kind %q is not read or write", truncate(r.Kind, 32))
	case r.At.IsZero():
		return "at is missing; send the time of the query (RFC 3339)"
	case r.At.After(now.Add(Skew)):
		return fmt.Sprintf("at %s is in the future (more than %s ahead of the server's clock)", r.At.UTC().Format(time.RFC3339), Skew)
	case r.At.Before(now.Add(-maxAge)) && maxAge == s.lateness:
		return fmt.Sprintf("at %s is older than the accepted lateness of %s; such records are refused, not counted (an admin can post a backfill up to the retention of %s)", r.At.UTC().Format(time.RFC3339), s.lateness, s.retention)
	case r.At.Before(now.Add(-maxAge)):
		return fmt.Sprintf("at %s is older than the usage retention of %s; a backfill reaches back that far only", r.At.UTC().Format(time.RFC3339), maxAge)
	case r.QueryID == "" && r.IdempotencyKey == "":
		return "no query_id and no idempotency_key: without one a retried batch would count twice"
	case r.AssetID == uuid.Nil && (r.Namespace == "" || r.Name == ""):
		return "asset needs an id, or a namespace and a name"
	case r.AssetID == uuid.Nil && catalog.ValidateName(r.Namespace, r.Name) != nil:
		return "asset: " + catalog.ValidateName(r.Namespace, r.Name).Error()
	}
	if len(r.Version) > MaxVersionBytes {
		return fmt.Sprintf("version is %d bytes; the limit is %d", len(r.Version), MaxVersionBytes)
	}
	for field, v := range map[string]string{"actor": r.Actor, "source": r.Source, "query_id": r.QueryID, "idempotency_key": r.IdempotencyKey, "version": r.Version} {
		if len(v) > maxTextBytes {
			return fmt.Sprintf("%s is %d bytes; the limit is %d", field, len(v), maxTextBytes)
		}
		if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return fmt.Sprintf("%s is not valid UTF-8 text", field)
		}
	}
	return ""
}

// recordKey is the idempotency key: (source, query ID, asset), or (source, explicit key, asset).
func recordKey(r Record, asset uuid.UUID) string {
	h := sha256.New()
	if r.QueryID != "" {
		fmt.Fprintf(h, "q\x00%s\x00%s\x00%s", r.Source, r.QueryID, asset)
	} else {
		fmt.Fprintf(h, "k\x00%s\x00%s\x00%s", r.Source, r.IdempotencyKey, asset)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// resolve fills AssetID for the records still pending: IDs must exist; names resolve to the
// asset that held them at the record's time (dataset names: usage is of data).
func (s *Service) resolve(ctx context.Context, recs []Record, out []Result) error {
	var ids []uuid.UUID
	var names []string
	for i, r := range recs {
		if out[i].Status != "" {
			continue
		}
		if r.AssetID != uuid.Nil {
			ids = append(ids, r.AssetID)
		} else {
			names = append(names, r.Name)
		}
	}
	client := s.client(ctx)
	exists := map[uuid.UUID]bool{}
	for part := range chunk(ids) {
		got, err := client.Asset.Query().Where(asset.IDIn(part...)).IDs(ctx)
		if err != nil {
			return fmt.Errorf("usage: look up assets: %w", err)
		}
		for _, id := range got {
			exists[id] = true
		}
	}
	res, err := s.newResolver(ctx, client, names)
	if err != nil {
		return err
	}
	var byName []nameAt
	for i, r := range recs {
		if out[i].Status == "" && r.AssetID == uuid.Nil {
			byName = append(byName, nameAt{r.Namespace, r.Name, r.At})
		}
	}
	if err := res.firstNames(ctx, byName); err != nil {
		return err
	}
	for i, r := range recs {
		if out[i].Status != "" {
			continue
		}
		if r.AssetID != uuid.Nil {
			if !exists[r.AssetID] {
				out[i] = Result{Status: StatusUnresolved, Reason: fmt.Sprintf("asset %s does not exist", r.AssetID)}
				continue
			}
			out[i].AssetID = r.AssetID
			continue
		}
		id, how, ok := res.resolve(r.Namespace, r.Name, r.At)
		if !ok {
			out[i] = Result{Status: StatusUnresolved, Reason: fmt.Sprintf("no asset was named %s.%s at %s; the record is kept and counted when an asset takes the name (GET /api/v1/usage/unresolved lists what waits)", r.Namespace, r.Name, r.At.UTC().Format(time.RFC3339))}
			continue
		}
		out[i].AssetID, out[i].Resolution = id, how
	}
	return nil
}

func (s *Service) client(ctx context.Context) *ent.Client {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return tx.Client()
	}
	return s.db
}

// chunk yields consecutive parts of xs of at most chunk.Size elements: one statement each.
func chunk[T any](xs []T) iter.Seq[[]T] { return slices.Chunk(xs, chunkpkg.Size) }

// store inserts the rows (skipping keys stored before) and adds those it inserted to the
// rollups, in one transaction (the caller's, when ctx carries one). It returns the keys it
// inserted.
func (s *Service) store(ctx context.Context, rows []row) (map[string]bool, error) {
	inserted := map[string]bool{}
	if len(rows) == 0 {
		return inserted, nil
	}
	// One insert order (by key) for every batch: two batches holding the same keys then wait on
	// each other instead of deadlocking.
	rows = slices.Clone(rows)
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.key, b.key) })
	err := s.inTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
		clear(inserted)
		received := s.clock()
		var fresh []row
		for part := range chunkpkg.Statements(s.sqlite, rows) {
			vals := make([][]any, len(part))
			for i, r := range part {
				var job any
				if r.jobID != nil {
					job = *r.jobID
				}
				vals[i] = []any{r.key, r.assetID, r.kind, r.actor, job, r.source, r.queryID, r.namespace, r.name, r.at, Day(r.at), received, r.resolved, r.late, r.version}
			}
			q, args := s.bulkInsert("usage_events", eventCols, vals, "ON CONFLICT (event_key) DO NOTHING RETURNING event_key")
			res, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return fmt.Errorf("usage: store events: %w", err)
			}
			for res.Next() {
				var k string
				if err := res.Scan(&k); err != nil {
					res.Close()
					return err
				}
				inserted[k] = true
			}
			res.Close()
			if err := res.Err(); err != nil {
				return err
			}
		}
		fresh = make([]row, 0, len(inserted))
		for _, r := range rows {
			if inserted[r.key] {
				fresh = append(fresh, r)
			}
		}
		return s.rollup(ctx, tx, fresh)
	})
	return inserted, err
}

func (s *Service) inTx(ctx context.Context, fn func(ctx context.Context, tx *ent.Tx) error) error {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return fn(ctx, tx)
	}
	return s.cat.InTx(ctx, fn)
}

// The rollup's buckets and their sums.
type bucket struct {
	asset uuid.UUID
	day   string
}
type dayAgg struct {
	reads, writes, late int64
	lastRead, lastWrite *time.Time
}
type actorKey struct {
	bucket
	actor string
}
type jobKey struct {
	bucket
	job uuid.UUID
}
type nameKey struct {
	asset     uuid.UUID
	namespace string
	name      string
}

// rollupAgg sums a batch of stored rows per day bucket, per actor and per name seen, and
// collects the jobs of each bucket.
type rollupAgg struct {
	days   map[bucket]*dayAgg
	actors map[actorKey]*[2]int64
	jobs   map[jobKey]bool
	names  map[nameKey]*[2]time.Time
}

func aggregate(rows []row) rollupAgg {
	days := map[bucket]*dayAgg{}
	actors := map[actorKey]*[2]int64{}
	jobs := map[jobKey]bool{}
	names := map[nameKey]*[2]time.Time{}
	for _, r := range rows {
		b := bucket{r.assetID, Day(r.at)}
		d := days[b]
		if d == nil {
			d = &dayAgg{}
			days[b] = d
		}
		at := r.at
		if r.kind == "read" {
			d.reads++
			if d.lastRead == nil || at.After(*d.lastRead) {
				d.lastRead = &at
			}
		} else {
			d.writes++
			if d.lastWrite == nil || at.After(*d.lastWrite) {
				d.lastWrite = &at
			}
		}
		if r.jobID != nil {
			jobs[jobKey{b, *r.jobID}] = true
		}
		if r.late {
			d.late++
		}
		if r.actor != "" {
			k := actorKey{b, r.actor}
			c := actors[k]
			if c == nil {
				c = &[2]int64{}
				actors[k] = c
			}
			if r.kind == "read" {
				c[0]++
			} else {
				c[1]++
			}
		}
		if r.name != "" {
			k := nameKey{r.assetID, r.namespace, r.name}
			if n := names[k]; n == nil {
				names[k] = &[2]time.Time{at, at}
			} else {
				if at.Before(n[0]) {
					n[0] = at
				}
				if at.After(n[1]) {
					n[1] = at
				}
			}
		}
	}
	return rollupAgg{days: days, actors: actors, jobs: jobs, names: names}
}

// rollup adds the newly stored rows to the rollups. Only rows this transaction inserted are
// added (duplicates never reach here), so increments are exact. The distinct counts are added
// too: a new actor or job of a day is one whose row this statement inserted (PostgreSQL's
// ON CONFLICT makes a concurrent batch wait for the insert and then see it), so no lock and no
// recount is needed. Every table is written in one order, and its rows in key order, so two
// batches over the same assets wait on each other rather than deadlock.
func (s *Service) rollup(ctx context.Context, tx *ent.Tx, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	ag := aggregate(rows)
	now := s.clock()

	days := make([]bucket, 0, len(ag.days))
	for b := range ag.days {
		days = append(days, b)
	}
	slices.SortFunc(days, func(a, b bucket) int { return cmp.Or(bytes.Compare(a.asset[:], b.asset[:]), cmp.Compare(a.day, b.day)) })
	dayRows := make([][2]string, len(days))
	for i, b := range days {
		dayRows[i] = [2]string{b.asset.String(), b.day}
	}
	var actorRows, monthRows [][]any
	months := map[actorKey]*[2]int64{}
	for k, c := range ag.actors {
		actorRows = append(actorRows, []any{k.asset, k.day, k.actor, c[0], c[1]})
		mk := actorKey{bucket{k.asset, k.day[:7]}, k.actor}
		m := months[mk]
		if m == nil {
			m = &[2]int64{}
			months[mk] = m
		}
		m[0] += c[0]
		m[1] += c[1]
	}
	for k, c := range months {
		monthRows = append(monthRows, []any{k.asset, k.day, k.actor, c[0], c[1]})
	}
	sortRows(actorRows)
	sortRows(monthRows)
	jobRows := make([][]any, 0, len(ag.jobs))
	for k := range ag.jobs {
		jobRows = append(jobRows, []any{k.day, k.asset, k.job})
	}
	slices.SortFunc(jobRows, func(a, b []any) int { // the unique index's order: day, asset, job
		return cmp.Or(cmp.Compare(a[0].(string), b[0].(string)), compareIDs(a[1], b[1]), compareIDs(a[2], b[2]))
	})
	var nameRows [][]any
	for k, n := range ag.names {
		nameRows = append(nameRows, []any{k.asset, k.namespace, k.name, n[0], n[1]})
	}
	sortRows(nameRows)

	newActors, err := s.upsertActors(ctx, tx, actorRows)
	if err != nil {
		return err
	}
	if err := s.upsert(ctx, tx, "usage_actor_monthlies", monthCols, monthRows,
		`ON CONFLICT (asset_id, month, actor) DO UPDATE SET reads = usage_actor_monthlies.reads + excluded.reads,
			writes = usage_actor_monthlies.writes + excluded.writes`); err != nil {
		return err
	}
	newJobs, err := s.insertJobs(ctx, tx, jobRows)
	if err != nil {
		return err
	}
	dailies := make([][]any, 0, len(days))
	for i, b := range days {
		d, k := ag.days[b], dayRows[i]
		dailies = append(dailies, []any{b.asset, b.day, d.reads, d.writes, newActors[k], newJobs[k], nullTime(d.lastRead), nullTime(d.lastWrite), now, d.late})
	}
	if err := s.upsertDays(ctx, tx, dailies, nameRows); err != nil {
		return err
	}
	return s.recountActors(ctx, tx, dayRows)
}

// sortRows sorts rows whose first three values are an asset ID and two strings (a rollup's
// unique key), so every batch writes them in one order.
func sortRows(rows [][]any) {
	slices.SortFunc(rows, func(a, b []any) int {
		return cmp.Or(compareIDs(a[0], b[0]), cmp.Compare(a[1].(string), b[1].(string)), cmp.Compare(a[2].(string), b[2].(string)))
	})
}

// compareIDs orders two uuid.UUID values by their bytes (no string per comparison).
func compareIDs(a, b any) int {
	x, y := a.(uuid.UUID), b.(uuid.UUID)
	return bytes.Compare(x[:], y[:])
}

// insertJobs records which jobs used which assets on which days and returns, per (asset, day)
// bucket, how many of them are new that day.
func (s *Service) insertJobs(ctx context.Context, tx *ent.Tx, jobRows [][]any) (map[[2]string]int, error) {
	newJobs := map[[2]string]int{}
	for part := range chunkpkg.Statements(s.sqlite, jobRows) {
		q, args := s.bulkInsert("usage_job_dailies", jobCols, part, "ON CONFLICT (day, asset_id, job_asset_id) DO NOTHING RETURNING asset_id, day")
		res, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("usage: count jobs: %w", err)
		}
		for res.Next() {
			var asset, day string
			if err := res.Scan(&asset, &day); err != nil {
				res.Close()
				return nil, err
			}
			newJobs[[2]string{asset, day}]++
		}
		res.Close()
		if err := res.Err(); err != nil {
			return nil, err
		}
	}
	return newJobs, nil
}

// upsertActors adds actor counts to the daily actor rollup and returns, per (asset, day)
// bucket, how many actors it saw for the first time (on PostgreSQL; SQLite recounts).
func (s *Service) upsertActors(ctx context.Context, tx *ent.Tx, actorRows [][]any) (map[[2]string]int, error) {
	const actorConflict = `ON CONFLICT (asset_id, day, actor) DO UPDATE SET reads = usage_actor_dailies.reads + excluded.reads,
			writes = usage_actor_dailies.writes + excluded.writes`
	newActors := map[[2]string]int{} // per bucket, actors seen for the first time (PostgreSQL)
	if s.sqlite {
		if err := s.upsert(ctx, tx, "usage_actor_dailies", actorCols, actorRows, actorConflict); err != nil {
			return nil, err
		}
	} else {
		// xmax = 0 marks a row this statement inserted rather than updated: a new actor that day.
		for part := range chunkpkg.Statements(s.sqlite, actorRows) {
			q, args := s.bulkInsert("usage_actor_dailies", actorCols, part, actorConflict+" RETURNING asset_id, day, (xmax = 0)")
			res, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, fmt.Errorf("usage: update rollups: %w", err)
			}
			for res.Next() {
				var asset, day string
				var inserted bool
				if err := res.Scan(&asset, &day, &inserted); err != nil {
					res.Close()
					return nil, err
				}
				if inserted {
					newActors[[2]string{asset, day}]++
				}
			}
			res.Close()
			if err := res.Err(); err != nil {
				return nil, err
			}
		}
	}
	return newActors, nil
}

// upsertDays adds the day rollups and the names usage was seen under.
func (s *Service) upsertDays(ctx context.Context, tx *ent.Tx, dailies, nameRows [][]any) error {
	if err := s.upsert(ctx, tx, "usage_dailies", dailyCols, dailies,
		`ON CONFLICT (asset_id, day) DO UPDATE SET reads = usage_dailies.reads + excluded.reads,
			writes = usage_dailies.writes + excluded.writes, late_records = usage_dailies.late_records + excluded.late_records,
			distinct_actors = usage_dailies.distinct_actors + excluded.distinct_actors,
			distinct_jobs = usage_dailies.distinct_jobs + excluded.distinct_jobs,
			last_read_at = CASE WHEN usage_dailies.last_read_at IS NULL OR excluded.last_read_at > usage_dailies.last_read_at
				THEN excluded.last_read_at ELSE usage_dailies.last_read_at END,
			last_write_at = CASE WHEN usage_dailies.last_write_at IS NULL OR excluded.last_write_at > usage_dailies.last_write_at
				THEN excluded.last_write_at ELSE usage_dailies.last_write_at END,
			updated_at = excluded.updated_at`); err != nil {
		return err
	}
	if err := s.upsert(ctx, tx, "usage_names", nameCols, nameRows,
		`ON CONFLICT (asset_id, namespace, name) DO UPDATE SET
			first_at = CASE WHEN excluded.first_at < usage_names.first_at THEN excluded.first_at ELSE usage_names.first_at END,
			last_at = CASE WHEN excluded.last_at > usage_names.last_at THEN excluded.last_at ELSE usage_names.last_at END
		WHERE excluded.first_at < usage_names.first_at OR excluded.last_at > usage_names.last_at`); err != nil {
		return err
	}
	return nil
}

// recountActors sets the day rollups' distinct actors on SQLite, which cannot tell an inserted
// row from an updated one (PostgreSQL counted them in upsertActors). SQLite has one writer at a
// time, so the count sees every batch's rows.
func (s *Service) recountActors(ctx context.Context, tx *ent.Tx, dayRows [][2]string) error {
	if !s.sqlite {
		return nil
	}
	for part := range chunk(dayRows) {
		where, args := s.bucketWhere(part, nil)
		if _, err := tx.ExecContext(ctx, `UPDATE usage_dailies SET distinct_actors = (SELECT count(*) FROM usage_actor_dailies a
			WHERE a.asset_id = usage_dailies.asset_id AND a.day = usage_dailies.day) WHERE `+where, args...); err != nil {
			return fmt.Errorf("usage: count actors: %w", err)
		}
	}
	return nil
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// column is a column name and its PostgreSQL type (the type of its unnest array).
type column struct{ name, pgType string }

var (
	eventCols = []column{{"event_key", "text"}, {"asset_id", "uuid"}, {"kind", "text"}, {"actor", "text"}, {"job_asset_id", "uuid"},
		{"source", "text"}, {"query_id", "text"}, {"namespace", "text"}, {"name", "text"}, {"at", "timestamptz"}, {"day", "text"},
		{"received_at", "timestamptz"}, {"resolution", "text"}, {"late", "boolean"}, {"version", "text"}}
	actorCols = []column{{"asset_id", "uuid"}, {"day", "text"}, {"actor", "text"}, {"reads", "bigint"}, {"writes", "bigint"}}
	monthCols = []column{{"asset_id", "uuid"}, {"month", "text"}, {"actor", "text"}, {"reads", "bigint"}, {"writes", "bigint"}}
	dailyCols = []column{{"asset_id", "uuid"}, {"day", "text"}, {"reads", "bigint"}, {"writes", "bigint"}, {"distinct_actors", "bigint"},
		{"distinct_jobs", "bigint"}, {"last_read_at", "timestamptz"}, {"last_write_at", "timestamptz"}, {"updated_at", "timestamptz"}, {"late_records", "bigint"}}
	jobCols  = []column{{"day", "text"}, {"asset_id", "uuid"}, {"job_asset_id", "uuid"}}
	nameCols = []column{{"asset_id", "uuid"}, {"namespace", "text"}, {"name", "text"}, {"first_at", "timestamptz"}, {"last_at", "timestamptz"}}
)

// bulkInsert builds one INSERT of many rows. On PostgreSQL each column travels as one array
// parameter, unpacked by unnest: lib/pq encodes each parameter separately, and thousands of
// them cost more than the insert itself. The arrays are string arrays (lib/pq encodes them
// without reflection) of the column's type (pgarray.Typed: each element read by the type's input
// function, no cast per element), where "" stands for NULL (it is no valid uuid, time, number or
// boolean). Text columns are never NULL. On SQLite (in-process) plain VALUES.
func (s *Service) bulkInsert(table string, cols []column, rows [][]any, tail string) (string, []any) {
	var q strings.Builder
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.name
	}
	fmt.Fprintf(&q, "INSERT INTO %s (%s) ", table, strings.Join(names, ", "))
	if !s.sqlite {
		sel, args := pgUnnest(cols, rows)
		q.WriteString(sel + " " + tail)
		return q.String(), args
	}
	q.WriteString("VALUES ")
	var args []any
	for i, r := range rows {
		if i > 0 {
			q.WriteString(",")
		}
		q.WriteString("(")
		for j, v := range r {
			if j > 0 {
				q.WriteString(",")
			}
			args = append(args, v)
			fmt.Fprintf(&q, "$%d", len(args))
		}
		q.WriteString(")")
	}
	q.WriteString(" " + tail)
	return q.String(), args
}

// pgUnnest is bulkInsert's SELECT of rows on PostgreSQL. A column with one value in every row
// (a batch's receipt time, a source, the empty actor of a run's usage) goes as one parameter
// instead of an array: the server parses each array element (BenchmarkServerReads in
// internal/pgarray: 2,000 rows with 7 such columns, 8.9 ms as arrays against 3.5 ms as scalars).
// At least one column stays an array, for unnest's row count.
func pgUnnest(cols []column, rows [][]any) (string, []any) {
	args := make([]any, 0, len(cols))
	exprs := make([]string, len(cols))
	var arrays, arrayNames []string
	for j, c := range cols {
		col := make([]string, len(rows))
		same := len(rows) > 0
		for i, r := range rows {
			col[i] = pgText(r[j])
			same = same && col[i] == col[0]
		}
		lastChance := j == len(cols)-1 && len(arrays) == 0 // unnest needs one array
		if same && !lastChance {
			var v any = col[0]
			if col[0] == "" && c.pgType != "text" {
				v = nil
			}
			args = append(args, v)
			exprs[j] = fmt.Sprintf("$%d::%s", len(args), c.pgType)
			continue
		}
		var arr any = pgarray.Text(col)
		if c.pgType != "text" {
			arr = pgarray.Typed(col)
		}
		args = append(args, arr)
		arrays, arrayNames = append(arrays, fmt.Sprintf("$%d::%s[]", len(args), c.pgType)), append(arrayNames, c.name)
		exprs[j] = "x." + c.name
	}
	return fmt.Sprintf("SELECT %s FROM unnest(%s) AS x(%s)", strings.Join(exprs, ", "), strings.Join(arrays, ", "), strings.Join(arrayNames, ", ")), args
}

// pgText is a value as PostgreSQL reads it from text ("" for nil: NULL once cast).
func pgText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case uuid.UUID:
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// upsert inserts rows with the given conflict clause (chunk.Statements: chunks on SQLite, one
// statement on PostgreSQL).
func (s *Service) upsert(ctx context.Context, tx *ent.Tx, table string, cols []column, rows [][]any, conflict string) error {
	for part := range chunkpkg.Statements(s.sqlite, rows) {
		q, args := s.bulkInsert(table, cols, part, conflict)
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("usage: update rollups: %w", err)
		}
	}
	return nil
}

// bucketWhere is "(asset_id, day) IN (VALUES ...)" with numbered parameters after args.
func (s *Service) bucketWhere(buckets [][2]string, args []any) (string, []any) {
	cast := "::uuid" // PostgreSQL compares uuid with uuid; SQLite stores them as text
	if s.sqlite {
		cast = ""
	}
	var b strings.Builder
	b.WriteString("(asset_id, day) IN (VALUES ")
	for i, bk := range buckets {
		if i > 0 {
			b.WriteString(",")
		}
		args = append(args, bk[0], bk[1])
		fmt.Fprintf(&b, "($%d%s, $%d)", len(args)-1, cast, len(args))
	}
	b.WriteString(")")
	return b.String(), args
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
