// The PostgreSQL flush: a batch's runs, run I/O and events in one statement, its new edges in
// another, last.

package lineage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/internal/pgarray"
)

// flushPG writes what the batch decided about runs, run I/O and events in one statement: each
// table's rows go in as arrays (unnest), so the statement is planned once whatever the batch's
// size, and the batch pays one round trip instead of one per table. New edges are flush's last
// step (insertEdgesPG): a concurrent batch inserting the same edge waits for this transaction to
// commit, and inserted here it waited through the usage writes as well.
func (b *batch) flushPG(ctx context.Context) error {
	runArgs, err := b.pgRunArgs()
	if err != nil {
		return err
	}
	args := append(append(append(runArgs, b.pgIOArgs()...), b.pgEventArgs()...), b.now)
	if _, err := b.tx.ExecContext(ctx, pgFlush, args...); err != nil {
		return fmt.Errorf("lineage: store events and runs: %w", err)
	}
	return nil
}

// insertEdgesPG inserts the batch's new edges unless a committed row exists (so edge IDs, the
// change sequence replicas tail, are spent on real new edges only); one a concurrent batch
// inserted meanwhile is skipped (ON CONFLICT on the pair's index only: the serial key cannot
// conflict) instead of failing the batch. Those not inserted join the known edges, whose seen
// intervals flushEdges widens next.
func (b *batch) insertEdgesPG(ctx context.Context) error {
	edges := b.newEdges()
	if len(edges) == 0 {
		return nil
	}
	inserted := make(map[[2]uuid.UUID]bool, len(edges))
	// One statement for all of them: the edges go as arrays, which have no length limit.
	err := func() error {
		rows, err := b.tx.QueryContext(ctx, `WITH ve AS (`+pgEdgeValues+`) `+pgEdgeInsert, pgEdgeArgs(edges)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r edgeRef
			if err := rows.Scan(&r.seq, &r.from, &r.to); err != nil {
				return err
			}
			inserted[[2]uuid.UUID{r.from, r.to}] = true
			b.added = append(b.added, r)
		}
		return rows.Err()
	}()
	if err != nil {
		return fmt.Errorf("lineage: create edges: %w", err)
	}
	for _, r := range edges {
		b.knownEdges[r.k] = true
		if !inserted[r.k] {
			if cur := b.touches[r.k]; cur != nil {
				cur.merge(r.e)
			} else {
				b.touches[r.k] = r.e
			}
		}
	}
	return nil
}

// pgEdgeInsert inserts the new edges of pgEdgeValues and answers those it inserted.
const pgEdgeInsert = `INSERT INTO lineage_edges (from_id, to_id, first_seen, last_seen, last_run_id)
	SELECT v.from_id, v.to_id, v.first, v.last, v.run FROM ve AS v
	WHERE NOT EXISTS (SELECT 1 FROM lineage_edges AS e WHERE e.from_id = v.from_id AND e.to_id = v.to_id)
	ORDER BY v.ord
	ON CONFLICT (from_id, to_id) DO NOTHING RETURNING id, from_id, to_id`

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

	// Times as typed arrays, "" (no time) as NULL: read as times, no cast per element.
	return []any{pgarray.Text(nID), pgarray.Text(nJob), pgarray.Text(nState), pgarray.Typed(nStateTime), pgarray.Typed(nStarted), pgarray.Typed(nEnded),
		pgarray.Typed(nNomStart), pgarray.Typed(nNomEnd), pgarray.Text(nParent), pgarray.Text(nFacets), pgarray.Text(nCount),
		pgarray.Text(uID), pgarray.Text(uState), pgarray.Typed(uStateTime), pgarray.Typed(uStarted), pgarray.Typed(uEnded), pgarray.Text(uParent),
		pgarray.Text(uFacets), pgarray.Text(uCount)}, nil
}

// pgIOArgs are the runs' inputs and outputs as arrays, in key order: those of runs new in this
// batch, then those of runs stored before.
func (b *batch) pgIOArgs() []any {
	ts := pgTime
	ioKeys := make([][3]string, 0, len(b.runIO))
	for k := range b.runIO {
		ioKeys = append(ioKeys, k)
	}
	slices.SortFunc(ioKeys, func(x, y [3]string) int {
		return cmp.Or(strings.Compare(x[0], y[0]), strings.Compare(x[1], y[1]), strings.Compare(x[2], y[2]))
	})
	var cols [2][4][]string // [new run, stored run][run, asset, role, first seen]
	for _, k := range ioKeys {
		c := &cols[1]
		if r := b.runs[k[0]]; r != nil && r.isNew {
			c = &cols[0]
		}
		c[0], c[1], c[2], c[3] = append(c[0], k[0]), append(c[1], k[1]), append(c[2], k[2]), append(c[3], ts(b.runIO[k]))
	}
	args := make([]any, 0, 8)
	for _, c := range cols {
		for _, col := range c {
			args = append(args, pgarray.Text(col))
		}
	}
	return args
}

// pgEventArgs are the batch's events as arrays, then its principal (one value).
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
		pgarray.Typed(evJob), pgarray.Text(evProducer), pgarray.Text(evPayload), b.principal}
}

// pgFlush stores a batch on PostgreSQL in one statement: the new runs ($1-$11), updated runs
// ($12-$19), run inputs and outputs of new runs ($20-$23) and of stored ones ($24-$27) and events
// ($28-$36, then the batch's principal, one value: an array element costs the server a parse),
// at $38.
const pgFlush = `WITH rn AS (
		INSERT INTO runs (id, job_asset_id, state, state_time, started_at, ended_at, nominal_start, nominal_end, parent_run_id,
			facets, event_count, created_at, updated_at)
		SELECT v.id, v.job, v.state, v.state_time, v.started, v.ended, v.nom_start, v.nom_end, v.parent, v.facets, v.n, $38, $38
		FROM unnest($1::text[], $2::uuid[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[], $8::timestamptz[], $9::text[],
			$10::jsonb[], $11::bigint[]) WITH ORDINALITY AS v(id, job, state, state_time, started, ended, nom_start, nom_end, parent, facets, n, ord)
		ORDER BY v.ord
	), ru AS (
		UPDATE runs AS r SET state = v.state, state_time = v.state_time,
			started_at = COALESCE(v.started, r.started_at), ended_at = COALESCE(v.ended, r.ended_at),
			parent_run_id = v.parent, facets = v.facets, event_count = v.n, updated_at = $38
		FROM unnest($12::text[], $13::text[], $14::timestamptz[], $15::timestamptz[], $16::timestamptz[], $17::text[], $18::jsonb[], $19::bigint[])
			AS v(id, state, state_time, started, ended, parent, facets, n)
		WHERE r.id = v.id
	), io AS (
		-- a new run's inputs and outputs: no row of them can exist (a concurrent batch storing the same
		-- new run fails this one on the run's key), so no conflict check is spent on them
		INSERT INTO run_ios (run_id, asset_id, role, first_seen)
		SELECT * FROM unnest($20::text[], $21::uuid[], $22::text[], $23::timestamptz[])
	), io2 AS (
		INSERT INTO run_ios (run_id, asset_id, role, first_seen)
		SELECT * FROM unnest($24::text[], $25::uuid[], $26::text[], $27::timestamptz[])
		-- run I/O is not tailed, so an ID consumed by a conflicting row costs nothing
		ON CONFLICT (run_id, asset_id, role) DO NOTHING
	), ev AS (
		INSERT INTO lineage_events (id, event_key, kind, event_type, event_time, run_id, job_asset_id, producer, payload, principal, received_at)
		SELECT v.id, v.ev_key, v.kind, v.ev_type, v.ev_time, v.run, v.job, v.producer, v.payload, $37::text, $38
		FROM unnest($28::uuid[], $29::text[], $30::text[], $31::text[], $32::timestamptz[], $33::text[], $34::uuid[], $35::text[], $36::text[])
			AS v(id, ev_key, kind, ev_type, ev_time, run, job, producer, payload)
	)
	SELECT 1`
