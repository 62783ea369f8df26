// Lineage as of a time: the graph as it stood then, read from the database. The in-memory graph
// knows only now, and holding a graph per time would cost memory per time; a walk at a time is
// a few indexed reads a level instead.

package lineage

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/lineageedge"
)

// EarliestAt is the earliest time lineage may be asked at: earlier times are typos (a year 0001
// zero value, a two-digit year), not history.
var EarliestAt = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)

// CheckAt refuses a time lineage cannot be asked at: before EarliestAt, or after the server's
// clock (the future has no lineage yet, and an answer for it would change as events arrive).
func (s *Service) CheckAt(at time.Time) error {
	now := s.now()
	switch {
	case at.Before(EarliestAt):
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "at", Message: fmt.Sprintf(
			"at %s is before %s: ask for a time lineage can have been recorded at", at.UTC().Format(time.RFC3339Nano), EarliestAt.Format(time.RFC3339))}
	case at.After(now):
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "at", Message: fmt.Sprintf(
			"at %s is in the future (the server's clock says %s): ask for a time up to now, or leave at out for the graph now",
			at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// LineageAt is Lineage as the graph stood at at:
//   - an edge is there when an event that used it (a run's or a job's) is dated at or before at:
//     lineage_edges.first_seen is the earliest such event time (event time, not arrival), so an
//     event that arrives late still dates its edge to when it happened;
//   - each asset shows the name it held at at (FormerName when it holds it no longer); an asset
//     whose name history begins after at (created by an event that arrived late) shows its
//     first name;
//   - an asset deleted after at is there, with DeletedSince.
//
// It walks the database's edges a level at a time, within the same depth and node limits as
// Lineage (whole levels; Truncated when cut), so it works before the in-memory graph is loaded.
// Relations (dataset migrations) carry no time and are left out.
func (s *Service) LineageAt(ctx context.Context, id uuid.UUID, dir Direction, depth, limit int, at time.Time) (LineageResult, error) {
	return s.walkAt(ctx, id, dir, depth, limit, false, at)
}

// MarquezGraphAt is MarquezGraph as the graph stood at at (see LineageAt): nodeID resolves to
// the asset that held the name then, failing that as MarquezGraph resolves it; nodes carry the
// names of then. Fields and descriptions are the latest known: facets keep no history.
func (s *Service) MarquezGraphAt(ctx context.Context, nodeID string, depth, limit int, at time.Time) ([]GraphNode, LineageResult, error) {
	if err := s.CheckAt(at); err != nil {
		return nil, LineageResult{}, err
	}
	id, err := s.resolveNodeIDAt(ctx, nodeID, at.UTC())
	if err != nil {
		return nil, LineageResult{}, err
	}
	res, err := s.walkAt(ctx, id, Both, depth, limit, true, at)
	if err != nil {
		return nil, LineageResult{}, err
	}
	nodes, err := s.graphNodes(ctx, res)
	return nodes, res, err
}

func (s *Service) walkAt(ctx context.Context, id uuid.UUID, dir Direction, depth, limit int, jobIO bool, at time.Time) (LineageResult, error) {
	if err := checkWalk(depth, limit, s.maxNodes); err != nil {
		return LineageResult{}, err
	}
	if _, err := ParseDirection(string(dir)); err != nil {
		return LineageResult{}, err
	}
	if err := s.CheckAt(at); err != nil {
		return LineageResult{}, err
	}
	// Stored times are UTC to the microsecond; SQLite compares them as text.
	at = at.UTC().Truncate(time.Microsecond)
	read := s.now().UTC()
	w, err := s.traverseAt(ctx, id, dir, depth, limit, at)
	if err != nil {
		return LineageResult{}, err
	}
	if err := s.describeAt(ctx, w.t.Nodes, at); err != nil {
		return LineageResult{}, err
	}
	if jobIO {
		n := len(w.t.Nodes)
		if err := s.jobIOAt(ctx, w, limit, at); err != nil {
			return LineageResult{}, err
		}
		if err := s.describeAt(ctx, w.t.Nodes[n:], at); err != nil {
			return LineageResult{}, err
		}
	}
	if w.t.Nodes[0].Kind == "" {
		return LineageResult{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("asset %s does not exist", id)}
	}
	// Read from the database as it was at read: every edge committed by then is in it.
	f := s.graph.Freshness()
	res := result(id, w.t, Freshness{SyncedAt: read, Nodes: f.Nodes, Edges: f.Edges, Ready: true})
	res.At = &at
	return res, nil
}

// result is a traversal as an answer: a node whose asset does not exist (an edge to an asset
// that no longer exists) is left out with its edges.
func result(id uuid.UUID, t Traversal, fresh Freshness) LineageResult {
	res := LineageResult{Root: id, ReachedPerDepth: t.ReachedPerDepth, Truncated: t.Truncated,
		Freshness: fresh, Nodes: t.Nodes, Edges: t.Edges, Relations: []Relation{}}
	if !slices.ContainsFunc(t.Nodes, func(n Node) bool { return n.Kind == "" }) {
		return res
	}
	at := make([]int32, len(t.Nodes)) // index in res.Nodes, -1 when left out
	res.Nodes = t.Nodes[:0]
	for i, n := range t.Nodes {
		at[i] = -1
		if n.Kind != "" {
			at[i] = int32(len(res.Nodes))
			res.Nodes = append(res.Nodes, n)
		}
	}
	res.Edges = t.Edges[:0]
	for _, e := range t.Edges {
		if f, to := at[e[0]], at[e[1]]; f >= 0 && to >= 0 {
			res.Edges = append(res.Edges, [2]int32{f, to})
		}
	}
	return res
}

// walkState is a walk at a time: the traversal and each node's position in it.
type walkState struct {
	t   Traversal
	pos map[uuid.UUID]int32
}

// traverseAt is Graph.Traverse over the edges that existed at at, read level by level.
func (s *Service) traverseAt(ctx context.Context, start uuid.UUID, dir Direction, depth, limit int, at time.Time) (*walkState, error) {
	w := &walkState{t: Traversal{ReachedPerDepth: []int{1}}, pos: map[uuid.UUID]int32{start: 0}}
	order, depths := []uuid.UUID{start}, []int{0}
	type walk struct {
		down     bool
		frontier []uuid.UUID
	}
	var walks []*walk
	if dir == Downstream || dir == Both {
		walks = append(walks, &walk{down: true, frontier: []uuid.UUID{start}})
	}
	if dir == Upstream || dir == Both {
		walks = append(walks, &walk{frontier: []uuid.UUID{start}})
	}
	var edges [][2]uuid.UUID
	for d := 1; d <= depth; d++ {
		var level []uuid.UUID
		var levelEdges [][2]uuid.UUID
		for _, wk := range walks {
			if len(wk.frontier) == 0 {
				continue
			}
			found, err := s.edgesAt(ctx, wk.frontier, wk.down, at)
			if err != nil {
				return nil, err
			}
			var next []uuid.UUID
			for _, e := range found {
				levelEdges = append(levelEdges, e)
				v := e[0]
				if wk.down {
					v = e[1]
				}
				if _, seen := w.pos[v]; seen {
					continue
				}
				w.pos[v] = int32(len(order) + len(level))
				next = append(next, v)
				level = append(level, v)
			}
			wk.frontier = next
		}
		if len(level) == 0 {
			edges = append(edges, levelEdges...)
			break
		}
		w.t.ReachedPerDepth = append(w.t.ReachedPerDepth, len(level))
		if len(order)+len(level) > limit {
			w.t.Truncated = true
			for _, v := range level {
				delete(w.pos, v)
			}
			break
		}
		order = append(order, level...)
		for range level {
			depths = append(depths, d)
		}
		edges = append(edges, levelEdges...)
	}
	w.t.Nodes = make([]Node, len(order))
	for i, id := range order {
		w.t.Nodes[i] = Node{Summary: catalog.Summary{ID: id}, Depth: depths[i]}
	}
	seen := make(map[[2]int32]bool, len(edges)) // an edge may be met from both ends
	w.t.Edges = make([][2]int32, 0, len(edges))
	for _, e := range edges {
		p := [2]int32{w.pos[e[0]], w.pos[e[1]]}
		if !seen[p] {
			seen[p] = true
			w.t.Edges = append(w.t.Edges, p)
		}
	}
	return w, nil
}

// jobIOAt is Graph.withJobIO at a time: each job reached comes with all the inputs and outputs
// it had at at (all added or none, Truncated), and the edges become every edge among the nodes
// returned that existed at at.
func (s *Service) jobIOAt(ctx context.Context, w *walkState, limit int, at time.Time) error {
	var jobs []uuid.UUID
	for _, n := range w.t.Nodes {
		if n.Kind == catalog.KindJob {
			jobs = append(jobs, n.ID)
		}
	}
	ins, err := s.edgesAt(ctx, jobs, false, at)
	if err != nil {
		return err
	}
	outs, err := s.edgesAt(ctx, jobs, true, at)
	if err != nil {
		return err
	}
	adj := map[uuid.UUID][]uuid.UUID{} // a job's inputs, then its outputs
	for _, e := range ins {
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	for _, e := range outs {
		adj[e[0]] = append(adj[e[0]], e[1])
	}
	var extra []Node
	added := map[uuid.UUID]bool{}
	for _, n := range w.t.Nodes {
		for _, v := range adj[n.ID] {
			if _, ok := w.pos[v]; ok || added[v] {
				continue
			}
			added[v] = true
			extra = append(extra, Node{Summary: catalog.Summary{ID: v}, Depth: n.Depth + 1})
		}
	}
	if len(w.t.Nodes)+len(extra) > limit {
		w.t.Truncated, extra = true, nil
	}
	for _, n := range extra {
		for len(w.t.ReachedPerDepth) <= n.Depth {
			w.t.ReachedPerDepth = append(w.t.ReachedPerDepth, 0)
		}
		w.t.ReachedPerDepth[n.Depth]++
		w.pos[n.ID] = int32(len(w.t.Nodes))
		w.t.Nodes = append(w.t.Nodes, n)
	}
	ids := make([]uuid.UUID, len(w.t.Nodes))
	for i, n := range w.t.Nodes {
		ids[i] = n.ID
	}
	all, err := s.edgesAt(ctx, ids, true, at)
	if err != nil {
		return err
	}
	w.t.Edges = w.t.Edges[:0]
	for _, e := range all {
		if to, ok := w.pos[e[1]]; ok {
			w.t.Edges = append(w.t.Edges, [2]int32{w.pos[e[0]], to})
		}
	}
	return nil
}

// atChunk bounds the IDs of one read at a time: on SQLite they are parameters of their own
// (well below its limit); on PostgreSQL they are written into the statement (pgIDs).
func (s *Service) atChunk() int {
	if s.sqlite {
		return 500
	}
	return 10_000
}

// pgIDs writes ids as a uuid[] literal. A walk at a time is a statement per level and one per
// chunk of nodes described, each a round trip; lib/pq sends a statement without parameters in
// one (the simple protocol) and one with parameters in two (parse, then bind), which was about
// half the time of a walk. As in facetsPG, writing them in is safe: a uuid.UUID prints only hex
// digits and dashes, and times are written by pgTime (digits, '-', ':', '.', 'T', 'Z').
func pgIDs(q *strings.Builder, ids []uuid.UUID) {
	q.WriteString("'{")
	for i, id := range ids {
		if i > 0 {
			q.WriteByte(',')
		}
		q.WriteString(id.String())
	}
	q.WriteString("}'::uuid[]")
}

// edgesAt returns the edges from ids (down) or to ids that existed at at, as (from, to), in the
// order they were first stored (the order the in-memory graph holds them in). Sorted here, not
// by the database: an ORDER BY id could tempt a planner into walking the primary key over the
// whole table instead of probing the index on the IDs.
func (s *Service) edgesAt(ctx context.Context, ids []uuid.UUID, down bool, at time.Time) ([][2]uuid.UUID, error) {
	type edge struct {
		seq      int
		from, to uuid.UUID
	}
	var rows []edge
	for len(ids) > 0 {
		part := ids[:min(s.atChunk(), len(ids))]
		ids = ids[len(part):]
		if s.sqlite {
			in := lineageedge.ToIDIn(part...)
			if down {
				in = lineageedge.FromIDIn(part...)
			}
			found, err := s.db.LineageEdge.Query().Where(in, lineageedge.FirstSeenLTE(at)).
				Select(lineageedge.FieldID, lineageedge.FieldFromID, lineageedge.FieldToID).All(ctx)
			if err != nil {
				return nil, fmt.Errorf("lineage: read edges at %s: %w", at.Format(time.RFC3339), err)
			}
			for _, r := range found {
				rows = append(rows, edge{r.ID, r.FromID, r.ToID})
			}
			continue
		}
		var q strings.Builder
		q.Grow(100 + 37*len(part))
		q.WriteString("SELECT id, from_id, to_id FROM lineage_edges WHERE ")
		if down {
			q.WriteString("from_id")
		} else {
			q.WriteString("to_id")
		}
		q.WriteString(" = ANY(")
		pgIDs(&q, part)
		q.WriteString(") AND first_seen <= '" + pgTime(at) + "'::timestamptz")
		err := s.scanRows(ctx, q.String(), func(r scanner) error {
			var e edge
			if err := r.Scan(&e.seq, &e.from, &e.to); err != nil {
				return err
			}
			rows = append(rows, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("lineage: read edges at %s: %w", at.Format(time.RFC3339), err)
		}
	}
	slices.SortFunc(rows, func(a, b edge) int { return cmp.Compare(a.seq, b.seq) })
	out := make([][2]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i] = [2]uuid.UUID{r.from, r.to}
	}
	return out, nil
}

type scanner interface{ Scan(dest ...any) error }

// scanRows runs q and calls fn for each row.
func (s *Service) scanRows(ctx context.Context, q string, fn func(scanner) error) error {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// describeAt fills nodes' summaries as of at: kind and status from the asset, the name it held
// at at (nameAt), DeletedSince for an asset deleted after at. A node whose asset does not exist
// keeps only its ID. Every node is marked Documented: the Marquez graph then reads the facets of
// all (in one read), not only of those the in-memory graph knows to have them.
func (s *Service) describeAt(ctx context.Context, nodes []Node, at time.Time) error {
	for lo := 0; lo < len(nodes); lo += s.atChunk() {
		part := nodes[lo:min(lo+s.atChunk(), len(nodes))]
		ids := make([]uuid.UUID, len(part))
		for i, n := range part {
			ids[i] = n.ID
		}
		assets, names, err := s.assetsAt(ctx, ids)
		if err != nil {
			return err
		}
		for i := range part {
			a, ok := assets[part[i].ID]
			if !ok {
				continue
			}
			n := &part[i]
			n.Summary = catalog.Summary{ID: a.ID, Kind: catalog.Kind(a.Kind), Status: catalog.Status(a.Status),
				CreatedAt: a.CreatedAt.UTC(), UpdatedAt: a.UpdatedAt.UTC()}
			n.Documented = true
			if r := nameAt(names[a.ID], at); r != nil {
				n.Namespace, n.Name, n.FormerName = r.Namespace, r.Name, r.ValidTo != nil
			}
			if a.Status == asset.StatusDeleted && a.DeletedAt != nil && a.DeletedAt.After(at) {
				since := a.DeletedAt.UTC()
				n.DeletedSince = &since
			}
		}
	}
	return nil
}

// assetsAt reads the assets among ids, and every name each has had.
func (s *Service) assetsAt(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]ent.Asset, map[uuid.UUID][]*ent.AssetName, error) {
	assets := make(map[uuid.UUID]ent.Asset, len(ids))
	names := make(map[uuid.UUID][]*ent.AssetName, len(ids))
	if s.sqlite {
		rows, err := s.db.Asset.Query().Where(asset.IDIn(ids...)).Select(asset.FieldKind, asset.FieldStatus,
			asset.FieldCreatedAt, asset.FieldUpdatedAt, asset.FieldDeletedAt).All(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("lineage: read assets: %w", err)
		}
		for _, a := range rows {
			assets[a.ID] = *a
		}
		hist, err := s.db.AssetName.Query().Where(assetname.AssetIDIn(ids...)).Select(assetname.FieldAssetID,
			assetname.FieldNamespace, assetname.FieldName, assetname.FieldValidFrom, assetname.FieldValidTo).All(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("lineage: read name history: %w", err)
		}
		for _, r := range hist {
			names[r.AssetID] = append(names[r.AssetID], r)
		}
		return assets, names, nil
	}
	// One statement: each asset with each of its names (at least one row an asset).
	var q strings.Builder
	q.Grow(300 + 37*len(ids))
	q.WriteString(`SELECT a.id, a.kind, a.status, a.created_at, a.updated_at, a.deleted_at,
		n.id, n.namespace, n.name, n.valid_from, n.valid_to
		FROM assets AS a LEFT JOIN asset_names AS n ON n.asset_id = a.id WHERE a.id = ANY(`)
	pgIDs(&q, ids)
	q.WriteString(")")
	err := s.scanRows(ctx, q.String(), func(r scanner) error {
		var a ent.Asset
		var nID sql.NullInt64
		var ns, name sql.NullString
		var from sql.NullTime
		var to *time.Time
		if err := r.Scan(&a.ID, &a.Kind, &a.Status, &a.CreatedAt, &a.UpdatedAt, &a.DeletedAt, &nID, &ns, &name, &from, &to); err != nil {
			return err
		}
		assets[a.ID] = a
		if nID.Valid {
			names[a.ID] = append(names[a.ID], &ent.AssetName{ID: int(nID.Int64), AssetID: a.ID, Namespace: ns.String, Name: name.String,
				ValidFrom: from.Time, ValidTo: to})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lineage: read assets and their names: %w", err)
	}
	return assets, names, nil
}

// nameAt picks from an asset's name history the name it held at at. Failing that: the first
// name, when the history begins after at (an asset first seen in an event that arrived late,
// dated before the asset was created); else the last name it held (it was deleted by then, or
// between names).
func nameAt(rows []*ent.AssetName, at time.Time) *ent.AssetName {
	if len(rows) == 0 {
		return nil
	}
	slices.SortFunc(rows, func(a, b *ent.AssetName) int {
		return cmp.Or(a.ValidFrom.Compare(b.ValidFrom), cmp.Compare(a.ID, b.ID))
	})
	var held, last *ent.AssetName
	for _, r := range rows {
		switch {
		case r.ValidFrom.After(at):
		case r.ValidTo == nil || r.ValidTo.After(at):
			held = r // the latest that began by then, should a clock step back make two overlap
		case last == nil || !r.ValidTo.Before(*last.ValidTo):
			last = r
		}
	}
	switch {
	case held != nil:
		return held
	case last != nil:
		return last
	}
	return rows[0] // every name began after at
}

// resolveNodeIDAt finds the asset a Marquez node ID named at at; failing that, as
// ResolveNodeID finds it (the current holder, else the latest former one).
func (s *Service) resolveNodeIDAt(ctx context.Context, nodeID string, at time.Time) (uuid.UUID, error) {
	space, rest, err := parseNodeID(nodeID)
	if err != nil {
		return uuid.Nil, err
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] != ':' {
			continue
		}
		ns, name := rest[:i], rest[i+1:]
		if catalog.ValidateName(ns, name) != nil {
			continue
		}
		row, err := s.db.AssetName.Query().Where(assetname.SpaceEQ(assetname.Space(space)), assetname.Namespace(ns), assetname.Name(name),
			assetname.ValidFromLTE(at), assetname.Or(assetname.ValidToIsNil(), assetname.ValidToGT(at))).
			Order(ent.Desc(assetname.FieldValidFrom), ent.Desc(assetname.FieldID)).First(ctx)
		if err == nil {
			return row.AssetID, nil
		}
		if !ent.IsNotFound(err) {
			return uuid.Nil, fmt.Errorf("lineage: resolve %s at %s: %w", truncate(nodeID, 128), at.Format(time.RFC3339), err)
		}
	}
	return s.ResolveNodeID(ctx, nodeID)
}
