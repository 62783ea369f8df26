package lineage

import (
	"bytes"
	"cmp"
	"context"
	stdsql "database/sql"
	"encoding/binary"
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
	// principal posted the batch's events (catalog.ActorFrom: "token:<name>" through the API,
	// "anonymous" with authentication off, "system" when no caller set one), stored on each
	// event so a commit or scan report by the same principal can be joined to its runs.
	principal string

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

func newBatch(ctx context.Context, s *Service, tx *ent.Tx) *batch {
	return &batch{s: s, tx: tx, now: s.now().UTC().Truncate(time.Microsecond), cache: map[nameKey]catalog.Ref{}, principal: catalog.ActorFrom(ctx),
		keys: map[string]uuid.UUID{}, states: map[uuid.UUID]*ent.LineageState{}, statesKnown: map[uuid.UUID]bool{},
		facets: map[uuid.UUID]map[string]*ent.AssetFacet{}, facetWrites: map[facetKey]*ent.AssetFacet{}, runs: map[string]*runState{}, runIO: map[[3]string]time.Time{},
		touches: map[[2]uuid.UUID]*edgeTouch{}, pending: map[[2]uuid.UUID]*edgeTouch{}, knownEdges: map[[2]uuid.UUID]bool{},
		schemas: map[uuid.UUID]*IngestResult{}, tags: map[uuid.UUID]*IngestResult{}}
}

// prefetch reads what the events will look up. Before it reads facets it locks the assets whose
// facets the events carry (lockFacets); exclusive is for a retry after a race.
func (b *batch) prefetch(ctx context.Context, evs []Event, keys []string, exclusive bool) error {
	if err := chunk.EachStatement(b.s.sqlite, keys, func(part []string) error {
		in := lineageevent.EventKeyIn(part...)
		if !b.s.sqlite {
			in = pgAny(lineageevent.FieldEventKey, "text", part)
		}
		rows, err := b.tx.LineageEvent.Query().Where(in).
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
	} else { // one statement: the names go as array parameters, which have no length limit
		err = chunk.EachStatement(false, asked, func(part []nameKey) error { return currentNamesPG(ctx, b.tx, part, found) })
	}
	if err != nil {
		return fmt.Errorf("lineage: read names: %w", err)
	}
	if err := b.lockFacets(ctx, locks, exclusive); err != nil {
		return err
	}
	if err := chunk.EachStatement(b.s.sqlite, ids, func(part []uuid.UUID) error {
		statesIn, facetsIn := lineagestate.IDIn(part...), assetfacet.AssetIDIn(part...)
		if !b.s.sqlite {
			texts := make([]string, len(part))
			for i, id := range part {
				texts[i] = id.String()
			}
			statesIn, facetsIn = pgAny(lineagestate.FieldID, "uuid", texts), pgAny(assetfacet.FieldAssetID, "uuid", texts)
		}
		states, err := b.tx.LineageState.Query().Where(statesIn).All(ctx)
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
		facets, err := b.tx.AssetFacet.Query().Where(facetsIn).All(ctx)
		for _, f := range facets {
			b.facets[f.AssetID][f.Name] = f
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read lifecycle and facets: %w", err)
	}
	if err := chunk.EachStatement(b.s.sqlite, runIDs, func(part []string) error {
		in := run.IDIn(part...)
		if !b.s.sqlite {
			in = pgAny(run.FieldID, "text", part)
		}
		rows, err := b.tx.Run.Query().Where(in).All(ctx)
		for _, r := range rows {
			b.runs[r.ID] = &runState{row: *r}
		}
		return err
	}); err != nil {
		return fmt.Errorf("lineage: read runs: %w", err)
	}
	return nil
}

// pgAny is "column = ANY($n::pgType[])" (PostgreSQL) over vals in their text form: one array
// parameter, where an IN list costs one parameter a value, each sent, parsed and bound on its
// own (about a millisecond for 500 of them, more than the index probes).
func pgAny(column, pgType string, vals []string) func(*sql.Selector) {
	return func(s *sql.Selector) {
		s.Where(sql.P(func(q *sql.Builder) {
			q.WriteString(s.C(column) + " = ANY(")
			q.Arg(pgarray.Text(vals))
			q.WriteString("::" + pgType + "[])")
		}))
	}
}

// currentNamesPG calls found for each of keys that an asset holds now. Each name is one probe of
// the current-name index: the LATERAL subquery (OFFSET 0 keeps the planner from flattening it)
// pins that plan. Left to the planner, a first ingest (the names table growing faster than
// autovacuum re-analyzes it) scanned the whole table for every batch: with statistics from when
// it was small, a scan of it looked cheaper than 500 probes.
func currentNamesPG(ctx context.Context, q querier, keys []nameKey, found func(nameKey, uuid.UUID)) error {
	spaces, namespaces, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		spaces[i], namespaces[i], names[i] = string(k.space), k.namespace, k.name
	}
	rows, err := q.QueryContext(ctx, `SELECT a.space, a.namespace, a.name, a.asset_id
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

// querier runs a query in a transaction (an *ent.Tx) or outside one (an *ent.Client).
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*stdsql.Rows, error)
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

// createEdges looks up the pending edges (SQLite; PostgreSQL inserts them in one statement,
// insertEdgesPG): those that exist (another replica's, not synced yet) join the known ones; the
// rest are created in bulk, their IDs going to the graph after commit.
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
	create := b.createEdges
	if !b.s.sqlite {
		create = b.insertEdgesPG
	}
	if err := create(ctx); err != nil {
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

// The PostgreSQL edge writes: edges as unnest arrays ($1 to $5, pgEdgeArgs; insertEdgesPG inserts the
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
	err := chunk.EachStatement(false, rows, func(part []*ent.AssetFacet) error { // one statement: arrays
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
	if err := chunk.EachStatement(false, slices.Compact(assets), func(part []uuid.UUID) error { // skipped is in key order
		texts := make([]string, len(part))
		for i, id := range part {
			texts[i] = id.String()
		}
		rows, err := b.tx.AssetFacet.Query().Where(pgAny(assetfacet.FieldAssetID, "uuid", texts)).All(ctx)
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
	// Edges last (new ones inserted, known ones widened): a job's output edge is widened by each
	// of its runs, and a concurrent batch with a run of the same job (or inserting the same new
	// edge) waits for this row lock until this transaction commits. Taken first, it was held
	// through the usage writes: with 4 clients, batches spent most of their flush waiting.
	return b.flushEdges(ctx)
}

// comparePairs orders pairs of IDs by their bytes: the order writes take, so batches never
// deadlock each other.
func comparePairs(a, b [2]uuid.UUID) int {
	return cmp.Or(bytes.Compare(a[0][:], b[0][:]), bytes.Compare(a[1][:], b[1][:]))
}
