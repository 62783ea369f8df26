package lineage

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetfacet"
	"github.com/tidemark/tidemark/ent/auditevent"
	"github.com/tidemark/tidemark/ent/lineageedge"
)

// Graph is the in-memory adjacency index of lineage edges, keyed on asset IDs. Traversals read
// it instead of issuing a recursive query per request. It is loaded from lineage_edges at start,
// updated at once by this process's ingests, and kept current with other replicas' writes by
// tailing lineage_edges in ID order (the ID is the change sequence).
//
// Tailing by ID must not skip an edge whose transaction commits after a higher ID was already
// seen (PostgreSQL hands out IDs at insert, not at commit). So the tailer keeps a low watermark
// below every unexplained gap and rereads from there; a gap older than gapGrace is taken to be a
// rolled-back insert and dropped. Adding an edge twice is harmless.
type Graph struct {
	db  *ent.Client
	cat *catalog.Catalog
	now func() time.Time
	log *slog.Logger

	mu    sync.RWMutex
	index map[uuid.UUID]int32
	nodes []node // by node index
	out   adjacency
	in    adjacency
	names nameArena
	strs  interned // namespaces, kinds and statuses, which repeat across nodes
	edges int
	// byName finds a node by its current name (the Marquez endpoint is asked by name): a hash
	// of space, namespace and name to the node, or to ambiguous when names share a hash.
	byName map[uint64]int32
	seed   maphash.Seed

	syncMu  sync.Mutex // one Sync at a time
	low     int64      // every edge ID <= low has been applied
	maxSeen int64
	gaps    map[int64]time.Time // IDs above low not seen yet, with when the gap was noticed
	syncAt  time.Time           // when the last successful Sync began
	ready   atomic.Bool         // the first Sync (the whole graph) has completed

	// Node summaries (names, kind, status) are kept in memory too, so a traversal answers
	// without a query. They are loaded at start and refreshed from the audit log: every change
	// of a name or status writes an audit event, whose UUIDv7 ID orders it in time. Each Sync
	// rereads the events of the last gapGrace (IDs are taken before commit) and skips those seen.
	loaded    bool
	auditFrom time.Time
	auditSeen map[uuid.UUID]time.Time

	markFree freeList[marks] // visited sets kept for the next walks (pool_walk.go)
}

// node is a node's ID and summary, kept small (a million nodes are held in memory) and without
// pointers: the name is in the arena, repeated strings are interned and times kept as Unix
// nanoseconds. kind 0 means not known yet. The ID and the summary share one record, so a
// traversal touches one cache line per node.
type node struct {
	id               uuid.UUID
	name             nameRef
	ns, kind, status uint32
	// documented: the asset has a schema or documentation facet (the Marquez graph reads
	// those for these nodes only). Facets are never removed, so the flag only goes on.
	documented       bool
	created, updated int64
	_                [8]byte // to 64 bytes: a record per cache line, none across two
}

// interned numbers repeated strings; 0 is the empty string.
type interned struct {
	index map[string]uint32
	strs  []string
}

func (t *interned) id(s string) uint32 {
	if s == "" {
		return 0
	}
	if i, ok := t.index[s]; ok {
		return i
	}
	if t.index == nil {
		t.index, t.strs = map[string]uint32{}, []string{""}
	}
	i := uint32(len(t.strs))
	t.index[s] = i
	t.strs = append(t.strs, s)
	return i
}

func (t *interned) str(i uint32) string {
	if i == 0 {
		return ""
	}
	return t.strs[i]
}

// summaryOf returns a node's summary; only the ID (no kind) when not known yet. Callers hold mu.
func (g *Graph) summaryOf(in *node) catalog.Summary {
	if in.kind == 0 {
		return catalog.Summary{ID: in.id}
	}
	return catalog.Summary{ID: in.id, Kind: catalog.Kind(g.strs.str(in.kind)), Status: catalog.Status(g.strs.str(in.status)),
		Namespace: g.strs.str(in.ns), Name: g.names.str(in.name), CreatedAt: time.Unix(0, in.created).UTC(), UpdatedAt: time.Unix(0, in.updated).UTC()}
}

type edgeRef struct {
	seq      int64
	from, to uuid.UUID
}

const (
	syncPage = 50_000
	gapGrace = time.Minute // longer than any ingest transaction stays open
)

func newGraph(db *ent.Client, cat *catalog.Catalog, now func() time.Time, log *slog.Logger) *Graph {
	return &Graph{db: db, cat: cat, now: now, log: log, index: map[uuid.UUID]int32{}, gaps: map[int64]time.Time{},
		auditSeen: map[uuid.UUID]time.Time{}, byName: map[uint64]int32{}, seed: maphash.MakeSeed(), markFree: freeList[marks]{max: marksFree}}
}

// node returns the index of id, adding it. Callers hold mu for writing.
func (g *Graph) node(id uuid.UUID) int32 {
	if i, ok := g.index[id]; ok {
		return i
	}
	i := int32(len(g.nodes))
	g.index[id] = i
	g.nodes = append(g.nodes, node{id: id})
	g.out.grow()
	g.in.grow()
	return i
}

// setInfo records node summaries.
func (g *Graph) setInfo(sums []catalog.Summary) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range sums {
		if s.ID == uuid.Nil || s.Kind == "" {
			continue
		}
		n := g.node(s.ID)
		old := g.nodes[n]
		g.unindexName(n)
		g.nodes[n] = node{id: s.ID, name: g.names.put(s.Name, old.name), ns: g.strs.id(s.Namespace), kind: g.strs.id(string(s.Kind)),
			status: g.strs.id(string(s.Status)), created: s.CreatedAt.UnixNano(), updated: s.UpdatedAt.UnixNano(), documented: old.documented}
		g.indexName(n)
	}
	if g.names.wasteful() { // renames left more old names than current ones
		var fresh nameArena
		for i := range g.nodes {
			g.nodes[i].name = fresh.put(g.names.str(g.nodes[i].name), nameRef{})
		}
		g.names = fresh
	}
}

const ambiguous = -1

// nameKey hashes a current name. Callers hold mu.
func (g *Graph) nameKey(space catalog.Space, ns, name string) uint64 {
	var h maphash.Hash
	h.SetSeed(g.seed)
	_, _ = h.WriteString(string(space))
	_ = h.WriteByte(0)
	_, _ = h.WriteString(ns)
	_ = h.WriteByte(0)
	_, _ = h.WriteString(name)
	return h.Sum64()
}

// nodeName returns node n's space, namespace and name, and whether the name is current (a
// deleted asset's name is released). Callers hold mu.
func (g *Graph) nodeName(n int32) (catalog.Space, string, string, bool) {
	nd := &g.nodes[n]
	if nd.kind == 0 || nd.name.n == 0 || catalog.Status(g.strs.str(nd.status)) == catalog.StatusDeleted {
		return "", "", "", false
	}
	return catalog.SpaceOf(catalog.Kind(g.strs.str(nd.kind))), g.strs.str(nd.ns), g.names.str(nd.name), true
}

// indexName files node n under its current name. Two names with one hash both go to the
// database. Callers hold mu for writing.
func (g *Graph) indexName(n int32) {
	space, ns, name, ok := g.nodeName(n)
	if !ok {
		return
	}
	k := g.nameKey(space, ns, name)
	if at, taken := g.byName[k]; taken && at != n {
		n = ambiguous
	}
	g.byName[k] = n
}

// unindexName removes node n's current name from byName. Callers hold mu for writing.
func (g *Graph) unindexName(n int32) {
	if space, ns, name, ok := g.nodeName(n); ok {
		k := g.nameKey(space, ns, name)
		if g.byName[k] == n {
			delete(g.byName, k)
		}
	}
}

// Named returns the asset currently named so, as far as the graph knows (names changed by
// other replicas since the last Sync are not known yet). ok is false when the graph does not
// know or cannot tell: ask the database.
func (g *Graph) Named(space catalog.Space, ns, name string) (id uuid.UUID, ok bool) {
	if !g.ready.Load() {
		return uuid.Nil, false
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, found := g.byName[g.nameKey(space, ns, name)]
	if !found || n == ambiguous {
		return uuid.Nil, false
	}
	if sp, gotNS, gotName, cur := g.nodeName(n); !cur || sp != space || gotNS != ns || gotName != name {
		return uuid.Nil, false // another name with the same hash
	}
	return g.nodes[n].id, true
}

// markDocumented notes assets that have a schema or documentation facet.
func (g *Graph) markDocumented(ids []uuid.UUID) {
	if len(ids) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		g.nodes[g.node(id)].documented = true
	}
}

// docFacets are the facets the Marquez graph shows (fields and description).
var docFacets = []string{"schema", "documentation"}

// syncDocumented marks the assets whose schema or documentation facet was written since from
// (every one when from is zero), paging by asset ID.
func (g *Graph) syncDocumented(ctx context.Context, from time.Time) error {
	after := uuid.Nil
	for {
		q := g.db.AssetFacet.Query().Where(assetfacet.NameIn(docFacets...), assetfacet.AssetIDGT(after))
		if !from.IsZero() {
			q = q.Where(assetfacet.UpdatedAtGTE(from))
		}
		var rows []struct {
			AssetID uuid.UUID `json:"asset_id"`
		}
		if err := q.Order(ent.Asc(assetfacet.FieldAssetID)).Limit(infoPage).Select(assetfacet.FieldAssetID).Scan(ctx, &rows); err != nil {
			return fmt.Errorf("lineage: read which assets have a schema: %w", err)
		}
		ids := make([]uuid.UUID, len(rows))
		for i, r := range rows {
			ids[i] = r.AssetID
		}
		g.markDocumented(ids)
		if len(rows) < infoPage {
			return nil
		}
		after = rows[len(rows)-1].AssetID
	}
}

// AssetsChanged reloads assets' summaries (those in written are taken as they are); wire it to
// catalog.WithChangeHook.
func (g *Graph) AssetsChanged(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]catalog.Summary) {
	if err := g.refresh(ctx, ids, written); err != nil {
		g.log.Warn("lineage: refresh graph nodes; the next sync retries", "assets", len(ids), "err", err)
	}
}

// refresh reloads the summaries of assets that changed (created, renamed, deleted, restored),
// reading those that written does not hold.
func (g *Graph) refresh(ctx context.Context, ids []uuid.UUID, written map[uuid.UUID]catalog.Summary) error {
	list := make([]catalog.Summary, 0, len(ids))
	var read []uuid.UUID
	for _, id := range ids {
		if s, ok := written[id]; ok {
			list = append(list, s)
		} else {
			read = append(read, id)
		}
	}
	if len(read) > 0 {
		sums, err := g.cat.Summaries(ctx, read)
		if err != nil {
			return err
		}
		for _, s := range sums {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		return nil
	}
	g.setInfo(list)
	return nil
}

// add applies edges (from this process's committed ingests, or read by Sync).
func (g *Graph) add(edges []edgeRef) {
	if len(edges) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range edges {
		f, t := g.node(e.from), g.node(e.to)
		if contains(g.out.list(f), t) {
			continue
		}
		g.out.add(f, t)
		g.in.add(t, f)
		g.edges++
	}
}

// hasEdge reports whether the graph holds from -> to.
func (g *Graph) hasEdge(from, to uuid.UUID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	f, ok := g.index[from]
	if !ok {
		return false
	}
	t, ok := g.index[to]
	return ok && contains(g.out.list(f), t)
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Sync reads edges written since the last Sync (by any replica) into the graph.
func (g *Graph) Sync(ctx context.Context) error {
	g.syncMu.Lock()
	defer g.syncMu.Unlock()
	started := g.now()
	from := g.low
	for {
		rows, err := g.db.LineageEdge.Query().Where(lineageedge.IDGT(int(from))).
			Order(ent.Asc(lineageedge.FieldID)).Limit(syncPage).
			Select(lineageedge.FieldID, lineageedge.FieldFromID, lineageedge.FieldToID).All(ctx)
		if err != nil {
			return fmt.Errorf("lineage: sync graph: %w", err)
		}
		batch := make([]edgeRef, len(rows))
		for i, r := range rows {
			batch[i] = edgeRef{seq: int64(r.ID), from: r.FromID, to: r.ToID}
		}
		g.add(batch)
		g.advance(batch, started)
		if len(rows) < syncPage {
			break
		}
		from = int64(rows[len(rows)-1].ID)
	}
	if err := g.syncInfo(ctx, started); err != nil {
		return err
	}
	g.mu.Lock()
	g.syncAt = started
	if !g.ready.Load() { // the whole graph was just loaded: give back the room growing it left
		g.out.compact()
		g.in.compact()
		// The first answers would otherwise pay for the visited set's memory (faulted in page
		// by page as walks first write it): a few milliseconds at a million nodes.
		g.putMarks(g.marks())
	}
	g.mu.Unlock()
	g.ready.Store(true)
	return nil
}

const infoPage = 10_000

// syncInfo loads every asset's summary the first time, then the summaries of assets named in
// audit events since the last pass. Called under syncMu.
func (g *Graph) syncInfo(ctx context.Context, started time.Time) error {
	if !g.loaded {
		after := uuid.Nil
		for {
			page, err := g.cat.SummaryPage(ctx, after, infoPage)
			if err != nil {
				return err
			}
			named := page[:0:0]
			for _, s := range page {
				if s.Name != "" { // deleted assets hold no name; Lineage looks theirs up on demand
					named = append(named, s)
				}
			}
			g.setInfo(named)
			if len(page) < infoPage {
				break
			}
			after = page[len(page)-1].ID
		}
		if err := g.syncDocumented(ctx, time.Time{}); err != nil {
			return err
		}
		g.loaded, g.auditFrom = true, started
		return nil
	}
	if err := g.syncDocumented(ctx, g.auditFrom.Add(-gapGrace)); err != nil {
		return err
	}
	rows, err := g.db.AuditEvent.Query().
		Where(auditevent.IDGTE(uuidV7Floor(g.auditFrom.Add(-gapGrace))), auditevent.AssetIDNotNil()).
		Select(auditevent.FieldID, auditevent.FieldAssetID).All(ctx)
	if err != nil {
		return fmt.Errorf("lineage: tail audit log: %w", err)
	}
	var touched []uuid.UUID
	for _, r := range rows {
		if _, seen := g.auditSeen[r.ID]; seen {
			continue
		}
		g.auditSeen[r.ID] = started
		touched = append(touched, *r.AssetID)
	}
	for id, seen := range g.auditSeen {
		if started.Sub(seen) > 3*gapGrace {
			delete(g.auditSeen, id)
		}
	}
	g.auditFrom = started
	return g.refresh(ctx, touched, nil)
}

// uuidV7Floor is the smallest UUIDv7 of the millisecond t.
func uuidV7Floor(t time.Time) uuid.UUID {
	var u uuid.UUID
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		u[i] = byte(ms)
		ms >>= 8
	}
	u[6] = 0x70
	return u
}

// advance moves the low watermark past the IDs seen, remembering gaps. Called under syncMu.
func (g *Graph) advance(batch []edgeRef, now time.Time) {
	for _, e := range batch {
		delete(g.gaps, e.seq)
		if e.seq > g.maxSeen {
			for missing := g.maxSeen + 1; missing < e.seq && len(g.gaps) < 100_000; missing++ {
				g.gaps[missing] = now
			}
			g.maxSeen = e.seq
		}
	}
	low := g.maxSeen
	for id, seen := range g.gaps {
		if now.Sub(seen) > gapGrace {
			delete(g.gaps, id) // a rolled-back insert: that ID will never commit
			continue
		}
		if id-1 < low {
			low = id - 1
		}
	}
	g.low = low
}

// Freshness says how current the graph is: edges written by this process are visible at once;
// edges written by other replicas are visible up to SyncedAt.
type Freshness struct {
	SyncedAt time.Time
	Nodes    int
	Edges    int
	// Ready is false until the graph has been loaded once: until then traversals would miss
	// edges, so lineage answers 503 and the cleanup bot does not judge anything unused.
	Ready bool
}

// Freshness reports the graph's state.
func (g *Graph) Freshness() Freshness {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return Freshness{SyncedAt: g.syncAt, Nodes: len(g.nodes), Edges: g.edges, Ready: g.ready.Load()}
}

// Direction of a traversal.
type Direction string

// Directions.
const (
	Upstream   Direction = "upstream"
	Downstream Direction = "downstream"
	Both       Direction = "both"
)

// Traversal is the part of the graph reached from a start node.
type Traversal struct {
	// Nodes reached, the start first (depth 0), then by depth. A node whose summary is not
	// known yet has only its ID (no kind).
	Nodes []Node
	// Edges among the returned nodes, as indexes into Nodes (from, to).
	Edges [][2]int32
	// ReachedPerDepth counts the nodes found at each depth (index = depth), in both directions.
	ReachedPerDepth []int
	// Truncated is true when limit stopped the walk: deeper or further nodes exist but are not
	// returned, and ReachedPerDepth covers only the depths walked.
	Truncated bool
}

// marks is a traversal's visited set over node indexes: a stamp per node (equal to gen when
// visited in this traversal) beside the node's position in the answer, so a visit touches one
// cache line. Stamping makes reuse free of clearing; pooled, so a walk over a million-node graph
// allocates nothing but its answer.
type marks struct {
	gen uint32
	at  []mark
}

type mark struct {
	stamp uint32
	pos   int32
}

var markPool sync.Pool

// marks returns a visited set for the current graph (putMarks keeps it for the next walk).
// Callers hold mu (the node count is fixed).
func (g *Graph) marks() *marks {
	m := g.markFree.get()
	if m == nil {
		m, _ = markPool.Get().(*marks)
	}
	if m == nil {
		m = &marks{}
	}
	if n := len(g.nodes); len(m.at) < n {
		n += n / 8 // room for growth before the next reallocation
		m.at, m.gen = make([]mark, n), 0
		for i := 0; i < n; i += 4096 / 8 { // one write a page: faulted in here, not by the walks
			m.at[i].stamp = 0
		}
	}
	if m.gen++; m.gen == 0 { // wrapped: stamps of 4 billion walks ago would look current
		clear(m.at)
		m.gen = 1
	}
	return m
}

func (m *marks) seen(n int32) bool { return m.at[n].stamp == m.gen }

func (m *marks) set(n, pos int32) { m.at[n] = mark{m.gen, pos} }

// Traverse walks up to depth hops from start in dir, returning at most limit nodes (start
// included). Levels are taken whole or not at all, so a truncated answer is a complete picture
// of the depths it covers, never a partial level that looks complete.
func (g *Graph) Traverse(start uuid.UUID, dir Direction, depth, limit int) Traversal {
	return g.traverse(start, dir, depth, limit, false)
}

// TraverseFirst is Traverse, except that the level that would pass limit is cut rather than
// dropped: it returns the first limit nodes met, nearest first, and Truncated says the last
// level is partial. A list of what lies downstream (an impact analysis) wants those nodes; a
// graph drawn from them would look complete when it is not, so Traverse keeps whole levels.
func (g *Graph) TraverseFirst(start uuid.UUID, dir Direction, depth, limit int) Traversal {
	return g.traverse(start, dir, depth, limit, true)
}

func (g *Graph) traverse(start uuid.UUID, dir Direction, depth, limit int, partial bool) Traversal {
	g.mu.RLock()
	defer g.mu.RUnlock()
	s, ok := g.index[start]
	if !ok {
		return Traversal{Nodes: []Node{{Summary: catalog.Summary{ID: start}}}, ReachedPerDepth: []int{1}}
	}
	b := getWalkBufs()
	w := g.walk(s, dir, depth, limit, partial, b)
	res := Traversal{ReachedPerDepth: w.reached, Truncated: w.truncated, Edges: w.edges}
	b.edges, b.reached = nil, nil // the answer's now
	// Gather the records first: a tight loop keeps many cache misses in flight at once, where
	// building each summary as its record arrives would wait for them one by one.
	recs := g.gather(w.order, b.recs)
	res.Nodes = make([]Node, len(recs))
	for i := range recs {
		res.Nodes[i] = Node{Summary: g.summaryOf(&recs[i]), Depth: int(w.depths[i]), Documented: recs[i].documented}
	}
	b.recs = recs
	putWalkBufs(b)
	return res
}

// View is a traversal's nodes as the graph holds them: pointer-free records, read through
// snapshots of the name arena and the interned strings taken under the lock. The bytes and
// strings a snapshot covers are never rewritten (the arena and the table only grow, and a
// compacted arena is a new one), so a View is read without the lock; and it builds no string,
// time or summary per node, which was most of a big walk's time and all of its garbage: an
// answer is encoded straight from it. Release gives its records back for the next walk.
type View struct {
	order  []int32 // graph indexes (-1: not in the graph), to read the records again
	recs   []node
	depths []int32
	names  []byte
	strs   []string
	// Edges among the returned nodes, as node positions (from, to).
	Edges [][2]int32
	// ReachedPerDepth and Truncated are as in Traversal.
	ReachedPerDepth []int
	Truncated       bool
	// bufs hold the slices above when they are a walk's, handed back by Release.
	bufs *walkBufs
}

// NodeView is one node of a View: what Node holds but its times (an answer about lineage
// shows none). Kind is empty for a node whose summary is not known.
type NodeView struct {
	ID        uuid.UUID
	Kind      catalog.Kind
	Status    catalog.Status
	Namespace string
	Name      string
	Depth     int
}

// Len is the number of nodes.
func (v *View) Len() int { return len(v.recs) }

// Node returns node i (the start is 0, then by depth). Its strings stay valid after Release.
func (v *View) Node(i int) NodeView {
	r := &v.recs[i]
	if r.kind == 0 {
		return NodeView{ID: r.id, Depth: int(v.depths[i])}
	}
	var name string
	if r.name.n > 0 {
		name = unsafe.String(&v.names[r.name.off], r.name.n)
	}
	return NodeView{ID: r.id, Kind: catalog.Kind(v.strs[r.kind]), Status: catalog.Status(v.str(r.status)),
		Namespace: v.str(r.ns), Name: name, Depth: int(v.depths[i])}
}

func (v *View) str(i uint32) string {
	if i == 0 {
		return ""
	}
	return v.strs[i]
}

// Release hands the View's slices back for the next walk (pointer-free, so only clearing
// them was left of their cost, and a kept slice is not even cleared); neither the View nor its
// Edges and ReachedPerDepth are to be read after.
func (v *View) Release() {
	if b := v.bufs; b != nil {
		b.order, b.recs, b.depths, b.edges, b.reached = v.order, v.recs, v.depths, v.Edges, v.ReachedPerDepth
		putWalkBufs(b)
	}
	*v = View{}
}

// View is Traverse as a View.
func (g *Graph) View(start uuid.UUID, dir Direction, depth, limit int) View {
	g.mu.RLock()
	defer g.mu.RUnlock()
	s, ok := g.index[start]
	if !ok {
		return View{order: []int32{-1}, recs: []node{{id: start}}, depths: []int32{0}, ReachedPerDepth: []int{1}}
	}
	b := getWalkBufs()
	w := g.walk(s, dir, depth, limit, false, b)
	v := View{order: w.order, depths: w.depths, Edges: w.edges, ReachedPerDepth: w.reached, Truncated: w.truncated, bufs: b}
	v.recs = g.gather(w.order, b.recs)
	v.names, v.strs = g.names.b, g.strs.strs
	return v
}

// dropUnknown leaves out the nodes (and their edges) whose asset does not exist, as result
// does; the start stays (the caller says it does not exist).
func (v *View) dropUnknown() {
	if !slices.ContainsFunc(v.recs[1:], func(r node) bool { return r.kind == 0 }) {
		return
	}
	at := make([]int32, len(v.recs)) // new position, -1 when left out
	k := 0
	for i := range v.recs {
		at[i] = -1
		if i == 0 || v.recs[i].kind != 0 {
			at[i] = int32(k)
			v.recs[k], v.depths[k], v.order[k] = v.recs[i], v.depths[i], v.order[i]
			k++
		}
	}
	v.recs, v.depths, v.order = v.recs[:k], v.depths[:k], v.order[:k]
	edges := v.Edges[:0]
	for _, e := range v.Edges {
		if f, t := at[e[0]], at[e[1]]; f >= 0 && t >= 0 {
			edges = append(edges, [2]int32{f, t})
		}
	}
	v.Edges = edges
}

// reread reads the View's records again (after summaries were learned), with fresh snapshots:
// a compacted arena holds the names at other places. A node not in the graph keeps its ID only,
// unless it has been added since.
func (g *Graph) reread(v *View) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for i, n := range v.order {
		if n < 0 {
			if at, ok := g.index[v.recs[i].id]; ok {
				v.recs[i] = g.nodes[at]
			}
			continue
		}
		v.recs[i] = g.nodes[n]
	}
	v.names, v.strs = g.names.b, g.strs.strs
}

// gather copies the records of the nodes in order into recs (reused when large enough).
// Callers hold mu.
func (g *Graph) gather(order []int32, recs []node) []node {
	if cap(recs) < len(order) {
		recs = make([]node, len(order))
	}
	recs = recs[:len(order)]
	for i, n := range order {
		recs[i] = g.nodes[n]
	}
	return recs
}

// walked is a walk's outcome: the nodes reached as graph indexes in answer order (the start
// first, then by depth) with their depths, and the edges among them as answer positions.
type walked struct {
	order     []int32
	depths    []int32
	edges     [][2]int32
	reached   []int
	truncated bool
}

// walk is traverse's walk from node s, in b's slices (the answer's slices are b's: b holds
// them again when the walk returns). Callers hold mu.
func (g *Graph) walk(s int32, dir Direction, depth, limit int, partial bool, b *walkBufs) walked {
	res := walked{reached: append(b.reached[:0], 1)}
	// m numbers the nodes met in the order they are returned, so an edge is written as answer
	// positions as it is met; a node met on a level that is then dropped (the limit) gets a
	// number past the end and its edges are taken back.
	m := g.marks()
	defer g.putMarks(m)
	m.set(s, 0)
	order := append(b.order[:0], s)
	depths := append(b.depths[:0], 0)
	type walk struct {
		adj            *adjacency
		frontier, next []int32
		down           bool
	}
	var walks [2]walk
	n := 0
	if dir == Downstream || dir == Both {
		walks[n] = walk{adj: &g.out, frontier: append(b.fronts[2*n][:0], s), next: b.fronts[2*n+1][:0], down: true}
		n++
	}
	if dir == Upstream || dir == Both {
		walks[n] = walk{adj: &g.in, frontier: append(b.fronts[2*n][:0], s), next: b.fronts[2*n+1][:0]}
		n++
	}
	edges, level := b.edges[:0], b.level[:0]
	for d := 1; d <= depth; d++ {
		level = level[:0]
		levelStart := len(edges)
		for k := range walks[:n] {
			w := &walks[k]
			next := w.next[:0]
			for _, u := range w.frontier {
				pu := m.at[u].pos
				for _, v := range w.adj.list(u) {
					if !m.seen(v) {
						m.set(v, int32(len(order)+len(level)))
						next = append(next, v)
						level = append(level, v)
					}
					// Every node met so far is at this depth or shallower, so the edge joins two
					// returned nodes if this level is kept.
					if pv := m.at[v].pos; w.down {
						edges = append(edges, [2]int32{pu, pv})
					} else {
						edges = append(edges, [2]int32{pv, pu})
					}
				}
			}
			w.frontier, w.next = next, w.frontier // the old frontier's room takes the next level
		}
		if len(level) == 0 {
			break
		}
		res.reached = append(res.reached, len(level))
		if len(order)+len(level) > limit {
			res.truncated = true
			kept := edges[:levelStart]
			if keep := limit - len(order); partial && keep > 0 {
				// The nodes kept are numbered len(order)...; an edge to a node past them is left out.
				end := int32(len(order) + keep)
				order = append(order, level[:keep]...)
				for range keep {
					depths = append(depths, int32(d))
				}
				for _, e := range edges[levelStart:] {
					if e[0] < end && e[1] < end {
						kept = append(kept, e)
					}
				}
			}
			edges = kept
			break
		}
		order = append(order, level...)
		for range level {
			depths = append(depths, int32(d))
		}
	}
	res.order, res.depths, res.edges = order, depths, edges
	if n > 1 { // an edge may be met from both ends
		seen := make(map[[2]int32]struct{}, len(edges))
		res.edges = edges[:0]
		for _, e := range edges {
			if _, dup := seen[e]; !dup {
				seen[e] = struct{}{}
				res.edges = append(res.edges, e)
			}
		}
	}
	if res.edges == nil {
		res.edges = [][2]int32{}
	}
	b.order, b.depths, b.edges, b.level, b.reached = res.order, res.depths, res.edges, level, res.reached
	for k := range walks[:n] {
		b.fronts[2*k], b.fronts[2*k+1] = walks[k].frontier, walks[k].next
	}
	return res
}

// The graph keeps a million nodes and millions of edges for as long as the process runs. Held
// as a slice per node and a string per name, that is three million pointers the garbage
// collector scans on every cycle, taking CPU from the requests running meanwhile. adjacency and
// nameArena hold the same data without pointers: the collector skips them.

// adjacency is every node's neighbour list (one direction), all lists in one pool.
type adjacency struct {
	at    []span // by node index
	pool  []int32
	waste int // pool slots left behind by lists that moved
}

// span is a node's list: pool[off : off+n], with room up to off+cap.
type span struct{ off, n, cap uint32 }

// grow adds an empty list for a new node.
func (a *adjacency) grow() { a.at = append(a.at, span{}) }

// list returns u's neighbours. The slice is valid while the caller holds the graph's lock.
func (a *adjacency) list(u int32) []int32 {
	s := a.at[u]
	return a.pool[s.off : s.off+s.n : s.off+s.n]
}

// add appends v to u's list, moving the list to the pool's end (with twice the room) when full.
func (a *adjacency) add(u, v int32) {
	s := &a.at[u]
	if s.n == s.cap {
		c := max(2, 2*s.cap)
		off := len(a.pool)
		a.pool = slices.Grow(a.pool, int(c))[:off+int(c)] // slots past n are never read
		copy(a.pool[off:], a.pool[s.off:s.off+s.n])
		a.waste += int(s.cap)
		s.off, s.cap = uint32(off), c
	}
	a.pool[s.off+s.n] = v
	s.n++
	if a.waste > 1<<16 && a.waste > len(a.pool)/3 {
		a.compact()
	}
}

// compact rewrites the pool with each list a quarter longer than it is: most lists are written
// once (at load) and then only read, and the slack spares a compaction per few new edges while
// a graph loads. A list that outgrows it moves to the end.
func (a *adjacency) compact() {
	room := func(n uint32) uint32 { return n + n/4 + 1 }
	size := 0
	for _, s := range a.at {
		size += int(room(s.n))
	}
	pool := make([]int32, size)
	off := uint32(0)
	for i, s := range a.at {
		copy(pool[off:], a.pool[s.off:s.off+s.n])
		a.at[i] = span{off, s.n, room(s.n)}
		off += room(s.n)
	}
	a.pool, a.waste = pool, 0
}

// nameArena holds names back to back. Bytes once written are never changed (a name that
// changes is appended anew), so strings handed out point into the arena without a copy and
// stay valid after the arena grows or is compacted: they keep their old array alive.
type nameArena struct {
	b     []byte
	waste int
}

// nameRef is a name's place in the arena.
type nameRef struct{ off, n uint32 }

// put stores s in place of old, which becomes waste, and returns where s is.
func (a *nameArena) put(s string, old nameRef) nameRef {
	if a.str(old) == s {
		return old
	}
	a.waste += int(old.n)
	r := nameRef{uint32(len(a.b)), uint32(len(s))}
	a.b = append(a.b, s...)
	return r
}

// wasteful says when more than half the arena is names no longer used.
func (a *nameArena) wasteful() bool { return a.waste > 1<<20 && a.waste > len(a.b)/2 }

func (a *nameArena) str(r nameRef) string {
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&a.b[r.off], r.n)
}
