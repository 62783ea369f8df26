package lineage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
	"github.com/tidemark/tidemark/internal/chunk"
	"github.com/tidemark/tidemark/internal/pgarray"
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
	events      []eventRow

	added      []edgeRef
	touched    []uuid.UUID // assets whose name or status changed
	documented []uuid.UUID // assets given a schema or documentation facet
	completed  []CompletedRun
	// Datasets whose schema or tags facet changed, with the event that last changed it.
	schemas, tags map[uuid.UUID]*IngestResult
}

// eventRow is an event to store at flush.
type eventRow struct {
	id  uuid.UUID
	key string
	ev  *Event
	job uuid.UUID // uuid.Nil: none
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

// merge widens t by what o saw of the same edge: the earlier first sight, and the later last
// one with its run (on a tie t's run stays, as for touches in event order).
func (t *edgeTouch) merge(o *edgeTouch) {
	if o.first.Before(t.first) {
		t.first = o.first
	}
	if o.last.After(t.last) {
		t.last, t.lastRun = o.last, o.lastRun
	}
}

func newBatch(s *Service, tx *ent.Tx) *batch {
	return &batch{s: s, tx: tx, now: s.now().UTC().Truncate(time.Microsecond), cache: map[nameKey]catalog.Ref{},
		keys: map[string]uuid.UUID{}, states: map[uuid.UUID]*ent.LineageState{}, statesKnown: map[uuid.UUID]bool{},
		facets: map[uuid.UUID]map[string]*ent.AssetFacet{}, facetWrites: map[facetKey]*ent.AssetFacet{}, runs: map[string]*runState{}, runIO: map[[3]string]time.Time{},
		touches: map[[2]uuid.UUID]*edgeTouch{}, pending: map[[2]uuid.UUID]*edgeTouch{}, knownEdges: map[[2]uuid.UUID]bool{},
		schemas: map[uuid.UUID]*IngestResult{}, tags: map[uuid.UUID]*IngestResult{}}
}

// prefetch reads what the events will look up. Before it reads facets it locks the assets whose
// facets the events carry (lockFacets); exclusive is for a retry after a race.
func (b *batch) prefetch(ctx context.Context, evs []Event, keys []string, exclusive bool) error {
	if err := chunk.Each(keys, func(part []string) error {
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
	faceted := map[nameKey]bool{} // names an event gives facets
	var runIDs []string
	var asked []nameKey
	add := func(space catalog.Space, ns, name string, facets Facets) {
		k := nameKey{space, ns, name}
		if len(facets) > 0 {
			faceted[k] = true
		}
		if !wanted[k] {
			wanted[k] = true
			asked = append(asked, k)
		}
	}
	for _, ev := range evs {
		if ev.Job != nil {
			add(catalog.SpaceJob, ev.Job.Namespace, ev.Job.Name, ev.Job.Facets)
		}
		for _, d := range append(append([]Dataset{}, ev.Inputs...), ev.Outputs...) {
			add(catalog.SpaceDataset, d.Namespace, d.Name, d.Facets)
		}
		if ev.Dataset != nil {
			add(catalog.SpaceDataset, ev.Dataset.Namespace, ev.Dataset.Name, ev.Dataset.Facets)
		}
		if ev.RunID != "" {
			runIDs = append(runIDs, ev.RunID)
		}
	}
	var ids, locks []uuid.UUID
	found := func(k nameKey, asset uuid.UUID) {
		if wanted[k] {
			b.cache[k] = catalog.Ref{ID: asset}
			ids = append(ids, asset)
			if faceted[k] {
				locks = append(locks, asset)
			}
		}
	}
	var err error
	if b.s.sqlite { // by name alone (one index), then the wanted (space, namespace, name)s kept
		names := make([]string, len(asked))
		for i, k := range asked {
			names[i] = k.name
		}
		err = chunk.Each(slices.Compact(slices.Sorted(slices.Values(names))), func(part []string) error {
			rows, err := b.tx.AssetName.Query().Where(assetname.NameIn(part...), assetname.ValidToIsNil()).All(ctx)
			for _, r := range rows {
				found(nameKey{catalog.Space(r.Space), r.Namespace, r.Name}, r.AssetID)
			}
			return err
		})
	} else {
		err = chunk.Each(asked, func(part []nameKey) error { return b.currentNamesPG(ctx, part, found) })
	}
	if err != nil {
		return fmt.Errorf("lineage: read names: %w", err)
	}
	if err := b.lockFacets(ctx, locks, exclusive); err != nil {
		return err
	}
	if err := chunk.Each(ids, func(part []uuid.UUID) error {
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
	if err := chunk.Each(runIDs, func(part []string) error {
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

// currentNamesPG calls found for each of keys that an asset holds now. Each name is one probe of
// the current-name index: the LATERAL subquery (OFFSET 0 keeps the planner from flattening it)
// pins that plan. Left to the planner, a first ingest (the names table growing faster than
// autovacuum re-analyzes it) scanned the whole table for every batch: with statistics from when
// it was small, a scan of it looked cheaper than 500 probes.
func (b *batch) currentNamesPG(ctx context.Context, keys []nameKey, found func(nameKey, uuid.UUID)) error {
	spaces, namespaces, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		spaces[i], namespaces[i], names[i] = string(k.space), k.namespace, k.name
	}
	rows, err := b.tx.QueryContext(ctx, `SELECT a.space, a.namespace, a.name, a.asset_id
		FROM unnest($1::text[], $2::text[], $3::text[]) AS n(space, namespace, name)
		CROSS JOIN LATERAL (SELECT h.space, h.namespace, h.name, h.asset_id FROM asset_names AS h
			WHERE h.space = n.space AND h.namespace = n.namespace AND h.name = n.name AND h.valid_to IS NULL OFFSET 0) AS a`,
		pgarray.Text(spaces), pgarray.Text(namespaces), pgarray.Text(names))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k nameKey
		var space string
		var asset uuid.UUID
		if err := rows.Scan(&space, &k.namespace, &k.name, &asset); err != nil {
			return err
		}
		k.space = catalog.Space(space)
		found(k, asset)
	}
	return rows.Err()
}

// lockFacets takes a transaction-scoped advisory lock per asset (PostgreSQL; SQLite has one
// writer at a time), in key order so that batches never deadlock on them. A batch decides what
// to write from the facets it reads (columns, tags, labels), so a batch that finds a newer value
// stored meanwhile by a concurrent one is retried from its reads (updateFacet, insertFacetsPG).
// Under a steady flow of changing schemas such retries kept losing to newer batches until the
// client got a 503. So a first attempt takes shared locks (first attempts run side by side, as
// before) and a retry takes exclusive ones: it waits for the batches in flight on its assets and
// keeps new ones out until it commits, so it reads and writes their facets alone.
func (b *batch) lockFacets(ctx context.Context, ids []uuid.UUID, exclusive bool) error {
	if b.s.sqlite || len(ids) == 0 {
		return nil
	}
	keys := make([]int64, 0, len(ids))
	for _, id := range ids {
		keys = append(keys, facetLockKey(id))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	fn := "pg_advisory_xact_lock_shared"
	if exclusive {
		fn = "pg_advisory_xact_lock"
	}
	// The sorted subquery feeds the locks to the aggregate in key order.
	if _, err := b.tx.ExecContext(ctx, "SELECT count("+fn+"(k)) FROM (SELECT unnest($1::bigint[]) AS k ORDER BY 1) AS s", pq.Array(keys)); err != nil {
		return fmt.Errorf("lineage: lock facets: %w", err)
	}
	return nil
}

// facetLockKey is an asset's advisory lock key for its facets: its ID's halves XORed. The
// second half is random in both UUID versions the catalog holds (v7's first is mostly the
// creation time, shared by the assets of one bulk create); two assets sharing a key only wait on
// each other.
func facetLockKey(id uuid.UUID) int64 {
	return int64(binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:]))
}

// precreate registers the assets for names a batch uses that no asset holds or ever held and
// that no symlink binds (and that carry no symlink or lifecycle change, which need the
// in-transaction rules), in one statement of their own before the batch's transaction.
// Creating them inside the batch's long transaction would make concurrent batches that share new
// names wait on each other and fail on the unique index; an asset created here for a batch that
// then fails is the asset its retry will use. Names this service offered or resolved before are
// not offered again (seenNames): in a steady flow of events nearly all are.
func (s *Service) precreate(ctx context.Context, evs []Event) error {
	seen := map[nameKey]bool{}
	var create []catalog.CreateInput
	var offered []nameKey
	add := func(kind catalog.Kind, ns, name string) {
		k := nameKey{catalog.SpaceOf(kind), ns, name}
		if !seen[k] && !s.seen.has(k) {
			seen[k] = true
			offered = append(offered, k)
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
	if err := chunk.Each(create, func(part []catalog.CreateInput) error {
		_, err := s.cat.CreateUnseen(ctx, part)
		return err
	}); err != nil {
		return err
	}
	s.seen.add(offered...)
	return nil
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
	if err := chunk.Each(keys, func(part [][2]uuid.UUID) error {
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
				q.Arg(pgarray.Text(fs))
				q.WriteString("::uuid[], ")
				q.Arg(pgarray.Text(ts))
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
				cur.merge(e)
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
	return chunk.Each(creates, func(part []*ent.LineageEdgeCreate) error {
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
	rows := make([]touchedEdge, 0, len(b.touches))
	for k, e := range b.touches {
		rows = append(rows, touchedEdge{k, e})
	}
	// One lock order for every batch, so two batches widening the same edges cannot deadlock.
	slices.SortFunc(rows, func(a, b touchedEdge) int { return comparePairs(a.k, b.k) })
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
	if _, err := b.tx.ExecContext(ctx, `WITH ve AS (`+pgEdgeValues+`) `+pgEdgeWiden, pgEdgeArgs(rows)...); err != nil {
		return fmt.Errorf("lineage: update edges: %w", err)
	}
	return nil
}

// touchedEdge is an edge a batch writes and what the batch saw of it.
type touchedEdge struct {
	k [2]uuid.UUID
	e *edgeTouch
}

// The PostgreSQL edge writes: edges as unnest arrays ($1 to $5, pgEdgeArgs; flushPG inserts the
// new ones), and the widening of existing ones' seen intervals (flushEdges).
const (
	pgEdgeValues = `SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::timestamptz[], $5::text[]) WITH ORDINALITY
			AS v(from_id, to_id, first, last, run, ord)`
	pgEdgeWiden = `UPDATE lineage_edges AS e SET first_seen = LEAST(e.first_seen, v.first),
			last_run_id = CASE WHEN e.last_seen < v.last THEN v.run ELSE e.last_run_id END,
			last_seen = GREATEST(e.last_seen, v.last)
		FROM ve AS v WHERE e.from_id = v.from_id AND e.to_id = v.to_id AND (e.first_seen > v.first OR e.last_seen < v.last)`
)

// pgEdgeArgs are pgEdgeValues' five arrays for rows.
func pgEdgeArgs(rows []touchedEdge) []any {
	from, to, first, last, run := make([]string, len(rows)), make([]string, len(rows)), make([]string, len(rows)),
		make([]string, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		from[i], to[i], first[i], last[i], run[i] = r.k[0].String(), r.k[1].String(), pgTime(r.e.first), pgTime(r.e.last), r.e.lastRun
	}
	return []any{pgarray.Text(from), pgarray.Text(to), pgarray.Text(first), pgarray.Text(last), pgarray.Text(run)}
}

// pgTime is t as PostgreSQL reads a timestamptz from text.
func pgTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// errNewerFacet says a concurrent batch stored a newer value of a facet this batch read: the
// batch is retried from its reads (raced).
var errNewerFacet = errors.New("a newer value was stored meanwhile")

// raced reports whether a batch failed on a concurrent batch's writes and is worth retrying.
func raced(err error) bool { return catalog.IsRace(err) || errors.Is(err, errNewerFacet) }

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
	var creates []*ent.AssetFacet
	for _, k := range keys {
		r := b.facetWrites[k]
		if r.ID == 0 {
			creates = append(creates, r)
			continue
		}
		if err := b.updateFacet(ctx, r.ID, r); err != nil {
			return err
		}
	}
	if !b.s.sqlite {
		return b.insertFacetsPG(ctx, creates)
	}
	if err := chunk.Each(creates, func(part []*ent.AssetFacet) error {
		bulk := make([]*ent.AssetFacetCreate, len(part))
		for i, r := range part {
			bulk[i] = b.tx.AssetFacet.Create().SetAssetID(r.AssetID).SetName(r.Name).SetValue(r.Value).
				SetEventTime(r.EventTime).SetUpdatedAt(r.UpdatedAt)
		}
		return b.tx.AssetFacet.CreateBulk(bulk...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: store facets: %w", err)
	}
	return nil
}

// updateFacet stores r's value in the facet row id, only over a value no newer than r's: a
// concurrent batch may have stored a newer event's value since this batch read the facet, and
// this batch's decisions (its columns, its tags) followed what it read. The batch is then
// retried (errNewerFacet).
func (b *batch) updateFacet(ctx context.Context, id int, r *ent.AssetFacet) error {
	err := b.tx.AssetFacet.UpdateOneID(id).Where(assetfacet.EventTimeLTE(r.EventTime)).
		SetValue(r.Value).SetEventTime(r.EventTime).SetUpdatedAt(r.UpdatedAt).Exec(ctx)
	if ent.IsNotFound(err) {
		return fmt.Errorf("lineage: facet %s of asset %s: %w", r.Name, r.AssetID, errNewerFacet)
	}
	if err != nil {
		return fmt.Errorf("lineage: store facet: %w", err)
	}
	return nil
}

// insertFacetsPG inserts facets this batch found missing, in key order. A concurrent batch may
// have inserted one meanwhile (this insert waits for it to commit, then skips the row): that is
// no race when it stored the same value, as concurrent batches seeing a dataset's schema for the
// first time do (the columns and tags are recorded later in this transaction, against what is
// stored by then), and none when its value is older (this batch's replaces it); only a newer
// different value retries the batch.
func (b *batch) insertFacetsPG(ctx context.Context, rows []*ent.AssetFacet) error {
	var skipped []*ent.AssetFacet
	err := chunk.Each(rows, func(part []*ent.AssetFacet) error {
		assets, names, values, times, updated := make([]string, len(part)), make([]string, len(part)), make([]string, len(part)),
			make([]string, len(part)), make([]string, len(part))
		for i, r := range part {
			assets[i], names[i], values[i], times[i], updated[i] = r.AssetID.String(), r.Name, r.Value, pgTime(r.EventTime), pgTime(r.UpdatedAt)
		}
		res, err := b.tx.QueryContext(ctx, `INSERT INTO asset_facets (asset_id, name, value, event_time, updated_at)
			SELECT asset_id, name, value, event_time, updated_at
			FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[]) WITH ORDINALITY
				AS v(asset_id, name, value, event_time, updated_at, ord)
			ORDER BY ord
			ON CONFLICT (asset_id, name) DO NOTHING RETURNING asset_id, name`,
			pgarray.Text(assets), pgarray.Text(names), pgarray.Text(values), pgarray.Text(times), pgarray.Text(updated))
		if err != nil {
			return err
		}
		inserted := map[facetKey]bool{}
		for res.Next() {
			var k facetKey
			if err := res.Scan(&k.asset, &k.name); err != nil {
				res.Close()
				return err
			}
			inserted[k] = true
		}
		res.Close()
		if err := res.Err(); err != nil {
			return err
		}
		for _, r := range part {
			if !inserted[facetKey{r.AssetID, r.Name}] {
				skipped = append(skipped, r)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lineage: store facets: %w", err)
	}
	if len(skipped) == 0 {
		return nil
	}
	// What the concurrent batches stored, read in one statement per chunk of assets.
	stored := map[facetKey]*ent.AssetFacet{}
	assets := make([]uuid.UUID, len(skipped))
	for i, r := range skipped {
		assets[i] = r.AssetID
	}
	if err := chunk.Each(slices.Compact(assets), func(part []uuid.UUID) error { // skipped is in key order
		rows, err := b.tx.AssetFacet.Query().Where(assetfacet.AssetIDIn(part...)).All(ctx)
		for _, f := range rows {
			stored[facetKey{f.AssetID, f.Name}] = f
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read facets: %w", err)
	}
	for _, r := range skipped {
		cur := stored[facetKey{r.AssetID, r.Name}]
		if cur == nil { // inserted and removed again meanwhile: read the world again
			return fmt.Errorf("lineage: facet %s of asset %s: %w", r.Name, r.AssetID, errNewerFacet)
		}
		if cur.Value == r.Value {
			continue
		}
		if err := b.updateFacet(ctx, cur.ID, r); err != nil {
			return err
		}
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
	if !b.s.sqlite {
		if err := b.flushPG(ctx); err != nil {
			return err
		}
	} else if err := b.flushSQLite(ctx); err != nil {
		return err
	}
	if b.s.onComplete != nil && len(b.completed) > 0 {
		if err := b.s.onComplete(ent.NewTxContext(ctx, b.tx), b.completed); err != nil {
			return fmt.Errorf("lineage: record usage of completed runs: %w", err)
		}
	}
	// Edges last (on PostgreSQL the new ones went in with flushPG; this widens the known ones):
	// a job's output edge is widened by each of its runs, and a concurrent batch with a run of
	// the same job waits for this row lock until this transaction commits. Taken first, it was
	// held through the usage writes: with 4 clients, batches spent most of their flush waiting.
	return b.flushEdges(ctx)
}

// flushSQLite writes runs, run I/O and events a statement (or a bulk insert) each: in process, a
// statement costs no round trip. Edges are flush's last step (flushEdges).
func (b *batch) flushSQLite(ctx context.Context) error {
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
	if err := chunk.Each(creates, func(part []*ent.RunCreate) error {
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
	if err := chunk.Each(ios, func(part []io) error {
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
	if err := chunk.Each(b.events, func(part []eventRow) error {
		creates := make([]*ent.LineageEventCreate, len(part))
		for i, e := range part {
			ev := e.ev
			creates[i] = b.tx.LineageEvent.Create().SetID(e.id).SetEventKey(e.key).SetKind(lineageevent.Kind(ev.Kind)).SetEventType(ev.EventType).
				SetEventTime(ev.EventTime).SetRunID(ev.RunID).SetProducer(truncate(ev.Producer, 1024)).
				SetPayload(string(ev.Raw)).SetReceivedAt(b.now)
			if e.job != uuid.Nil {
				creates[i].SetJobAssetID(e.job)
			}
		}
		return b.tx.LineageEvent.CreateBulk(creates...).Exec(ctx)
	}); err != nil {
		return fmt.Errorf("lineage: store events: %w", err)
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

// flushPG writes what the batch decided about edges, runs, run I/O and events in one statement:
// each table's rows go in as arrays (unnest), so the statement is planned once whatever the
// batch's size, and the batch pays one round trip instead of one per table. New edges are
// inserted unless a committed row exists (so edge IDs, the change sequence replicas tail, are
// spent on real new edges only), and one a concurrent batch inserted meanwhile is skipped (ON
// CONFLICT on the pair's index only: the serial key cannot conflict) instead of failing the
// batch. Those join the known edges, whose seen intervals flush widens last (flushEdges).
func (b *batch) flushPG(ctx context.Context) error {
	edges := b.newEdges()
	runArgs, err := b.pgRunArgs()
	if err != nil {
		return err
	}
	args := append(append(append(append(pgEdgeArgs(edges), runArgs...), b.pgIOArgs()...), b.pgEventArgs()...), b.now)
	rows, err := b.tx.QueryContext(ctx, pgFlush, args...)
	if err != nil {
		return fmt.Errorf("lineage: store events, runs and edges: %w", err)
	}
	inserted := map[[2]uuid.UUID]bool{}
	for rows.Next() {
		var r edgeRef
		if err := rows.Scan(&r.seq, &r.from, &r.to); err != nil {
			rows.Close()
			return fmt.Errorf("lineage: store events, runs and edges: %w", err)
		}
		inserted[[2]uuid.UUID{r.from, r.to}] = true
		b.added = append(b.added, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lineage: store events, runs and edges: %w", err)
	}
	// New edges not inserted existed (another replica's) or were inserted by a concurrent batch
	// after this statement's snapshot: they are widened with the known ones (flushEdges).
	for _, r := range edges {
		if !inserted[r.k] {
			b.touches[r.k] = r.e
		}
	}
	return nil
}

// newEdges takes the batch's pending edges to insert, in one order for every batch (so two
// batches inserting the same edges cannot deadlock); those a concurrent Sync made known meanwhile
// are merged into their touches instead.
func (b *batch) newEdges() []touchedEdge {
	edges := make([]touchedEdge, 0, len(b.pending))
	for k, e := range b.pending {
		if cur := b.touches[k]; cur != nil { // known since (a concurrent Sync added it to the graph mid-batch): merge
			cur.merge(e)
			continue
		}
		edges = append(edges, touchedEdge{k, e})
	}
	slices.SortFunc(edges, func(x, y touchedEdge) int { return comparePairs(x.k, y.k) })
	b.pending = map[[2]uuid.UUID]*edgeTouch{}
	return edges
}

// pgTimeOrNull is pgTime, "" (NULL) for no time.
func pgTimeOrNull(t *time.Time) string {
	if t == nil {
		return ""
	}
	return pgTime(*t)
}

// pgRunArgs are the new runs' and the updated runs' columns as arrays, in key order (one lock
// order).
func (b *batch) pgRunArgs() ([]any, error) {
	ts, tsp := pgTime, pgTimeOrNull
	runIDs := make([]string, 0, len(b.runs))
	for id, r := range b.runs {
		if r.isNew || r.dirty {
			runIDs = append(runIDs, id)
		}
	}
	slices.Sort(runIDs) // one lock order
	var nID, nJob, nState, nStateTime, nStarted, nEnded, nNomStart, nNomEnd, nParent, nFacets, nCount []string
	var uID, uState, uStateTime, uStarted, uEnded, uParent, uFacets, uCount []string
	for _, id := range runIDs {
		r := b.runs[id].row
		facets, err := json.Marshal(r.Facets)
		if err != nil {
			return nil, fmt.Errorf("lineage: run facets: %w", err)
		}
		count := strconv.Itoa(r.EventCount)
		if b.runs[id].isNew {
			nID, nJob, nState, nStateTime = append(nID, id), append(nJob, r.JobAssetID.String()), append(nState, string(r.State)), append(nStateTime, ts(r.StateTime))
			nStarted, nEnded, nNomStart, nNomEnd = append(nStarted, tsp(r.StartedAt)), append(nEnded, tsp(r.EndedAt)), append(nNomStart, tsp(r.NominalStart)), append(nNomEnd, tsp(r.NominalEnd))
			nParent, nFacets, nCount = append(nParent, r.ParentRunID), append(nFacets, string(facets)), append(nCount, count)
			continue
		}
		uID, uState, uStateTime, uStarted, uEnded = append(uID, id), append(uState, string(r.State)), append(uStateTime, ts(r.StateTime)), append(uStarted, tsp(r.StartedAt)), append(uEnded, tsp(r.EndedAt))
		uParent, uFacets, uCount = append(uParent, r.ParentRunID), append(uFacets, string(facets)), append(uCount, count)
	}

	return []any{pgarray.Text(nID), pgarray.Text(nJob), pgarray.Text(nState), pgarray.Text(nStateTime), pgarray.Text(nStarted), pgarray.Text(nEnded),
		pgarray.Text(nNomStart), pgarray.Text(nNomEnd), pgarray.Text(nParent), pgarray.Text(nFacets), pgarray.Text(nCount),
		pgarray.Text(uID), pgarray.Text(uState), pgarray.Text(uStateTime), pgarray.Text(uStarted), pgarray.Text(uEnded), pgarray.Text(uParent),
		pgarray.Text(uFacets), pgarray.Text(uCount)}, nil
}

// pgIOArgs are the runs' inputs and outputs as arrays, in key order.
func (b *batch) pgIOArgs() []any {
	ts := pgTime
	ioKeys := make([][3]string, 0, len(b.runIO))
	for k := range b.runIO {
		ioKeys = append(ioKeys, k)
	}
	slices.SortFunc(ioKeys, func(x, y [3]string) int {
		return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1]), strings.Compare(x[2], y[2]))
	})
	var ioRun, ioAsset, ioRole, ioFirst []string
	for _, k := range ioKeys {
		ioRun, ioAsset, ioRole, ioFirst = append(ioRun, k[0]), append(ioAsset, k[1]), append(ioRole, k[2]), append(ioFirst, ts(b.runIO[k]))
	}

	return []any{pgarray.Text(ioRun), pgarray.Text(ioAsset), pgarray.Text(ioRole), pgarray.Text(ioFirst)}
}

// pgEventArgs are the batch's events as arrays.
func (b *batch) pgEventArgs() []any {
	ts := pgTime
	var evID, evKey, evKind, evType, evTime, evRun, evJob, evProducer, evPayload []string
	for _, e := range b.events {
		job := ""
		if e.job != uuid.Nil {
			job = e.job.String()
		}
		evID, evKey, evKind, evType, evTime = append(evID, e.id.String()), append(evKey, e.key), append(evKind, string(e.ev.Kind)), append(evType, e.ev.EventType), append(evTime, ts(e.ev.EventTime))
		evRun, evJob, evProducer, evPayload = append(evRun, e.ev.RunID), append(evJob, job), append(evProducer, truncate(e.ev.Producer, 1024)), append(evPayload, string(e.ev.Raw))
	}
	return []any{pgarray.Text(evID), pgarray.Text(evKey), pgarray.Text(evKind), pgarray.Text(evType), pgarray.Text(evTime), pgarray.Text(evRun),
		pgarray.Text(evJob), pgarray.Text(evProducer), pgarray.Text(evPayload)}
}

// pgFlush stores a batch on PostgreSQL in one statement: the new edges ($1-$5), new runs
// ($6-$16), updated runs ($17-$24), run inputs and outputs ($25-$28) and events ($29-$37), at
// $38; it answers the edges it inserted.
const pgFlush = `WITH ve AS (` + pgEdgeValues + `
	), ei AS (
		INSERT INTO lineage_edges (from_id, to_id, first_seen, last_seen, last_run_id)
		SELECT v.from_id, v.to_id, v.first, v.last, v.run FROM ve AS v
		WHERE NOT EXISTS (SELECT 1 FROM lineage_edges AS e WHERE e.from_id = v.from_id AND e.to_id = v.to_id)
		ORDER BY v.ord
		ON CONFLICT (from_id, to_id) DO NOTHING RETURNING id, from_id, to_id
	), rn AS (
		INSERT INTO runs (id, job_asset_id, state, state_time, started_at, ended_at, nominal_start, nominal_end, parent_run_id,
			facets, event_count, created_at, updated_at)
		SELECT v.id, v.job, v.state, v.state_time::timestamptz, NULLIF(v.started, '')::timestamptz, NULLIF(v.ended, '')::timestamptz,
			NULLIF(v.nom_start, '')::timestamptz, NULLIF(v.nom_end, '')::timestamptz, v.parent, v.facets, v.n, $38, $38
		FROM unnest($6::text[], $7::uuid[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
			$15::jsonb[], $16::bigint[]) WITH ORDINALITY AS v(id, job, state, state_time, started, ended, nom_start, nom_end, parent, facets, n, ord)
		ORDER BY v.ord
	), ru AS (
		UPDATE runs AS r SET state = v.state, state_time = v.state_time::timestamptz,
			started_at = COALESCE(NULLIF(v.started, '')::timestamptz, r.started_at), ended_at = COALESCE(NULLIF(v.ended, '')::timestamptz, r.ended_at),
			parent_run_id = v.parent, facets = v.facets, event_count = v.n, updated_at = $38
		FROM unnest($17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::jsonb[], $24::bigint[])
			AS v(id, state, state_time, started, ended, parent, facets, n)
		WHERE r.id = v.id
	), io AS (
		INSERT INTO run_ios (run_id, asset_id, role, first_seen)
		SELECT * FROM unnest($25::text[], $26::uuid[], $27::text[], $28::timestamptz[])
		-- run I/O is not tailed, so an ID consumed by a conflicting row costs nothing
		ON CONFLICT (run_id, asset_id, role) DO NOTHING
	), ev AS (
		INSERT INTO lineage_events (id, event_key, kind, event_type, event_time, run_id, job_asset_id, producer, payload, received_at)
		SELECT v.id, v.ev_key, v.kind, v.ev_type, v.ev_time, v.run, NULLIF(v.job, '')::uuid, v.producer, v.payload, $38
		FROM unnest($29::uuid[], $30::text[], $31::text[], $32::text[], $33::timestamptz[], $34::text[], $35::text[], $36::text[], $37::text[])
			AS v(id, ev_key, kind, ev_type, ev_time, run, job, producer, payload)
	)
	SELECT id, from_id, to_id FROM ei`
