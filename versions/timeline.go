package versions

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/internal/chunk"
)

// Bounds of the questions asked of versions.
const (
	DefaultPage = 50  // versions on a timeline page unless asked
	MaxPage     = 500 // versions on a timeline page at most
	// DefaultDepth and MaxDepth bound a walk between versions, in runs (a run between an input
	// version and an output version is one hop).
	DefaultDepth = 5
	MaxDepth     = 20
	// DefaultMaxNodes bounds the versions one walk collects; past it the answer says truncated.
	DefaultMaxNodes = 5000
	// maxListed bounds the runs and readers listed for one version; the counts beside them
	// cover all of them.
	maxListed = 20
)

// Expiry is when and by whom a snapshot was expired; the version's row is kept.
type Expiry struct {
	At time.Time
	By string
}

// Job is the job a run belongs to, with its current name.
type Job struct {
	ID              uuid.UUID
	Namespace, Name string
}

// RunEdge is one run's edge to a version: the run read it (input) or produced it (output),
// labelled with how Tidemark knows.
type RunEdge struct {
	RunID    string
	Job      Job
	Label    string // stated, reported, inferred (never unknown: an unknown edge names no version)
	Basis    string // what named it
	Flagged  bool   // a stated version the table never had
	Conflict string // a second source that named another version
	At       time.Time
}

// Reader is one actor's reads of a version.
type Reader struct {
	Actor    string
	Reads    int64
	LastRead time.Time
}

// Reads are the reads of one version counted from usage, with the readers who read most.
type Reads struct {
	Reads    int64
	Actors   int
	LastRead *time.Time
	Readers  []Reader // most reads first, at most maxListed
}

// Produced is what made a version: the runs whose output edge names it, and the commit.
type Produced struct {
	Runs      []RunEdge // newest first, at most maxListed
	RunCount  int
	CommitID  *uuid.UUID
	Principal string
	// RunID is the run a commit's summary names (RunIDProperty), "" when it names none.
	RunID string
}

// ReadBy is what read a version: runs whose input edge names it, and readers from usage.
type ReadBy struct {
	Runs     []RunEdge // newest first, at most maxListed
	RunCount int
	Reads
}

// TimeTravel are the reads of a version made when it was no longer current: a newer version
// of the asset had been committed before the read.
type TimeTravel struct {
	// Since is when the next newer version was committed; nil when none is, or when this
	// version has no time (then no read can be judged).
	Since *time.Time
	Reads
}

// Version is one version of an asset with what produced and read it.
type Version struct {
	ID             uuid.UUID // the row's ID: where a timeline page continues
	AssetID        uuid.UUID
	Version        string
	SnapshotID     *int64
	Parent         string
	SequenceNumber *int64
	Operation      string
	Summary        map[string]string
	Principal      string
	CommittedAt    *time.Time // nil when nothing dated it
	FirstSeen      time.Time
	Source         string
	SeenInTable    bool
	Expired        *Expiry
	ProducedBy     Produced
	ReadBy         ReadBy
	TimeTravel     TimeTravel
}

// TimelineQuery selects a page of an asset's versions.
type TimelineQuery struct {
	// From and To bound the versions' committed_at (From inclusive, To exclusive); zero for
	// no bound. With either set, versions nothing dated are left out: nothing places them.
	From, To time.Time
	// After is the ID of the last version of the previous page (uuid.Nil for the first).
	After uuid.UUID
	Limit int // 1 to MaxPage; 0 means DefaultPage
}

// Page is one page of a timeline.
type Page struct {
	Versions []Version
	More     bool // another page follows: continue after the last version's ID
}

func invalid(field, format string, args ...any) error {
	return &catalog.Error{Kind: catalog.ErrInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Timeline returns an asset's versions, newest first (by committed_at, undated versions last,
// then by ID), each with the runs that produced and read it, its readers and its time-travel
// reads.
func (s *Service) Timeline(ctx context.Context, assetID uuid.UUID, q TimelineQuery) (Page, error) {
	if q.Limit == 0 {
		q.Limit = DefaultPage
	}
	if q.Limit < 1 || q.Limit > MaxPage {
		return Page{}, invalid("limit", "limit must be from 1 to %d, not %d", MaxPage, q.Limit)
	}
	if !q.From.IsZero() && !q.To.IsZero() && !q.From.Before(q.To) {
		return Page{}, invalid("from", "from (%s) must be before to (%s)", q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
	}
	if _, err := s.cat.Get(ctx, assetID); err != nil {
		return Page{}, err
	}
	c := s.client(ctx)
	query := c.DatasetVersion.Query().Where(datasetversion.AssetID(assetID))
	if !q.From.IsZero() {
		query.Where(datasetversion.CommittedAtGTE(q.From.UTC()))
	}
	if !q.To.IsZero() {
		query.Where(datasetversion.CommittedAtLT(q.To.UTC()))
	}
	if q.After != uuid.Nil {
		last, err := c.DatasetVersion.Get(ctx, q.After)
		if ent.IsNotFound(err) || (err == nil && last.AssetID != assetID) {
			return Page{}, invalid("cursor", "the cursor does not continue a timeline of asset %s; pass next_cursor from the previous page unchanged", assetID)
		}
		if err != nil {
			return Page{}, fmt.Errorf("versions: read the cursor's version: %w", err)
		}
		// Keyset on (committed_at desc nulls last, id desc): what sorts after the last row.
		if last.CommittedAt == nil {
			query.Where(datasetversion.CommittedAtIsNil(), datasetversion.IDLT(last.ID))
		} else {
			at := *last.CommittedAt
			query.Where(datasetversion.Or(datasetversion.CommittedAtLT(at),
				datasetversion.And(datasetversion.CommittedAt(at), datasetversion.IDLT(last.ID)),
				datasetversion.CommittedAtIsNil()))
		}
	}
	rows, err := query.Order(datasetversion.ByCommittedAt(entsql.OrderDesc(), entsql.OrderNullsLast()), datasetversion.ByID(entsql.OrderDesc())).
		Limit(q.Limit + 1).All(ctx)
	if err != nil {
		return Page{}, fmt.Errorf("versions: timeline of %s: %w", assetID, err)
	}
	page := Page{More: len(rows) > q.Limit}
	if page.More {
		rows = rows[:q.Limit]
	}
	if page.Versions, err = s.describe(ctx, assetID, rows); err != nil {
		return Page{}, err
	}
	return page, nil
}

// Get returns one version of an asset, described as on the timeline.
func (s *Service) Get(ctx context.Context, assetID uuid.UUID, version string) (Version, error) {
	a, err := s.cat.Get(ctx, assetID)
	if err != nil {
		return Version{}, err
	}
	row, err := s.client(ctx).DatasetVersion.Query().Where(datasetversion.AssetID(assetID), datasetversion.Version(version)).Only(ctx)
	if ent.IsNotFound(err) {
		return Version{}, noVersion(a, version)
	}
	if err != nil {
		return Version{}, fmt.Errorf("versions: read %s of %s: %w", version, assetID, err)
	}
	out, err := s.describe(ctx, assetID, []*ent.DatasetVersion{row})
	if err != nil {
		return Version{}, err
	}
	return out[0], nil
}

func noVersion(a catalog.Asset, version string) error {
	name := a.ID.String()
	if a.Name != "" {
		name = fmt.Sprintf("%s (%s.%s)", a.ID, a.Namespace, a.Name)
	}
	return &catalog.Error{Kind: catalog.ErrNotFound, Field: "version",
		Message: fmt.Sprintf("asset %s has no version %q", name, clip(version, 80))}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// describe turns rows of one asset, in timeline order (a contiguous stretch of it), into
// versions with their runs, readers and time-travel reads: a handful of queries per page.
func (s *Service) describe(ctx context.Context, assetID uuid.UUID, rows []*ent.DatasetVersion) ([]Version, error) {
	out := make([]Version, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Version
		out[i] = toVersion(r)
	}
	edges, counts, err := s.versionEdges(ctx, assetID, names)
	if err != nil {
		return nil, err
	}
	var runIDs []string
	for _, es := range edges {
		for _, e := range es {
			runIDs = append(runIDs, e.RunID)
		}
	}
	jobs, err := s.jobsOf(ctx, runIDs)
	if err != nil {
		return nil, err
	}
	keys := make([]Key, len(names))
	for i, n := range names {
		keys[i] = Key{assetID, n}
	}
	readers, err := s.readers(ctx, readsOf(keys, nil))
	if err != nil {
		return nil, err
	}
	// A version is no longer current once a newer one is committed. The rows are contiguous in
	// committed_at order, so each dated row's successor is the next newer time among them; only
	// the newest needs asking.
	next := map[int]*time.Time{}
	var newer *time.Time
	for i, r := range rows {
		if r.CommittedAt == nil {
			continue
		}
		if newer == nil {
			if newer, err = s.nextCommitted(ctx, assetID, *r.CommittedAt); err != nil {
				return nil, err
			}
		} else if !r.CommittedAt.Before(*newer) {
			// Same time as the row before: its successor is the same.
			newer = next[i-1]
		}
		next[i] = newer
		t := r.CommittedAt.UTC()
		newer = &t
	}
	var after []Key
	var since []time.Time
	for i, n := range names {
		if next[i] != nil {
			after = append(after, Key{assetID, n})
			since = append(since, *next[i])
		}
	}
	travel, err := s.readers(ctx, readsOf(after, since))
	if err != nil {
		return nil, err
	}
	for i := range out {
		v := &out[i]
		k := Key{assetID, v.Version}
		for _, e := range edges[edgeKey{v.Version, Output}] {
			e.Job = jobs[e.RunID]
			v.ProducedBy.Runs = append(v.ProducedBy.Runs, e)
		}
		for _, e := range edges[edgeKey{v.Version, Input}] {
			e.Job = jobs[e.RunID]
			v.ReadBy.Runs = append(v.ReadBy.Runs, e)
		}
		v.ProducedBy.RunCount, v.ReadBy.RunCount = counts[edgeKey{v.Version, Output}], counts[edgeKey{v.Version, Input}]
		v.ReadBy.Reads = readers[k]
		v.TimeTravel.Since = next[i]
		v.TimeTravel.Reads = travel[k]
		if v.ReadBy.Readers == nil {
			v.ReadBy.Readers = []Reader{}
		}
		if v.TimeTravel.Readers == nil {
			v.TimeTravel.Readers = []Reader{}
		}
	}
	return out, nil
}

func toVersion(r *ent.DatasetVersion) Version {
	v := Version{ID: r.ID, AssetID: r.AssetID, Version: r.Version, SnapshotID: r.SnapshotID, Parent: r.ParentVersion,
		SequenceNumber: r.SequenceNumber, Operation: r.Operation, Summary: map[string]string{}, Principal: r.Principal,
		CommittedAt: utc(r.CommittedAt), FirstSeen: r.FirstSeen.UTC(), Source: r.Source, SeenInTable: r.SeenInTable,
		ProducedBy: Produced{Runs: []RunEdge{}, CommitID: r.CommitID, Principal: r.Principal, RunID: r.RunID},
		ReadBy:     ReadBy{Runs: []RunEdge{}}}
	if r.Summary != "" {
		_ = json.Unmarshal([]byte(r.Summary), &v.Summary) // written by summaryJSON: a flat object
	}
	if r.ExpiredAt != nil {
		v.Expired = &Expiry{At: r.ExpiredAt.UTC(), By: r.ExpiredBy}
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// nextCommitted is the time of the first version of the asset committed after t, nil if none.
func (s *Service) nextCommitted(ctx context.Context, assetID uuid.UUID, t time.Time) (*time.Time, error) {
	row, err := s.client(ctx).DatasetVersion.Query().
		Where(datasetversion.AssetID(assetID), datasetversion.CommittedAtGT(t)).
		Order(datasetversion.ByCommittedAt(), datasetversion.ByID()).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("versions: the version after %s: %w", t.Format(time.RFC3339), err)
	}
	return utc(row.CommittedAt), nil
}

type edgeKey struct{ version, role string }

// versionEdges returns, for versions of one asset, the newest maxListed runs of each role that
// name each version, and how many name it in all (one query: a window over the
// (asset_id, version, role) index).
func (s *Service) versionEdges(ctx context.Context, assetID uuid.UUID, versions []string) (map[edgeKey][]RunEdge, map[edgeKey]int, error) {
	edges, counts := map[edgeKey][]RunEdge{}, map[edgeKey]int{}
	err := chunk.Each(versions, func(part []string) error {
		args := []any{assetID}
		for _, v := range part {
			args = append(args, v)
		}
		args = append(args, maxListed)
		rows, err := s.client(ctx).QueryContext(ctx, s.rebind(`SELECT run_id, version, role, kind, basis, flagged, conflict, at, n FROM (
	SELECT run_id, version, role, kind, basis, flagged, conflict, at,
		ROW_NUMBER() OVER (PARTITION BY version, role ORDER BY at DESC, run_id) AS rk,
		COUNT(*) OVER (PARTITION BY version, role) AS n
	FROM run_versions WHERE asset_id = ? AND version IN (`+marks(len(part))+`)) t
WHERE rk <= ? ORDER BY version, role, rk`), args...)
		if err != nil {
			return fmt.Errorf("versions: runs of versions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var e RunEdge
			var version, role string
			var at sqltime.Time
			var n int
			if err := rows.Scan(&e.RunID, &version, &role, &e.Label, &e.Basis, &e.Flagged, &e.Conflict, &at, &n); err != nil {
				return fmt.Errorf("versions: runs of versions: %w", err)
			}
			e.At = at.T
			k := edgeKey{version, role}
			edges[k] = append(edges[k], e)
			counts[k] = n
		}
		return rows.Err()
	})
	return edges, counts, err
}

// jobsOf returns the job of each run, with the job's current name.
func (s *Service) jobsOf(ctx context.Context, runIDs []string) (map[string]Job, error) {
	out := map[string]Job{}
	ids := uniq(runIDs)
	jobOf := map[string]uuid.UUID{}
	err := chunk.Each(ids, func(part []string) error {
		rows, err := s.client(ctx).Run.Query().Where(run.IDIn(part...)).Select(run.FieldID, run.FieldJobAssetID).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: runs' jobs: %w", err)
		}
		for _, r := range rows {
			jobOf[r.ID] = r.JobAssetID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var jobIDs []uuid.UUID
	for _, j := range jobOf {
		jobIDs = append(jobIDs, j)
	}
	assets, err := s.assetsOf(ctx, jobIDs)
	if err != nil {
		return nil, err
	}
	for r, j := range jobOf {
		a := assets[j]
		out[r] = Job{ID: j, Namespace: a.namespace, Name: a.name}
	}
	return out, nil
}

func uniq[T cmp.Ordered](xs []T) []T {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

// readsQuery selects usage reads of versions: each key's reads, after its time when one is
// given (time travel: after a newer version was committed).
type readsQuery struct {
	keys  []Key
	after []time.Time // nil, or one per key
}

func readsOf(keys []Key, after []time.Time) readsQuery { return readsQuery{keys, after} }

// readers counts the usage reads of each key, with the top maxListed readers: grouped in the
// database over the (asset_id, version) index, never loaded read by read.
func (s *Service) readers(ctx context.Context, q readsQuery) (map[Key]Reads, error) {
	out := map[Key]Reads{}
	idx := make([]int, len(q.keys))
	for i := range idx {
		idx[i] = i
	}
	err := chunk.Each(idx, func(part []int) error {
		var cond []string
		var args []any
		for _, i := range part {
			k := q.keys[i]
			if q.after != nil {
				cond = append(cond, "(asset_id = ? AND version = ? AND at > ?)")
				args = append(args, k.AssetID, k.Version, q.after[i])
			} else {
				cond = append(cond, "(asset_id = ? AND version = ?)")
				args = append(args, k.AssetID, k.Version)
			}
		}
		args = append(args, maxListed)
		rows, err := s.client(ctx).QueryContext(ctx, s.rebind(`SELECT asset_id, version, actor, n, last, total, actors, lastall FROM (
	SELECT asset_id, version, actor, n, last,
		ROW_NUMBER() OVER (PARTITION BY asset_id, version ORDER BY n DESC, actor) AS rk,
		SUM(n) OVER (PARTITION BY asset_id, version) AS total,
		COUNT(*) OVER (PARTITION BY asset_id, version) AS actors,
		MAX(last) OVER (PARTITION BY asset_id, version) AS lastall
	FROM (SELECT asset_id, version, actor, COUNT(*) AS n, MAX(at) AS last FROM usage_events
		WHERE kind = 'read' AND version <> '' AND (`+strings.Join(cond, " OR ")+`)
		GROUP BY asset_id, version, actor) g) t
WHERE rk <= ? ORDER BY asset_id, version, rk`), args...)
		if err != nil {
			return fmt.Errorf("versions: readers of versions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k Key
			var r Reader
			var last, lastAll sqltime.Time
			var total int64
			var actors int
			if err := rows.Scan(&k.AssetID, &k.Version, &r.Actor, &r.Reads, &last, &total, &actors, &lastAll); err != nil {
				return fmt.Errorf("versions: readers of versions: %w", err)
			}
			r.LastRead = last.T
			agg := out[k]
			agg.Reads, agg.Actors = total, actors
			l := lastAll.T
			agg.LastRead = &l
			agg.Readers = append(agg.Readers, r)
			out[k] = agg
		}
		return rows.Err()
	})
	return out, err
}

// rebind writes the ? placeholders of q as PostgreSQL's $n on PostgreSQL. The queries it is
// given hold no other question mark.
func (s *Service) rebind(q string) string {
	if s.sqlite {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// marks is n placeholders separated by commas.
func marks(n int) string { return strings.TrimSuffix(strings.Repeat("?, ", n), ", ") }
