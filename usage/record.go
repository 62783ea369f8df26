package usage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
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
}

// Statuses of a record.
const (
	StatusAccepted   = "accepted"
	StatusDuplicate  = "duplicate"  // recorded before (or earlier in the same batch): not counted again
	StatusRefused    = "refused"    // invalid, too old, in the future: Reason says which
	StatusUnresolved = "unresolved" // no asset held that name at that time (no asset is created)
)

// Result is what happened to one record.
type Result struct {
	Status  string
	AssetID uuid.UUID
	Reason  string
}

// Limits on records.
const (
	MaxRecords   = 5000
	maxTextBytes = 512
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
}

// Record validates, resolves and stores a batch of records. Every record gets a result; the
// valid ones are stored together, each counted once however often it is sent.
func (s *Service) Record(ctx context.Context, recs []Record) ([]Result, error) {
	if len(recs) > MaxRecords {
		return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "events", Message: fmt.Sprintf("usage: %d records in one batch; the limit is %d: split it", len(recs), MaxRecords)}
	}
	now := s.clock()
	out := make([]Result, len(recs))
	for i, r := range recs {
		if reason := s.check(r, now); reason != "" {
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
				queryID: r.QueryID, namespace: r.Namespace, name: r.Name, at: r.At.UTC().Truncate(time.Microsecond)})
		}
		at[key] = append(at[key], i)
	}
	inserted, err := s.store(ctx, rows)
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
func (s *Service) check(r Record, now time.Time) string {
	switch {
	case r.Kind != "read" && r.Kind != "write":
		return fmt.Sprintf("kind %q is not read or write", truncate(r.Kind, 32))
	case r.At.IsZero():
		return "at is missing; send the time of the query (RFC 3339)"
	case r.At.After(now.Add(Skew)):
		return fmt.Sprintf("at %s is in the future (more than %s ahead of the server's clock)", r.At.UTC().Format(time.RFC3339), Skew)
	case r.At.Before(now.Add(-s.lateness)):
		return fmt.Sprintf("at %s is older than the accepted lateness of %s; such records are refused, not counted", r.At.UTC().Format(time.RFC3339), s.lateness)
	case r.QueryID == "" && r.IdempotencyKey == "":
		return "no query_id and no idempotency_key: without one a retried batch would count twice"
	case r.AssetID == uuid.Nil && (r.Namespace == "" || r.Name == ""):
		return "asset needs an id, or a namespace and a name"
	case r.AssetID == uuid.Nil && catalog.ValidateName(r.Namespace, r.Name) != nil:
		return "asset: " + catalog.ValidateName(r.Namespace, r.Name).Error()
	}
	for field, v := range map[string]string{"actor": r.Actor, "source": r.Source, "query_id": r.QueryID, "idempotency_key": r.IdempotencyKey} {
		if len(v) > maxTextBytes {
			return fmt.Sprintf("%s is %d bytes; the limit is %d", field, len(v), maxTextBytes)
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
	for _, part := range chunk(ids) {
		got, err := client.Asset.Query().Where(asset.IDIn(part...)).IDs(ctx)
		if err != nil {
			return fmt.Errorf("usage: look up assets: %w", err)
		}
		for _, id := range got {
			exists[id] = true
		}
	}
	history := map[[2]string][]*ent.AssetName{}
	for _, part := range chunk(names) {
		rows, err := client.AssetName.Query().Where(assetname.NameIn(part...), assetname.SpaceEQ(assetname.SpaceDataset)).All(ctx)
		if err != nil {
			return fmt.Errorf("usage: look up names: %w", err)
		}
		for _, r := range rows {
			k := [2]string{r.Namespace, r.Name}
			history[k] = append(history[k], r)
		}
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
		id, ok := heldAt(history[[2]string{r.Namespace, r.Name}], r.At)
		if !ok {
			out[i] = Result{Status: StatusUnresolved, Reason: fmt.Sprintf("no asset was named %s.%s at %s; register it first", r.Namespace, r.Name, r.At.UTC().Format(time.RFC3339))}
			continue
		}
		out[i].AssetID = id
	}
	return nil
}

// heldAt finds the asset that held a name at t: valid_from <= t < valid_to.
func heldAt(rows []*ent.AssetName, t time.Time) (uuid.UUID, bool) {
	for _, r := range rows {
		if !r.ValidFrom.After(t) && (r.ValidTo == nil || r.ValidTo.After(t)) {
			return r.AssetID, true
		}
	}
	return uuid.Nil, false
}

func (s *Service) client(ctx context.Context) *ent.Client {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return tx.Client()
	}
	return s.db
}

const chunkSize = 500

func chunk[T any](xs []T) [][]T {
	var out [][]T
	for len(xs) > 0 {
		n := min(chunkSize, len(xs))
		out = append(out, xs[:n])
		xs = xs[n:]
	}
	return out
}

// store inserts the rows (skipping keys stored before) and recounts the rollups of the buckets
// they touch, in one transaction (the caller's, when ctx carries one). It returns the keys it
// inserted.
func (s *Service) store(ctx context.Context, rows []row) (map[string]bool, error) {
	inserted := map[string]bool{}
	if len(rows) == 0 {
		return inserted, nil
	}
	err := s.inTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
		clear(inserted)
		received := s.clock()
		var fresh []row
		for _, part := range chunk(rows) {
			var q strings.Builder
			q.WriteString("INSERT INTO usage_events (event_key, asset_id, kind, actor, job_asset_id, source, query_id, namespace, name, at, day, received_at) VALUES ")
			args := make([]any, 0, 12*len(part))
			for i, r := range part {
				if i > 0 {
					q.WriteString(",")
				}
				n := len(args)
				q.WriteString("(")
				for j := 1; j <= 12; j++ {
					if j > 1 {
						q.WriteString(",")
					}
					fmt.Fprintf(&q, "$%d", n+j)
				}
				q.WriteString(")")
				var job any
				if r.jobID != nil {
					job = *r.jobID
				}
				args = append(args, r.key, r.assetID, r.kind, r.actor, job, r.source, r.queryID, r.namespace, r.name, r.at, Day(r.at), received)
			}
			q.WriteString(" ON CONFLICT (event_key) DO NOTHING RETURNING event_key")
			res, err := tx.QueryContext(ctx, q.String(), args...)
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
		for _, r := range rows {
			if inserted[r.key] {
				fresh = append(fresh, r)
			}
		}
		return s.recount(ctx, tx, fresh)
	})
	return inserted, err
}

func (s *Service) inTx(ctx context.Context, fn func(ctx context.Context, tx *ent.Tx) error) error {
	if tx := ent.TxFromContext(ctx); tx != nil {
		return fn(ctx, tx)
	}
	return s.cat.InTx(ctx, fn)
}

// recount recomputes the rollups of every (asset, day) the new rows fall in from the raw events,
// so late and duplicate events can never make them drift. On PostgreSQL it first takes a lock per
// asset (in one order), so two batches for one asset recount one after the other and the later
// sees the earlier's committed events.
func (s *Service) recount(ctx context.Context, tx *ent.Tx, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	assetSet, daySet := map[uuid.UUID]bool{}, map[string]bool{}
	for _, r := range rows {
		assetSet[r.assetID], daySet[Day(r.at)] = true, true
	}
	assets := make([]string, 0, len(assetSet))
	for a := range assetSet {
		assets = append(assets, a.String())
	}
	sort.Strings(assets)
	days := make([]string, 0, len(daySet))
	for d := range daySet {
		days = append(days, d)
	}
	if !s.sqlite {
		for _, a := range assets {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "usage:"+a); err != nil {
				return fmt.Errorf("usage: lock rollups: %w", err)
			}
		}
	}
	now := s.clock()
	for _, aPart := range chunk(assets) {
		for _, dPart := range chunk(days) {
			daily, dailyArgs := bucketWhere(aPart, dPart, []any{now})
			other, otherArgs := bucketWhere(aPart, dPart, nil)
			stmts := []struct {
				q    string
				args []any
			}{
				{`INSERT INTO usage_dailies (asset_id, day, reads, writes, distinct_actors, distinct_jobs, last_read_at, last_write_at, updated_at)
				SELECT asset_id, day, SUM(CASE WHEN kind = 'read' THEN 1 ELSE 0 END), SUM(CASE WHEN kind = 'write' THEN 1 ELSE 0 END),
					COUNT(DISTINCT NULLIF(actor, '')), COUNT(DISTINCT job_asset_id),
					MAX(CASE WHEN kind = 'read' THEN at END), MAX(CASE WHEN kind = 'write' THEN at END), $1
				FROM usage_events WHERE ` + daily + ` GROUP BY asset_id, day
				ON CONFLICT (asset_id, day) DO UPDATE SET reads = excluded.reads, writes = excluded.writes,
					distinct_actors = excluded.distinct_actors, distinct_jobs = excluded.distinct_jobs,
					last_read_at = excluded.last_read_at, last_write_at = excluded.last_write_at, updated_at = excluded.updated_at`, dailyArgs},
				{`INSERT INTO usage_actor_dailies (asset_id, day, actor, reads, writes)
				SELECT asset_id, day, actor, SUM(CASE WHEN kind = 'read' THEN 1 ELSE 0 END), SUM(CASE WHEN kind = 'write' THEN 1 ELSE 0 END)
				FROM usage_events WHERE ` + other + ` AND actor <> '' GROUP BY asset_id, day, actor
				ON CONFLICT (asset_id, day, actor) DO UPDATE SET reads = excluded.reads, writes = excluded.writes`, otherArgs},
				{`INSERT INTO usage_names (asset_id, namespace, name, first_at, last_at)
				SELECT asset_id, namespace, name, MIN(at), MAX(at)
				FROM usage_events WHERE ` + other + ` AND name <> '' GROUP BY asset_id, namespace, name
				ON CONFLICT (asset_id, namespace, name) DO UPDATE SET
					first_at = CASE WHEN excluded.first_at < usage_names.first_at THEN excluded.first_at ELSE usage_names.first_at END,
					last_at = CASE WHEN excluded.last_at > usage_names.last_at THEN excluded.last_at ELSE usage_names.last_at END`, otherArgs},
			}
			for _, st := range stmts {
				if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
					return fmt.Errorf("usage: recount rollups: %w", err)
				}
			}
		}
	}
	return nil
}

// bucketWhere is "asset_id IN (...) AND day IN (...)" with numbered parameters after args.
func bucketWhere(assets, days []string, args []any) (string, []any) {
	var b strings.Builder
	for i, list := range [][]string{assets, days} {
		if i == 1 {
			b.WriteString(" AND ")
		}
		b.WriteString([]string{"asset_id", "day"}[i] + " IN (")
		for j, v := range list {
			if j > 0 {
				b.WriteString(",")
			}
			args = append(args, v)
			fmt.Fprintf(&b, "$%d", len(args))
		}
		b.WriteString(")")
	}
	return b.String(), args
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
