package usage

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/usagepending"
	chunkpkg "github.com/tidemark/tidemark/internal/chunk"
)

// resolver answers which asset a dataset name meant at a time, from the names' histories.
type resolver struct {
	history map[[2]string][]*ent.AssetName
	client  *ent.Client
	// first is when each asset got its first name, read only for assets whose name a record
	// predates (before-first-seen candidates): most records never need it.
	first map[uuid.UUID]time.Time
}

// newResolver reads the history of every name in names (dataset names: usage is of data).
func (s *Service) newResolver(ctx context.Context, client *ent.Client, names []string) (*resolver, error) {
	r := &resolver{history: map[[2]string][]*ent.AssetName{}, client: client}
	for part := range chunk(dedupe(names)) {
		rows, err := client.AssetName.Query().Where(assetname.NameIn(part...), assetname.SpaceEQ(assetname.SpaceDataset)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("usage: look up names: %w", err)
		}
		for _, row := range rows {
			k := [2]string{row.Namespace, row.Name}
			r.history[k] = append(r.history[k], row)
		}
	}
	return r, nil
}

// firstNames reads when the assets that first held the names of the given records got their
// first name, for the records that predate their name's history (call before resolve).
func (r *resolver) firstNames(ctx context.Context, recs []nameAt) error {
	r.first = map[uuid.UUID]time.Time{}
	var ids []uuid.UUID
	seen := map[uuid.UUID]bool{}
	for _, rec := range recs {
		if first := r.firstHolder(rec.namespace, rec.name); first != nil && rec.at.Before(first.ValidFrom) && !seen[first.AssetID] {
			seen[first.AssetID] = true
			ids = append(ids, first.AssetID)
		}
	}
	for part := range chunk(ids) {
		rows, err := r.client.AssetName.Query().Where(assetname.AssetIDIn(part...)).
			Select(assetname.FieldAssetID, assetname.FieldValidFrom).All(ctx)
		if err != nil {
			return fmt.Errorf("usage: look up first names: %w", err)
		}
		for _, row := range rows {
			if f, ok := r.first[row.AssetID]; !ok || row.ValidFrom.Before(f) {
				r.first[row.AssetID] = row.ValidFrom
			}
		}
	}
	return nil
}

// nameAt is a name used at a time.
type nameAt struct {
	namespace, name string
	at              time.Time
}

// firstHolder is the history row of a name that starts earliest.
func (r *resolver) firstHolder(namespace, name string) *ent.AssetName {
	var first *ent.AssetName
	for _, row := range r.history[[2]string{namespace, name}] {
		if first == nil || row.ValidFrom.Before(first.ValidFrom) {
			first = row
		}
	}
	return first
}

// resolve finds the asset a name meant at t, and how:
//   - exactly: the asset that held it then (valid_from <= t < valid_to);
//   - in a rename window: nobody held it then, and an asset took it in a rename found by a
//     catalog sync whose uncertain interval [uncertain_from, valid_from) contains t;
//   - before first seen: t is before anyone held the name, and its first holder got it as its
//     first name (it existed under it before Tidemark saw it). A name first taken by a rename
//     does not reach back: before the rename the asset had its old name.
//
// A time in a gap between two holders resolves to neither.
func (r *resolver) resolve(namespace, name string, t time.Time) (uuid.UUID, string, bool) {
	rows := r.history[[2]string{namespace, name}]
	for _, row := range rows {
		if !row.ValidFrom.After(t) && (row.ValidTo == nil || row.ValidTo.After(t)) {
			return row.AssetID, ResolvedExact, true
		}
	}
	for _, row := range rows {
		if row.UncertainFrom != nil && !row.UncertainFrom.After(t) && t.Before(row.ValidFrom) {
			return row.AssetID, ResolvedRenameWindow, true
		}
	}
	first := r.firstHolder(namespace, name)
	if first != nil && t.Before(first.ValidFrom) && first.UncertainFrom == nil {
		if f, ok := r.first[first.AssetID]; ok && f.Equal(first.ValidFrom) {
			return first.AssetID, ResolvedBeforeFirstSeen, true
		}
	}
	return uuid.Nil, "", false
}

// dedupe is xs sorted without repeats (a fresh slice).
func dedupe(xs []string) []string { return slices.Compact(slices.Sorted(slices.Values(xs))) }

// pendingKey identifies an unresolved record as recordKey does a stored one, by name instead
// of asset: a retried batch keeps it once.
func pendingKey(r Record) string {
	h := sha256.New()
	if r.QueryID != "" {
		fmt.Fprintf(h, "q\x00%s\x00%s\x00%s\x00%s", r.Source, r.QueryID, r.Namespace, r.Name)
	} else {
		fmt.Fprintf(h, "k\x00%s\x00%s\x00%s\x00%s", r.Source, r.IdempotencyKey, r.Namespace, r.Name)
	}
	return hex.EncodeToString(h.Sum(nil))
}

var pendingCols = []column{{"pending_key", "text"}, {"namespace", "text"}, {"name", "text"}, {"kind", "text"}, {"actor", "text"},
	{"source", "text"}, {"query_id", "text"}, {"idempotency_key", "text"}, {"at", "timestamptz"}, {"received_at", "timestamptz"}}

// keepPending stores unresolved records to be resolved again later.
func (s *Service) keepPending(ctx context.Context, tx *ent.Tx, recs []Record, now time.Time) error {
	if len(recs) == 0 {
		return nil
	}
	rows := make([][]any, len(recs))
	for i, r := range recs {
		rows[i] = []any{pendingKey(r), r.Namespace, r.Name, r.Kind, r.Actor, r.Source, r.QueryID, r.IdempotencyKey,
			r.At.UTC().Truncate(time.Microsecond), now}
	}
	// Key order, as the raw events: two batches keeping the same records wait, not deadlock.
	slices.SortFunc(rows, func(a, b []any) int { return cmp.Compare(a[0].(string), b[0].(string)) })
	for part := range chunkpkg.Statements(s.sqlite, rows) {
		q, args := s.bulkInsert("usage_pendings", pendingCols, part, "ON CONFLICT (pending_key) DO NOTHING")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("usage: keep unresolved records: %w", err)
		}
	}
	return nil
}

// ResolvePending attributes the kept unresolved records whose names now resolve (after a sync,
// a rename, a new asset) and stores them as usage, marked late. names limits it to records of
// those names (namespace, name); nil looks at every kept record whose name an asset holds or
// held. It returns how many it attributed.
func (s *Service) ResolvePending(ctx context.Context, names [][2]string) (int, error) {
	if names == nil {
		// Only names some asset holds or held can resolve: ask the database which.
		var err error
		if names, err = s.heldPendingNames(ctx); err != nil {
			return 0, err
		}
	}
	var total int
	for after := 0; ; {
		if len(names) == 0 {
			return total, nil
		}
		var ns []string
		for _, n := range names {
			ns = append(ns, n[1])
		}
		q := s.db.UsagePending.Query().Where(usagepending.IDGT(after), usagepending.NameIn(dedupe(ns)...)).
			Order(ent.Asc(usagepending.FieldID)).Limit(chunkpkg.Size)
		page, err := q.All(ctx)
		if err != nil {
			return total, fmt.Errorf("usage: read unresolved records: %w", err)
		}
		if len(page) == 0 {
			return total, nil
		}
		after = page[len(page)-1].ID
		n, err := s.resolvePage(ctx, page, names)
		total += n
		if err != nil {
			return total, err
		}
		if len(page) < chunkpkg.Size {
			return total, nil
		}
	}
}

// heldPendingNames are the names records wait under that some dataset asset holds or held.
func (s *Service) heldPendingNames(ctx context.Context) ([][2]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT p.namespace, p.name FROM usage_pendings p WHERE EXISTS (
		SELECT 1 FROM asset_names n WHERE n.name = p.name AND n.namespace = p.namespace AND n.space = 'dataset')`)
	if err != nil {
		return nil, fmt.Errorf("usage: names of kept records: %w", err)
	}
	defer rows.Close()
	names := [][2]string{}
	for rows.Next() {
		var n [2]string
		if err := rows.Scan(&n[0], &n[1]); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

func (s *Service) resolvePage(ctx context.Context, page []*ent.UsagePending, names [][2]string) (int, error) {
	want := map[[2]string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var ns []string
	for _, p := range page {
		ns = append(ns, p.Name)
	}
	res, err := s.newResolver(ctx, s.db, ns)
	if err != nil {
		return 0, err
	}
	recs := make([]nameAt, len(page))
	for i, p := range page {
		recs[i] = nameAt{p.Namespace, p.Name, p.At}
	}
	if err := res.firstNames(ctx, recs); err != nil {
		return 0, err
	}
	var rows []row
	var done []int
	for _, p := range page {
		if !want[[2]string{p.Namespace, p.Name}] {
			continue
		}
		id, how, ok := res.resolve(p.Namespace, p.Name, p.At)
		if !ok {
			continue
		}
		rec := Record{Namespace: p.Namespace, Name: p.Name, Source: p.Source, QueryID: p.QueryID, IdempotencyKey: p.IdempotencyKey}
		rows = append(rows, row{key: recordKey(rec, id), assetID: id, kind: string(p.Kind), actor: p.Actor, source: p.Source,
			queryID: p.QueryID, namespace: p.Namespace, name: p.Name, at: p.At, resolved: how, late: true})
		done = append(done, p.ID)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	err = s.inTx(ctx, func(ctx context.Context, tx *ent.Tx) error {
		if _, err := s.store(ctx, rows); err != nil {
			return err
		}
		for part := range chunk(done) {
			if _, err := tx.UsagePending.Delete().Where(usagepending.IDIn(part...)).Exec(ctx); err != nil {
				return fmt.Errorf("usage: drop attributed records: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}

// NamesChanged resolves the kept records of every name the assets ever had (for the catalog's
// change hook: a sync, rename, restore or new asset may be what they waited for). Cheap when
// nothing waits.
func (s *Service) NamesChanged(ctx context.Context, ids []uuid.UUID) {
	if s == nil || len(ids) == 0 { // nil: a hook wired before the service exists
		return
	}
	if any, err := s.db.UsagePending.Query().Exist(ctx); err != nil || !any {
		return
	}
	var names [][2]string
	for part := range chunk(ids) {
		rows, err := s.db.AssetName.Query().Where(assetname.AssetIDIn(part...), assetname.SpaceEQ(assetname.SpaceDataset)).
			Select(assetname.FieldNamespace, assetname.FieldName).All(ctx)
		if err != nil {
			s.log.Warn("usage: names of changed assets", "err", err)
			return
		}
		for _, r := range rows {
			names = append(names, [2]string{r.Namespace, r.Name})
		}
	}
	if n, err := s.ResolvePending(ctx, names); err != nil {
		s.log.Warn("usage: resolve kept records; the next sweep retries", "err", err)
	} else if n > 0 {
		s.log.Info("usage: attributed records that waited for their name", "records", n)
	}
}

// Waiting is what waits for resolution under one name.
type Waiting struct {
	Namespace, Name string
	Reads, Writes   int64
	FirstAt, LastAt time.Time
}

// Unresolved lists the names records wait under, most records first.
func (s *Service) Unresolved(ctx context.Context, limit int) ([]Waiting, int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT namespace, name, SUM(CASE WHEN kind = 'read' THEN 1 ELSE 0 END),
		SUM(CASE WHEN kind = 'write' THEN 1 ELSE 0 END), MIN(at), MAX(at) FROM usage_pendings GROUP BY namespace, name`)
	if err != nil {
		return nil, 0, fmt.Errorf("usage: list unresolved records: %w", err)
	}
	defer rows.Close()
	var out []Waiting
	var total int64
	for rows.Next() {
		var w Waiting
		var first, last sqltime.Time
		if err := rows.Scan(&w.Namespace, &w.Name, &w.Reads, &w.Writes, &first, &last); err != nil {
			return nil, 0, fmt.Errorf("usage: list unresolved records: %w", err)
		}
		w.FirstAt, w.LastAt = first.T, last.T
		total += w.Reads + w.Writes
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, func(a, b Waiting) int {
		return cmp.Or(cmp.Compare(b.Reads+b.Writes, a.Reads+a.Writes), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, total, nil
}
