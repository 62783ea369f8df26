package versions

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/internal/sqltime"

	entsql "entgo.io/ent/dialect/sql"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/datasetversion"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/ent/runversion"
	"github.com/tidemark/tidemark/internal/chunk"
	"github.com/tidemark/tidemark/internal/pgarray"
)

// WithMaxNodes bounds the versions one walk (lineage, impact) collects; past it the answer is
// cut and says so. The default is DefaultMaxNodes.
func WithMaxNodes(n int) Option { return func(s *Service) { s.maxNodes = n } }

func (s *Service) nodeCap() int {
	if s.maxNodes > 0 {
		return s.maxNodes
	}
	return DefaultMaxNodes
}

// Key is a version of an asset: (asset ID, version).
type Key struct {
	AssetID uuid.UUID
	Version string
}

// Direction of a walk between versions.
type Direction string

// Directions.
const (
	Upstream   Direction = "upstream"   // the input versions that built a version, and theirs
	Downstream Direction = "downstream" // every version built from a version, transitively
)

// ParseDirection checks a direction ("" means downstream).
func ParseDirection(s string) (Direction, error) {
	switch Direction(s) {
	case "":
		return Downstream, nil
	case Upstream, Downstream:
		return Direction(s), nil
	}
	return "", invalid("direction", "direction %q is not upstream or downstream", clip(s, 40))
}

// Name is a name an asset held.
type Name struct{ Namespace, Name string }

// Node is one version in a walk.
type Node struct {
	Key
	Kind, Status string
	Name         Name  // the asset's current name (its last, if deleted)
	NameThen     *Name // the name it held at the version's time, when that differs
	CommittedAt  *time.Time
	Expired      *Expiry
	Depth        int // runs between it and the root
}

// EdgeEnd is one end of an edge between versions: the run's edge to that version.
type EdgeEnd struct {
	Label, Basis string
	Flagged      bool
}

// Edge says a run read From and produced To.
type Edge struct {
	From, To Key
	RunID    string
	Job      Job
	Input    EdgeEnd // the run's input edge (to From)
	Output   EdgeEnd // the run's output edge (to To)
	Flagged  bool    // either end is flagged
}

// UnknownEdge is a run's edge that names no version (or names none yet): the walk could not
// follow it, so what lies behind it is not in the answer.
type UnknownEdge struct {
	RunID   string
	Job     Job
	AssetID uuid.UUID
	Role    string // input or output
	Reason  string
}

// UnknownEdges counts the edges a walk met and could not follow, with the first few of them.
type UnknownEdges struct {
	Count   int
	AtLeast bool          // a count stopped at its bound: there are more
	Edges   []UnknownEdge // at most maxUnknownListed
}

const (
	maxUnknownListed = 50
	// maxUnknownScan bounds the rows read per query when looking for unknown edges.
	maxUnknownScan = 1000
)

// Graph is a version's provenance (upstream) or descendants (downstream).
type Graph struct {
	Root      Key
	Direction Direction
	Depth     int
	Nodes     []Node // the root first, then by depth
	Edges     []Edge
	// Truncated: the walk stopped at its bound (Explanation says where); Nodes and Edges are
	// what it reached before.
	Truncated   bool
	Explanation string
	// MoreBeyondDepth: versions at the last depth asked have edges onward.
	MoreBeyondDepth bool
	Unknown         UnknownEdges
}

// Lineage walks from a version of an asset, upstream or downstream, to depth runs.
func (s *Service) Lineage(ctx context.Context, assetID uuid.UUID, version string, dir Direction, depth int) (Graph, error) {
	if err := checkDepth(depth); err != nil {
		return Graph{}, err
	}
	if dir != Upstream && dir != Downstream {
		return Graph{}, invalid("direction", "direction %q is not upstream or downstream", dir)
	}
	root := Key{assetID, version}
	if err := s.mustExist(ctx, root); err != nil {
		return Graph{}, err
	}
	w, err := s.walk(ctx, root, dir, depth)
	if err != nil {
		return Graph{}, err
	}
	g := Graph{Root: root, Direction: dir, Depth: depth, Edges: []Edge{}, Truncated: w.truncated, Explanation: w.explanation,
		MoreBeyondDepth: w.moreBeyond, Unknown: w.unknown}
	if g.Nodes, err = s.nodes(ctx, w); err != nil {
		return Graph{}, err
	}
	jobs, err := s.jobsOf(ctx, w.runIDs())
	if err != nil {
		return Graph{}, err
	}
	for _, e := range w.edges {
		e.Job = jobs[e.RunID]
		g.Edges = append(g.Edges, e)
	}
	if err := s.nameUnknown(ctx, &g.Unknown); err != nil {
		return Graph{}, err
	}
	return g, nil
}

func checkDepth(depth int) error {
	if depth < 1 || depth > MaxDepth {
		return invalid("depth", "depth must be from 1 to %d, not %d", MaxDepth, depth)
	}
	return nil
}

// mustExist answers not found unless the asset exists and has the version: recorded, or named
// by some run's edge.
func (s *Service) mustExist(ctx context.Context, k Key) error {
	a, err := s.cat.Get(ctx, k.AssetID)
	if err != nil {
		return err
	}
	c := s.client(ctx)
	ok, err := c.DatasetVersion.Query().Where(datasetversion.AssetID(k.AssetID), datasetversion.Version(k.Version)).Exist(ctx)
	if err == nil && !ok && k.Version != "" {
		ok, err = c.RunVersion.Query().Where(runversion.AssetID(k.AssetID), runversion.Version(k.Version)).Exist(ctx)
	}
	if err != nil {
		return fmt.Errorf("versions: look up %s of %s: %w", k.Version, k.AssetID, err)
	}
	if !ok {
		return noVersion(a, k.Version)
	}
	return nil
}

// walked is what a walk reached.
type walked struct {
	root        Key
	dir         Direction
	depth       int
	dist        map[Key]int
	order       []Key
	seenAt      map[Key]time.Time // an edge's time, for versions nothing dated
	rows        map[Key]*ent.DatasetVersion
	edges       []Edge
	unknown     UnknownEdges
	unknownSeen map[[3]string]bool // run, asset, role: counted once
	truncated   bool
	explanation string
	moreBeyond  bool
	// unfollowed are versions reached but not followed further (the depth or a bound stopped
	// the walk); cut are versions derived from the root that a bound left out.
	unfollowed, cut []Key
	// edgeKeys dedupes edges: the same run can name the same pair once.
	edgeKeys map[[2]Key]map[string]bool
}

func (w *walked) runIDs() []string {
	var ids []string
	for _, e := range w.edges {
		ids = append(ids, e.RunID)
	}
	for _, u := range w.unknown.Edges {
		ids = append(ids, u.RunID)
	}
	return ids
}

func (w *walked) addUnknown(runID string, assetID uuid.UUID, role, reason string) {
	k := [3]string{runID, assetID.String(), role}
	if w.unknownSeen[k] {
		return
	}
	w.unknownSeen[k] = true
	w.unknown.Count++
	if len(w.unknown.Edges) < maxUnknownListed {
		w.unknown.Edges = append(w.unknown.Edges, UnknownEdge{RunID: runID, AssetID: assetID, Role: role, Reason: reason})
	}
}

// walk collects the versions reachable from root in one direction, level by level: each level
// is a few batched queries over the (asset_id, version, role) and (run_id, ...) indexes, never
// a load of all edges.
func (s *Service) walk(ctx context.Context, root Key, dir Direction, depth int) (*walked, error) {
	w := &walked{root: root, dir: dir, depth: depth, dist: map[Key]int{root: 0}, order: []Key{root}, seenAt: map[Key]time.Time{},
		rows: map[Key]*ent.DatasetVersion{}, unknownSeen: map[[3]string]bool{}, edgeKeys: map[[2]Key]map[string]bool{},
		unknown: UnknownEdges{Edges: []UnknownEdge{}}}
	if err := s.loadRows(ctx, w, []Key{root}); err != nil {
		return nil, err
	}
	capN := s.nodeCap()
	// Edges read in all are bounded too: many runs can read one version and write nothing new.
	budget := 4 * capN
	near, far := runversion.RoleInput, runversion.RoleOutput // downstream: runs that read, then what they wrote
	farRole := runio.RoleOutput
	if dir == Upstream {
		near, far = runversion.RoleOutput, runversion.RoleInput
		farRole = runio.RoleInput
	}
	frontier := []Key{root}
	for level := 1; level <= depth && len(frontier) > 0; level++ {
		if err := s.unknownNear(ctx, w, frontier, near); err != nil {
			return nil, err
		}
		nearEdges, err := s.edgesAt(ctx, frontier, near, budget+1)
		if err != nil {
			return nil, err
		}
		if len(nearEdges) > budget {
			w.truncated = true
			w.explanation = fmt.Sprintf("stopped after reading %d run edges at depth %d (the bound): versions reached through the rest are not shown", 4*capN, level)
			w.unfollowed = frontier
			break
		}
		budget -= len(nearEdges)
		byRun := map[string][]*ent.RunVersion{}
		for _, e := range nearEdges {
			byRun[e.RunID] = append(byRun[e.RunID], e)
		}
		runs := make([]string, 0, len(byRun))
		for r := range byRun {
			runs = append(runs, r)
		}
		slices.Sort(runs)
		farEdges, err := s.edgesOfRuns(ctx, runs, far)
		if err != nil {
			return nil, err
		}
		resolved := map[[2]string]bool{}
		farByRun := map[string][]*ent.RunVersion{}
		for _, e := range farEdges {
			farByRun[e.RunID] = append(farByRun[e.RunID], e)
			resolved[[2]string{e.RunID, e.AssetID.String()}] = true
		}
		// A run's input or output with no edge row yet: the resolver has not reached it.
		ios, err := s.iosOfRuns(ctx, runs, farRole)
		if err != nil {
			return nil, err
		}
		for _, io := range ios {
			if !resolved[[2]string{io.RunID, io.AssetID.String()}] {
				w.addUnknown(io.RunID, io.AssetID, string(farRole), "the run's "+string(farRole)+" has no version yet (not resolved)")
			}
		}
		var next []Key
		cut := map[Key]bool{}
		for _, r := range runs {
			for _, fe := range farByRun[r] {
				if fe.Version == "" {
					w.addUnknown(r, fe.AssetID, string(far), "the run's "+string(far)+" version is unknown: "+unknownBasis(fe))
					continue
				}
				fk := Key{fe.AssetID, fe.Version}
				if _, seen := w.dist[fk]; !seen {
					if len(w.dist) >= capN {
						cut[fk] = true
						continue
					}
					w.dist[fk] = level
					w.order = append(w.order, fk)
					w.seenAt[fk] = fe.At
					next = append(next, fk)
				}
				for _, ne := range byRun[r] {
					nk := Key{ne.AssetID, ne.Version}
					from, to, in, out := nk, fk, ne, fe
					if dir == Upstream {
						from, to, in, out = fk, nk, fe, ne
					}
					w.addEdge(from, to, r, in, out)
				}
			}
		}
		if err := s.loadRows(ctx, w, next); err != nil {
			return nil, err
		}
		if len(cut) > 0 {
			w.truncated = true
			w.explanation = fmt.Sprintf("stopped at %d versions (the bound): %d more reached at depth %d are not shown, nor anything beyond them", capN, len(cut), level)
			w.unfollowed = next
			for k := range cut {
				w.cut = append(w.cut, k)
			}
			slices.SortFunc(w.cut, compareKeys)
			break
		}
		frontier = next
		if level == depth && len(frontier) > 0 {
			more, err := s.edgesAt(ctx, frontier, near, 1)
			if err != nil {
				return nil, err
			}
			w.moreBeyond = len(more) > 0
			if w.moreBeyond {
				w.unfollowed = frontier
			}
		}
	}
	return w, nil
}

func unknownBasis(e *ent.RunVersion) string {
	if e.Basis != "" {
		return e.Basis
	}
	return "no source named it"
}

func (w *walked) addEdge(from, to Key, runID string, in, out *ent.RunVersion) {
	pair := [2]Key{from, to}
	if w.edgeKeys[pair] == nil {
		w.edgeKeys[pair] = map[string]bool{}
	}
	if w.edgeKeys[pair][runID] {
		return
	}
	w.edgeKeys[pair][runID] = true
	w.edges = append(w.edges, Edge{From: from, To: to, RunID: runID,
		Input:   EdgeEnd{Label: string(in.Kind), Basis: in.Basis, Flagged: in.Flagged},
		Output:  EdgeEnd{Label: string(out.Kind), Basis: out.Basis, Flagged: out.Flagged},
		Flagged: in.Flagged || out.Flagged})
}

// unknownNear counts the runs that touched a frontier version's asset, in the role the walk
// follows, without a known version while that version was current: they may have read
// (downstream) or produced (upstream) it, and the walk cannot tell.
func (s *Service) unknownNear(ctx context.Context, w *walked, frontier []Key, role runversion.Role) error {
	type window struct {
		lo, hi *time.Time
		open   bool // a version nothing dated: no bound at all
	}
	byAsset := map[uuid.UUID]*window{}
	var order []uuid.UUID
	for _, k := range frontier {
		win := byAsset[k.AssetID]
		if win == nil {
			win = &window{}
			byAsset[k.AssetID] = win
			order = append(order, k.AssetID)
		}
		r := w.rows[k]
		if r == nil || r.CommittedAt == nil {
			win.open = true
			continue
		}
		if win.lo == nil || r.CommittedAt.Before(*win.lo) {
			win.lo = utc(r.CommittedAt)
		}
		if win.hi == nil || r.CommittedAt.After(*win.hi) {
			win.hi = utc(r.CommittedAt)
		}
	}
	// Each window ends when a version newer than its newest was committed: one statement for
	// all of them, one index probe each.
	var dated []uuid.UUID
	for _, a := range order {
		if !byAsset[a].open {
			dated = append(dated, a)
		}
	}
	ends, err := s.windowEnds(ctx, dated, func(a uuid.UUID) time.Time { return *byAsset[a].hi })
	if err != nil {
		return err
	}
	what := "read"
	if role == runversion.RoleOutput {
		what = "wrote"
	}
	rows, err := s.unknownEdges(ctx, order, role, func(a uuid.UUID) (lo, hi *time.Time) {
		win := byAsset[a]
		if win.open {
			return nil, nil
		}
		// From the oldest frontier version's commit until a newer version than the newest was
		// committed.
		if end, ok := ends[a]; ok {
			hi = &end
		}
		return win.lo, hi
	})
	if err != nil {
		return err
	}
	if len(rows) > maxUnknownScan {
		w.unknown.AtLeast = true
		rows = rows[:maxUnknownScan]
	}
	for _, r := range rows {
		w.addUnknown(r.RunID, r.AssetID, string(role), fmt.Sprintf("the run %s the asset while a version in this answer was current, and which version is unknown: %s", what, unknownBasis(r)))
	}
	return nil
}

// windowEnds answers, for each asset, the first commit after its time (none: absent). On
// PostgreSQL one statement over arrays, an index probe an asset; a long OR of pairs cost more to
// plan than to run.
func (s *Service) windowEnds(ctx context.Context, assets []uuid.UUID, after func(uuid.UUID) time.Time) (map[uuid.UUID]time.Time, error) {
	ends := map[uuid.UUID]time.Time{}
	scan := func(rows *sql.Rows) error {
		defer rows.Close()
		for rows.Next() {
			var a uuid.UUID
			var end sqltime.Time
			if err := rows.Scan(&a, &end); err != nil {
				return fmt.Errorf("versions: versions after the frontier: %w", err)
			}
			if !end.T.IsZero() {
				ends[a] = end.T
			}
		}
		return rows.Err()
	}
	if !s.sqlite {
		if len(assets) == 0 {
			return ends, nil
		}
		ids, ts := make(pgarray.Text, len(assets)), make(pgarray.Text, len(assets))
		for i, a := range assets {
			ids[i], ts[i] = a.String(), after(a).Format(time.RFC3339Nano)
		}
		rows, err := s.client(ctx).QueryContext(ctx, `SELECT f.a, (SELECT MIN(dv.committed_at) FROM dataset_versions dv
	WHERE dv.asset_id = f.a AND dv.committed_at > f.t) FROM unnest($1::uuid[], $2::timestamptz[]) AS f(a, t)`, ids, ts)
		if err != nil {
			return nil, fmt.Errorf("versions: versions after the frontier: %w", err)
		}
		return ends, scan(rows)
	}
	err := chunk.Each(assets, func(part []uuid.UUID) error {
		var cond []string
		var args []any
		for _, a := range part {
			cond = append(cond, "(asset_id = ? AND committed_at > ?)")
			args = append(args, a, after(a))
		}
		rows, err := s.client(ctx).QueryContext(ctx, `SELECT asset_id, MIN(committed_at) FROM dataset_versions WHERE `+
			strings.Join(cond, " OR ")+` GROUP BY asset_id`, args...)
		if err != nil {
			return fmt.Errorf("versions: versions after the frontier: %w", err)
		}
		return scan(rows)
	})
	return ends, err
}

// unknownEdges reads the edges of role on the assets that name no version, inside each asset's
// window (a nil bound is open), oldest first, at most maxUnknownScan+1 a chunk of assets.
func (s *Service) unknownEdges(ctx context.Context, assets []uuid.UUID, role runversion.Role, window func(uuid.UUID) (lo, hi *time.Time)) ([]*ent.RunVersion, error) {
	var out []*ent.RunVersion
	err := chunk.Each(assets, func(part []uuid.UUID) error {
		var q *ent.RunVersionQuery
		if !s.sqlite {
			// The IDs first, an index probe an asset (a LATERAL over arrays), then the rows.
			ids, los, his := make(pgarray.Text, len(part)), make(pgarray.Text, len(part)), make(pgarray.Text, len(part))
			for i, a := range part {
				lo, hi := window(a)
				ids[i], los[i], his[i] = a.String(), "-infinity", "infinity"
				if lo != nil {
					los[i] = lo.Format(time.RFC3339Nano)
				}
				if hi != nil {
					his[i] = hi.Format(time.RFC3339Nano)
				}
			}
			rows, err := s.client(ctx).QueryContext(ctx, `SELECT x.id FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) AS f(a, lo, hi)
	CROSS JOIN LATERAL (SELECT rv.id FROM run_versions rv WHERE rv.asset_id = f.a AND rv.version = '' AND rv.role = $4
		AND rv.at >= f.lo AND rv.at < f.hi ORDER BY rv.at LIMIT $5) AS x`, ids, los, his, string(role), maxUnknownScan+1)
			if err != nil {
				return fmt.Errorf("versions: unknown edges near the frontier: %w", err)
			}
			var found []uuid.UUID
			for rows.Next() {
				var id uuid.UUID
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return fmt.Errorf("versions: unknown edges near the frontier: %w", err)
				}
				found = append(found, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("versions: unknown edges near the frontier: %w", err)
			}
			if len(found) == 0 {
				return nil
			}
			q = s.client(ctx).RunVersion.Query().Where(runversion.IDIn(found...))
		} else {
			preds := make([]predicate.RunVersion, 0, len(part))
			for _, a := range part {
				p := []predicate.RunVersion{runversion.AssetID(a)}
				lo, hi := window(a)
				if lo != nil {
					p = append(p, runversion.AtGTE(*lo))
				}
				if hi != nil {
					p = append(p, runversion.AtLT(*hi))
				}
				preds = append(preds, runversion.And(p...))
			}
			q = s.client(ctx).RunVersion.Query().Where(runversion.Version(""), runversion.RoleEQ(role), runversion.Or(preds...))
		}
		rows, err := q.Order(runversion.ByAt(), runversion.ByID()).Limit(maxUnknownScan + 1).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: unknown edges near the frontier: %w", err)
		}
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// pairs matches rows whose (asset_id, version) is one of keys. On PostgreSQL the keys go as two
// arrays joined by unnest: one plan whatever their number, where a long OR of pairs costs more
// to plan than to run.
func (s *Service) pairs(keys []Key) func(*entsql.Selector) {
	if !s.sqlite {
		ids, vers := make(pgarray.Text, len(keys)), make(pgarray.Text, len(keys))
		for i, k := range keys {
			ids[i], vers[i] = k.AssetID.String(), k.Version
		}
		return func(sel *entsql.Selector) {
			sel.Where(entsql.P(func(b *entsql.Builder) {
				b.WriteString("(").Ident(sel.C("asset_id")).Comma().Ident(sel.C("version")).
					WriteString(") IN (SELECT * FROM unnest(").Arg(ids).WriteString("::uuid[], ").Arg(vers).WriteString("::text[]))")
			}))
		}
	}
	return func(sel *entsql.Selector) {
		byAsset := map[uuid.UUID][]any{}
		var order []uuid.UUID
		for _, k := range keys {
			if byAsset[k.AssetID] == nil {
				order = append(order, k.AssetID)
			}
			byAsset[k.AssetID] = append(byAsset[k.AssetID], k.Version)
		}
		ors := make([]*entsql.Predicate, 0, len(order))
		for _, a := range order {
			ors = append(ors, entsql.And(entsql.EQ(sel.C("asset_id"), a), entsql.In(sel.C("version"), byAsset[a]...)))
		}
		sel.Where(entsql.Or(ors...))
	}
}

// runIn matches rows whose run_id is one of runs (an array on PostgreSQL, as pairs).
func (s *Service) runIn(runs []string) func(*entsql.Selector) {
	if !s.sqlite {
		return func(sel *entsql.Selector) {
			sel.Where(entsql.P(func(b *entsql.Builder) {
				b.Ident(sel.C("run_id")).WriteString(" = ANY(").Arg(pgarray.Text(runs)).WriteString("::text[])")
			}))
		}
	}
	return func(sel *entsql.Selector) {
		args := make([]any, len(runs))
		for i, r := range runs {
			args[i] = r
		}
		sel.Where(entsql.In(sel.C("run_id"), args...))
	}
}

// edgesAt returns run edges of a role naming any of keys, at most limit of them.
func (s *Service) edgesAt(ctx context.Context, keys []Key, role runversion.Role, limit int) ([]*ent.RunVersion, error) {
	var out []*ent.RunVersion
	err := chunk.Each(keys, func(part []Key) error {
		if len(out) >= limit {
			return nil
		}
		rows, err := s.client(ctx).RunVersion.Query().Where(runversion.RoleEQ(role), predicate.RunVersion(s.pairs(part))).
			Order(runversion.ByRunID(), runversion.ByAssetID()).Limit(limit - len(out)).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: %s edges of versions: %w", role, err)
		}
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// edgesOfRuns returns the run edges of a role of runs.
func (s *Service) edgesOfRuns(ctx context.Context, runs []string, role runversion.Role) ([]*ent.RunVersion, error) {
	var out []*ent.RunVersion
	err := chunk.Each(runs, func(part []string) error {
		rows, err := s.client(ctx).RunVersion.Query().Where(predicate.RunVersion(s.runIn(part)), runversion.RoleEQ(role)).
			Order(runversion.ByRunID(), runversion.ByAssetID()).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: %s edges of runs: %w", role, err)
		}
		out = append(out, rows...)
		return nil
	})
	return out, err
}

func (s *Service) iosOfRuns(ctx context.Context, runs []string, role runio.Role) ([]*ent.RunIO, error) {
	var out []*ent.RunIO
	err := chunk.Each(runs, func(part []string) error {
		rows, err := s.client(ctx).RunIO.Query().Where(predicate.RunIO(s.runIn(part)), runio.RoleEQ(role)).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: %s of runs: %w", role, err)
		}
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// loadRows reads the recorded versions of keys (a version only a run named has none).
func (s *Service) loadRows(ctx context.Context, w *walked, keys []Key) error {
	return chunk.Each(keys, func(part []Key) error {
		rows, err := s.client(ctx).DatasetVersion.Query().Where(predicate.DatasetVersion(s.pairs(part))).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: read versions: %w", err)
		}
		for _, r := range rows {
			w.rows[Key{r.AssetID, r.Version}] = r
		}
		return nil
	})
}

// nodes describes the walk's versions: names now and then, time, expiry.
func (s *Service) nodes(ctx context.Context, w *walked) ([]Node, error) {
	var ids []uuid.UUID
	for _, k := range w.order {
		ids = append(ids, k.AssetID)
	}
	assets, err := s.assetsOf(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Node, 0, len(w.order))
	for _, k := range w.order {
		a := assets[k.AssetID]
		n := Node{Key: k, Kind: a.kind, Status: a.status, Name: Name{a.namespace, a.name}, Depth: w.dist[k]}
		// The version's time: its commit, else the time of the run edge that reached it.
		at := w.seenAt[k]
		if r := w.rows[k]; r != nil {
			n.CommittedAt = utc(r.CommittedAt)
			if r.ExpiredAt != nil {
				n.Expired = &Expiry{At: r.ExpiredAt.UTC(), By: r.ExpiredBy}
			}
			if r.CommittedAt != nil {
				at = *r.CommittedAt
			}
		}
		if !at.IsZero() {
			if then, ok := a.nameAt(at); ok && then != n.Name {
				n.NameThen = &then
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// nameUnknown fills in the jobs of unknown edges.
func (s *Service) nameUnknown(ctx context.Context, u *UnknownEdges) error {
	var ids []string
	for _, e := range u.Edges {
		ids = append(ids, e.RunID)
	}
	jobs, err := s.jobsOf(ctx, ids)
	if err != nil {
		return err
	}
	for i := range u.Edges {
		u.Edges[i].Job = jobs[u.Edges[i].RunID]
	}
	return nil
}

// assetInfo is what a walk shows of an asset: kind, status, current name and name history.
type assetInfo struct {
	kind, status    string
	namespace, name string
	current         bool             // the name is held now (false for a deleted asset's last)
	names           []*ent.AssetName // oldest first
}

func (a assetInfo) nameAt(t time.Time) (Name, bool) {
	for _, n := range a.names {
		if !n.ValidFrom.After(t) && (n.ValidTo == nil || t.Before(*n.ValidTo)) {
			return Name{n.Namespace, n.Name}, true
		}
	}
	return Name{}, false
}

// assetsOf reads assets and their name histories in batches (names are few per asset).
func (s *Service) assetsOf(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]assetInfo, error) {
	ids = uniqIDs(ids)
	out := make(map[uuid.UUID]assetInfo, len(ids))
	err := chunk.Each(ids, func(part []uuid.UUID) error {
		c := s.client(ctx)
		rows, err := c.Asset.Query().Where(asset.IDIn(part...)).Select(asset.FieldID, asset.FieldKind, asset.FieldStatus).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: read assets: %w", err)
		}
		for _, r := range rows {
			out[r.ID] = assetInfo{kind: string(r.Kind), status: string(r.Status)}
		}
		names, err := c.AssetName.Query().Where(assetname.AssetIDIn(part...)).Order(assetname.ByAssetID(), assetname.ByID()).All(ctx)
		if err != nil {
			return fmt.Errorf("versions: read asset names: %w", err)
		}
		for _, n := range names {
			a := out[n.AssetID]
			a.names = append(a.names, n)
			out[n.AssetID] = a
		}
		for _, id := range part {
			a := out[id]
			// The current name, else (a deleted asset) the newest.
			for _, n := range a.names {
				if n.ValidTo == nil || a.namespace == "" || !a.current {
					a.namespace, a.name, a.current = n.Namespace, n.Name, n.ValidTo == nil
				}
			}
			out[id] = a
		}
		return nil
	})
	return out, err
}

func compareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.AssetID.String(), b.AssetID.String()), cmp.Compare(a.Version, b.Version))
}

func uniqIDs(ids []uuid.UUID) []uuid.UUID {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b uuid.UUID) int { return cmp.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}
