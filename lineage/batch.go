package lineage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/ent/dialect/sql"
	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetfacet"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/lineageedge"
	"github.com/tidemark/tidemark/ent/lineageevent"
	"github.com/tidemark/tidemark/ent/lineagestate"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/run"
)

// batch is the state shared by the events applied in one transaction. Ingest costs round trips,
// not CPU, so a batch reads what its events will need up front (event keys, current names,
// lifecycle states, runs, facets: one query each) and writes the rows it only appends or
// widens (events, runs, run I/O, seen intervals of known edges) in bulk at the end. Rows whose
// outcome later reads depend on (assets, names, new edges, facets) are written as they happen.
type batch struct {
	s     *Service
	tx    *ent.Tx
	now   time.Time
	cache map[nameKey]catalog.Ref // names to assets, kept current by renames and drops

	keys        map[string]uuid.UUID // event keys stored before or earlier in this batch
	states      map[uuid.UUID]*ent.LineageState
	statesKnown map[uuid.UUID]bool // state looked up (a nil entry in states: none)
	facets      map[uuid.UUID]map[string]*ent.AssetFacet
	// facetWrites are the facet values this batch decided (a row with ID 0 is new), written at
	// flush: new ones in bulk, all in key order, so concurrent batches lock facet rows in one
	// order and an event's facets cost no statement of their own.
	facetWrites map[facetKey]*ent.AssetFacet
	runs        map[string]*runState
	runIO       map[[3]string]time.Time
	touches     map[[2]uuid.UUID]*edgeTouch // known edges to widen
	pending     map[[2]uuid.UUID]*edgeTouch // edges not known: to look up, then create or widen
	knownEdges  map[[2]uuid.UUID]bool
	events      []*ent.LineageEventCreate

	added      []edgeRef
	touched    []uuid.UUID // assets whose name or status changed
	documented []uuid.UUID // assets given a schema or documentation facet
	completed  []CompletedRun
	// Datasets whose schema or tags facet changed, with the event that last changed it.
	schemas, tags map[uuid.UUID]*IngestResult
}

type facetKey struct {
	asset uuid.UUID
	name  string
}

// nameKey is a name in its name space.
type nameKey struct {
	space           catalog.Space
	namespace, name string
}

type runState struct {
	row   ent.Run
	isNew bool
	dirty bool
}

type edgeTouch struct {
	first, last time.Time
	lastRun     string
}

func newBatch(s *Service, tx *ent.Tx) *batch {
	return &batch{s: s, tx: tx, now: s.now().UTC().Truncate(time.Microsecond), cache: map[nameKey]catalog.Ref{},
		keys: map[string]uuid.UUID{}, states: map[uuid.UUID]*ent.LineageState{}, statesKnown: map[uuid.UUID]bool{},
		facets: map[uuid.UUID]map[string]*ent.AssetFacet{}, facetWrites: map[facetKey]*ent.AssetFacet{}, runs: map[string]*runState{}, runIO: map[[3]string]time.Time{},
		touches: map[[2]uuid.UUID]*edgeTouch{}, pending: map[[2]uuid.UUID]*edgeTouch{}, knownEdges: map[[2]uuid.UUID]bool{},
		schemas: map[uuid.UUID]*IngestResult{}, tags: map[uuid.UUID]*IngestResult{}}
}

const chunk = 500 // rows or keys per statement, far below both databases' parameter limits

func chunks[T any](xs []T, fn func([]T) error) error {
	for len(xs) > 0 {
		n := min(chunk, len(xs))
		if err := fn(xs[:n]); err != nil {
			return err
		}
		xs = xs[n:]
	}
	return nil
}

// prefetch reads what the events will look up.
func (b *batch) prefetch(ctx context.Context, evs []Event, keys []string) error {
	if err := chunks(keys, func(part []string) error {
		rows, err := b.tx.LineageEvent.Query().Where(lineageevent.EventKeyIn(part...)).
			Select(lineageevent.FieldID, lineageevent.FieldEventKey).All(ctx)
		for _, r := range rows {
			b.keys[r.EventKey] = r.ID
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read event keys: %w", err)
	}

	wanted := map[nameKey]bool{}
	byName := map[string]bool{}
	var names, runIDs []string
	add := func(space catalog.Space, ns, name string) {
		if k := (nameKey{space, ns, name}); !wanted[k] {
			wanted[k] = true
			if !byName[name] {
				byName[name] = true
				names = append(names, name)
			}
		}
	}
	for _, ev := range evs {
		if ev.Job != nil {
			add(catalog.SpaceJob, ev.Job.Namespace, ev.Job.Name)
		}
		for _, d := range append(append([]Dataset{}, ev.Inputs...), ev.Outputs...) {
			add(catalog.SpaceDataset, d.Namespace, d.Name)
		}
		if ev.Dataset != nil {
			add(catalog.SpaceDataset, ev.Dataset.Namespace, ev.Dataset.Name)
		}
		if ev.RunID != "" {
			runIDs = append(runIDs, ev.RunID)
		}
	}
	var ids []uuid.UUID
	if err := chunks(names, func(part []string) error {
		rows, err := b.tx.AssetName.Query().Where(assetname.NameIn(part...), assetname.ValidToIsNil()).All(ctx)
		for _, r := range rows {
			if k := (nameKey{catalog.Space(r.Space), r.Namespace, r.Name}); wanted[k] {
				b.cache[k] = catalog.Ref{ID: r.AssetID}
				ids = append(ids, r.AssetID)
			}
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read names: %w", err)
	}
	if err := chunks(ids, func(part []uuid.UUID) error {
		states, err := b.tx.LineageState.Query().Where(lineagestate.IDIn(part...)).All(ctx)
		if err != nil {
			return err
		}
		for _, id := range part {
			b.statesKnown[id] = true
			b.facets[id] = map[string]*ent.AssetFacet{}
		}
		for _, st := range states {
			b.states[st.ID] = st
		}
		facets, err := b.tx.AssetFacet.Query().Where(assetfacet.AssetIDIn(part...)).All(ctx)
		for _, f := range facets {
			b.facets[f.AssetID][f.Name] = f
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read lifecycle and facets: %w", err)
	}
	if err := chunks(runIDs, func(part []string) error {
		rows, err := b.tx.Run.Query().Where(run.IDIn(part...)).All(ctx)
		for _, r := range rows {
			b.runs[r.ID] = &runState{row: *r}
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read runs: %w", err)
	}
	return nil
}

// precreate registers the assets for names a batch uses that no asset holds or ever held and
// that no symlink binds (and that carry no symlink or lifecycle change, which need the
// in-transaction rules), in one statement of their own before the batch's transaction.
// Creating them inside the batch's long transaction would make concurrent batches that share new
// names wait on each other and fail on the unique index; an asset created here for a batch that
// then fails is the asset its retry will use.
func (s *Service) precreate(ctx context.Context, evs []Event) error {
	seen := map[nameKey]bool{}
	var create []catalog.CreateInput
	add := func(kind catalog.Kind, ns, name string) {
		k := nameKey{catalog.SpaceOf(kind), ns, name}
		if !seen[k] {
			seen[k] = true
			create = append(create, catalog.CreateInput{Kind: kind, Namespace: ns, Name: name})
		}
	}
	for _, ev := range evs {
		if ev.Job != nil {
			add(catalog.KindJob, ev.Job.Namespace, ev.Job.Name)
		}
		for _, d := range append(append([]Dataset{}, ev.Inputs...), ev.Outputs...) {
			if _, ok := d.Facets["symlinks"]; ok {
				continue
			}
			if _, ok := d.Facets["lifecycleStateChange"]; ok {
				continue
			}
			if _, ok := d.Facets["catalog"]; ok {
				continue // may name a synced Iceberg table
			}
			add(datasetKind(d.Facets), d.Namespace, d.Name)
		}
	}
	// CreateUnseen skips names a concurrent creator took meanwhile, so no asset is duplicated.
	return chunks(create, func(part []catalog.CreateInput) error {
		_, err := s.cat.CreateUnseen(ctx, part)
		return err
	})
}

// state returns an asset's lifecycle state, nil when it has none.
func (b *batch) state(ctx context.Context, id uuid.UUID) (*ent.LineageState, error) {
	if b.statesKnown[id] {
		return b.states[id], nil
	}
	st, err := b.tx.LineageState.Get(ctx, id)
	if ent.IsNotFound(err) {
		st, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lineage: lifecycle of %s: %w", id, err)
	}
	b.statesKnown[id], b.states[id] = true, st
	return st, nil
}

// facet returns an asset's stored facet, nil when there is none.
func (b *batch) facet(ctx context.Context, id uuid.UUID, name string) (*ent.AssetFacet, error) {
	if fs, ok := b.facets[id]; ok {
		return fs[name], nil
	}
	rows, err := b.tx.AssetFacet.Query().Where(assetfacet.AssetID(id)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: read facets: %w", err)
	}
	fs := map[string]*ent.AssetFacet{}
	for _, r := range rows {
		fs[r.Name] = r
	}
	b.facets[id] = fs
	return fs[name], nil
}

// created notes an asset made in this batch: it has no state and no facets yet.
func (b *batch) created(id uuid.UUID) {
	b.statesKnown[id] = true
	b.facets[id] = map[string]*ent.AssetFacet{}
	b.touched = append(b.touched, id)
}

// touchEdge records that the event saw from -> to at t; known tells whether the edge is
// committed already. Written at flush.
func (b *batch) touchEdge(from, to uuid.UUID, t time.Time, runID string, known bool) {
	k := [2]uuid.UUID{from, to}
	set := b.touches
	if !known {
		set = b.pending
	}
	e := set[k]
	if e == nil {
		set[k] = &edgeTouch{first: t, last: t, lastRun: runID}
		return
	}
	if t.Before(e.first) {
		e.first = t
	}
	if t.After(e.last) {
		e.last, e.lastRun = t, runID
	}
}

// createEdges looks up the pending edges: those that exist (another replica's, not synced yet)
// join the known ones; the rest are created in bulk, their IDs going to the graph after commit.
func (b *batch) createEdges(ctx context.Context) error {
	if len(b.pending) == 0 {
		return nil
	}
	keys := make([][2]uuid.UUID, 0, len(b.pending))
	for k := range b.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, comparePairs) // one insert order for every batch
	exists := map[[2]uuid.UUID]bool{}
	if err := chunks(keys, func(part [][2]uuid.UUID) error {
		froms, tos := make([]uuid.UUID, len(part)), make([]uuid.UUID, len(part))
		for i, k := range part {
			froms[i], tos[i] = k[0], k[1]
		}
		match := predicate.LineageEdge(func(s *sql.Selector) { // exact pairs, one index lookup each
			fs, ts := make([]string, len(part)), make([]string, len(part))
			for i := range part {
				fs[i], ts[i] = froms[i].String(), tos[i].String()
			}
			s.Where(sql.P(func(q *sql.Builder) {
				q.WriteString("(" + s.C(lineageedge.FieldFromID) + ", " + s.C(lineageedge.FieldToID) + ") IN (SELECT * FROM unnest(")
				q.Arg(pq.Array(fs))
				q.WriteString("::uuid[], ")
				q.Arg(pq.Array(ts))
				q.WriteString("::uuid[]))")
			}))
		})
		if b.s.sqlite { // in-process: no round trip to save, and no unnest
			match = lineageedge.And(lineageedge.FromIDIn(froms...), lineageedge.ToIDIn(tos...))
		}
		rows, err := b.tx.LineageEdge.Query().Where(match).Select(lineageedge.FieldFromID, lineageedge.FieldToID).All(ctx)
		for _, r := range rows {
			exists[[2]uuid.UUID{r.FromID, r.ToID}] = true
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read edges: %w", err)
	}
	var creates []*ent.LineageEdgeCreate
	var created [][2]uuid.UUID
	for _, k := range keys {
		e := b.pending[k]
		b.knownEdges[k] = true
		if exists[k] {
			if cur := b.touches[k]; cur != nil {
				b.touchEdge(k[0], k[1], e.first, cur.lastRun, true)
				b.touchEdge(k[0], k[1], e.last, e.lastRun, true)
			} else {
				b.touches[k] = e
			}
			continue
		}
		creates = append(creates, b.tx.LineageEdge.Create().SetFromID(k[0]).SetToID(k[1]).
			SetFirstSeen(e.first).SetLastSeen(e.last).SetLastRunID(e.lastRun))
		created = append(created, k)
	}
	b.pending = map[[2]uuid.UUID]*edgeTouch{}
	i := 0
	return chunks(creates, func(part []*ent.LineageEdgeCreate) error {
		rows, err := b.tx.LineageEdge.CreateBulk(part...).Save(ctx)
		if err != nil {
			return fmt.Errorf("lineage: create edges: %w", err)
		}
		for _, r := range rows {
			b.added = append(b.added, edgeRef{seq: int64(r.ID), from: created[i][0], to: created[i][1]})
			i++
		}
		return nil
	})
}

// flushEdges creates the pending edges and writes the widened seen intervals of known ones.
func (b *batch) flushEdges(ctx context.Context) error {
	if err := b.createEdges(ctx); err != nil {
		return err
	}
	if len(b.touches) == 0 {
		return nil
	}
	type edgeRow struct {
		k [2]uuid.UUID
		e *edgeTouch
	}
	rows := make([]edgeRow, 0, len(b.touches))
	for k, e := range b.touches {
		rows = append(rows, edgeRow{k, e})
	}
	// One lock order for every batch, so two batches widening the same edges cannot deadlock.
	slices.SortFunc(rows, func(a, b edgeRow) int { return comparePairs(a.k, b.k) })
	b.touches = map[[2]uuid.UUID]*edgeTouch{}
	if b.s.sqlite {
		// In-process: a statement costs no round trip.
		for _, r := range rows {
			if _, err := b.tx.ExecContext(ctx, `UPDATE lineage_edges SET
					first_seen = CASE WHEN first_seen > $1 THEN $1 ELSE first_seen END,
					last_run_id = CASE WHEN last_seen < $2 THEN $3 ELSE last_run_id END,
					last_seen = CASE WHEN last_seen < $2 THEN $2 ELSE last_seen END
				WHERE from_id = $4 AND to_id = $5 AND (first_seen > $1 OR last_seen < $2)`,
				r.e.first, r.e.last, r.e.lastRun, r.k[0], r.k[1]); err != nil {
				return fmt.Errorf("lineage: update edge: %w", err)
			}
		}
		return nil
	}
	return chunks(rows, func(part []edgeRow) error {
		var q strings.Builder
		q.WriteString(`UPDATE lineage_edges AS e SET
			first_seen = LEAST(e.first_seen, v.first),
			last_run_id = CASE WHEN e.last_seen < v.last THEN v.run ELSE e.last_run_id END,
			last_seen = GREATEST(e.last_seen, v.last)
			FROM (VALUES `)
		args := make([]any, 0, 5*len(part))
		for i, r := range part {
			if i > 0 {
				q.WriteString(",")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d::uuid, $%d::uuid, $%d::timestamptz, $%d::timestamptz, $%d::text)", n+1, n+2, n+3, n+4, n+5)
			args = append(args, r.k[0], r.k[1], r.e.first, r.e.last, r.e.lastRun)
		}
		q.WriteString(`) AS v(from_id, to_id, first, last, run)
			WHERE e.from_id = v.from_id AND e.to_id = v.to_id AND (e.first_seen > v.first OR e.last_seen < v.last)`)
		if _, err := b.tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("lineage: update edges: %w", err)
		}
		return nil
	})
}

// flushFacets writes the facet values the batch decided.
func (b *batch) flushFacets(ctx context.Context) error {
	keys := make([]facetKey, 0, len(b.facetWrites))
	for k := range b.facetWrites {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y facetKey) int {
		if c := bytes.Compare(x.asset[:], y.asset[:]); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
	var creates []*ent.AssetFacetCreate
	for _, k := range keys {
		r := b.facetWrites[k]
		if r.ID == 0 {
			creates = append(creates, b.tx.AssetFacet.Create().SetAssetID(r.AssetID).SetName(r.Name).SetValue(r.Value).
				SetEventTime(r.EventTime).SetUpdatedAt(r.UpdatedAt))
			continue
		}
		if err := b.tx.AssetFacet.UpdateOneID(r.ID).SetValue(r.Value).SetEventTime(r.EventTime).SetUpdatedAt(r.UpdatedAt).Exec(ctx); err != nil {
			return fmt.Errorf("lineage: store facet: %w", err)
		}
	}
	if err := chunks(creates, func(part []*ent.AssetFacetCreate) error {
		return b.tx.AssetFacet.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: store facets: %w", err)
	}
	return nil
}

// flush writes the deferred rows.
func (b *batch) flush(ctx context.Context) error {
	if err := b.flushFacets(ctx); err != nil {
		return err
	}
	if err := b.syncCuration(ctx); err != nil {
		return err
	}
	if err := b.flushEdges(ctx); err != nil {
		return err
	}
	var creates []*ent.RunCreate
	for _, r := range b.runs {
		switch {
		case r.isNew:
			creates = append(creates, b.tx.Run.Create().SetID(r.row.ID).SetJobAssetID(r.row.JobAssetID).SetState(r.row.State).
				SetStateTime(r.row.StateTime).SetNillableStartedAt(r.row.StartedAt).SetNillableEndedAt(r.row.EndedAt).
				SetNillableNominalStart(r.row.NominalStart).SetNillableNominalEnd(r.row.NominalEnd).SetParentRunID(r.row.ParentRunID).
				SetFacets(r.row.Facets).SetEventCount(r.row.EventCount).SetCreatedAt(r.row.CreatedAt).SetUpdatedAt(r.row.UpdatedAt))
		case r.dirty:
			if err := b.tx.Run.UpdateOneID(r.row.ID).SetState(r.row.State).SetStateTime(r.row.StateTime).
				SetNillableStartedAt(r.row.StartedAt).SetNillableEndedAt(r.row.EndedAt).SetParentRunID(r.row.ParentRunID).
				SetFacets(r.row.Facets).SetEventCount(r.row.EventCount).SetUpdatedAt(r.row.UpdatedAt).Exec(ctx); err != nil {
				return fmt.Errorf("lineage: update run: %w", err)
			}
		}
	}
	if err := chunks(creates, func(part []*ent.RunCreate) error {
		return b.tx.Run.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: create runs: %w", err)
	}
	type io struct {
		k [3]string
		t time.Time
	}
	ios := make([]io, 0, len(b.runIO))
	for k, t := range b.runIO {
		ios = append(ios, io{k, t})
	}
	if err := chunks(ios, func(part []io) error {
		var q strings.Builder
		q.WriteString("INSERT INTO run_ios (run_id, asset_id, role, first_seen) VALUES ")
		args := make([]any, 0, 4*len(part))
		for i, r := range part {
			if i > 0 {
				q.WriteString(",")
			}
			n := len(args)
			fmt.Fprintf(&q, "($%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4)
			args = append(args, r.k[0], r.k[1], r.k[2], r.t)
		}
		// ON CONFLICT: run I/O is not tailed, so an ID consumed by a conflicting row costs nothing.
		q.WriteString(" ON CONFLICT (run_id, asset_id, role) DO NOTHING")
		_, err := b.tx.ExecContext(ctx, q.String(), args...)
		return err
	}); err != nil {
		return fmt.Errorf("lineage: record run io: %w", err)
	}
	if err := chunks(b.events, func(part []*ent.LineageEventCreate) error {
		return b.tx.LineageEvent.CreateBulk(part...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: store events: %w", err)
	}
	if b.s.onComplete != nil && len(b.completed) > 0 {
		if err := b.s.onComplete(ent.NewTxContext(ctx, b.tx), b.completed); err != nil {
			return fmt.Errorf("lineage: record usage of completed runs: %w", err)
		}
	}
	return nil
}

func mergeFacets(cur map[string]json.RawMessage, add Facets, later bool) map[string]json.RawMessage {
	merged := make(map[string]json.RawMessage, len(cur)+len(add))
	for k, v := range cur {
		merged[k] = v
	}
	for k, v := range add {
		if _, had := merged[k]; !had || later {
			merged[k] = v
		}
	}
	return merged
}

// comparePairs orders pairs of IDs by their bytes: the order writes take, so batches never
// deadlock each other.
func comparePairs(a, b [2]uuid.UUID) int {
	return cmp.Or(bytes.Compare(a[0][:], b[0][:]), bytes.Compare(a[1][:], b[1][:]))
}
