package lineage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetfacet"
	"github.com/tidemark/tidemark/ent/columnedge"
	"github.com/tidemark/tidemark/ent/predicate"
	"github.com/tidemark/tidemark/ent/run"
	"github.com/tidemark/tidemark/ent/runio"
	"github.com/tidemark/tidemark/internal/chunk"
)

// Limits on lineage queries.
const (
	MaxDepth = 20
	// DefaultMaxNodes is the default cap on the nodes of one answer (WithMaxNodes sets it):
	// high enough for impact analysis over a wide graph, where 10 hops reach tens of thousands.
	DefaultMaxNodes = 100_000
	MaxColumns      = 10_000 // columns in a column-lineage answer
	DefaultLimit    = 1_000
	MarquezDefault  = 20 // Marquez's default depth
)

// Node is an asset in a lineage answer.
type Node struct {
	catalog.Summary
	Depth      int
	Documented bool // has a schema or documentation facet
	// Answers at a time (LineageAt) only: FormerName says the name shown is the one the asset
	// held then and holds no longer (renamed or deleted since); DeletedSince is when an asset
	// deleted after that time was deleted.
	FormerName   bool
	DeletedSince *time.Time
}

// LineageResult is the answer to a traversal.
type LineageResult struct {
	Root  uuid.UUID
	Nodes []Node
	Edges [][2]int32 // indexes into Nodes: from, to

	ReachedPerDepth []int
	Truncated       bool
	Freshness       Freshness
	// Relations of the start that are not data flow (a dataset migration: migrated_to).
	Relations []Relation
	// At is the time the answer is the graph of (LineageAt), nil for now.
	At *time.Time
}

// Relation links two assets outside the OpenLineage graph.
type Relation struct {
	From, To uuid.UUID
	Kind     string    // migrated_to
	Ref      uuid.UUID // what records it (the migration)
}

func checkWalk(depth, limit, most int) error {
	if depth < 1 || depth > MaxDepth {
		return invalid("depth must be from 1 to %d, not %d", MaxDepth, depth)
	}
	if limit < 1 || limit > most {
		return invalid("limit must be from 1 to %d, not %d", most, limit)
	}
	return nil
}

// MaxNodes is the most nodes one lineage answer may hold.
func (s *Service) MaxNodes() int { return s.maxNodes }

// ParseDirection checks a direction.
func ParseDirection(s string) (Direction, error) {
	switch Direction(s) {
	case Upstream, Downstream, Both:
		return Direction(s), nil
	}
	return "", invalid("direction must be upstream, downstream or both, not %q", s)
}

// Lineage walks the graph from an asset.
func (s *Service) Lineage(ctx context.Context, id uuid.UUID, dir Direction, depth, limit int) (LineageResult, error) {
	res, err := s.walk(ctx, id, dir, depth, limit, false, false)
	if err != nil || s.relations == nil {
		return res, err
	}
	rels, err := s.relations(ctx, id)
	if err != nil {
		return LineageResult{}, err
	}
	res.Relations = append(res.Relations, rels...)
	return res, nil
}

// ViewResult is the answer to a traversal as a View of the graph (LineageView).
type ViewResult struct {
	View
	Root      uuid.UUID
	Freshness Freshness
	Relations []Relation
}

// LineageView is Lineage, answered as a View: the same nodes, edges and values, without the
// nodes' times, built without a string or a summary per node. Release the View once encoded.
func (s *Service) LineageView(ctx context.Context, id uuid.UUID, dir Direction, depth, limit int) (ViewResult, error) {
	if err := checkWalk(depth, limit, s.maxNodes); err != nil {
		return ViewResult{}, err
	}
	if _, err := ParseDirection(string(dir)); err != nil {
		return ViewResult{}, err
	}
	if err := s.loaded(); err != nil {
		return ViewResult{}, err
	}
	res := ViewResult{View: s.graph.View(id, dir, depth, limit), Root: id}
	if err := s.learnView(ctx, &res.View); err != nil {
		res.Release()
		return ViewResult{}, err
	}
	if res.recs[0].kind == 0 {
		res.Release()
		return ViewResult{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("asset %s does not exist", id)}
	}
	res.Freshness = s.graph.Freshness()
	res.Relations = []Relation{}
	if s.relations != nil {
		rels, err := s.relations(ctx, id)
		if err != nil {
			res.Release()
			return ViewResult{}, err
		}
		res.Relations = append(res.Relations, rels...)
	}
	return res, nil
}

// learnView is learn for a View: it reads the summaries not in memory, files them in the
// graph and reads the View's records again.
func (s *Service) learnView(ctx context.Context, v *View) error {
	var missing []uuid.UUID
	for i := range v.recs {
		if v.recs[i].kind == 0 {
			missing = append(missing, v.recs[i].id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	found, err := s.cat.Summaries(ctx, missing)
	if err != nil {
		return err
	}
	learned := make([]catalog.Summary, 0, len(found))
	for _, sum := range found {
		learned = append(learned, sum)
	}
	s.graph.setInfo(learned)
	s.graph.reread(v)
	v.dropUnknown()
	return nil
}

// walk is Lineage without the start's relations (the Marquez form has no place for them);
// jobIO adds every input and output of the jobs reached, as Marquez does.
func (s *Service) walk(ctx context.Context, id uuid.UUID, dir Direction, depth, limit int, jobIO, partial bool) (LineageResult, error) {
	if err := checkWalk(depth, limit, s.maxNodes); err != nil {
		return LineageResult{}, err
	}
	if _, err := ParseDirection(string(dir)); err != nil {
		return LineageResult{}, err
	}
	if err := s.loaded(); err != nil {
		return LineageResult{}, err
	}
	var t Traversal
	if partial {
		t = s.graph.TraverseFirst(id, dir, depth, limit)
	} else {
		t = s.graph.Traverse(id, dir, depth, limit)
	}
	if err := s.learn(ctx, &t); err != nil {
		return LineageResult{}, err
	}
	if jobIO { // after learn: a job is known by its kind
		t = s.graph.withJobIO(t, limit)
		if err := s.learn(ctx, &t); err != nil {
			return LineageResult{}, err
		}
	}
	if t.Nodes[0].Kind == "" {
		return LineageResult{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("asset %s does not exist", id)}
	}
	return result(id, t, s.graph.Freshness()), nil
}

// learn reads the summaries of nodes not in memory (yet): written by another replica since
// the last Sync.
func (s *Service) learn(ctx context.Context, t *Traversal) error {
	var missing []uuid.UUID
	for _, n := range t.Nodes {
		if n.Kind == "" {
			missing = append(missing, n.ID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	found, err := s.cat.Summaries(ctx, missing)
	if err != nil {
		return err
	}
	learned := make([]catalog.Summary, 0, len(found))
	for i, n := range t.Nodes {
		if sum, ok := found[n.ID]; ok && n.Kind == "" {
			t.Nodes[i].Summary = sum
			learned = append(learned, sum)
		}
	}
	s.graph.setInfo(learned)
	return nil
}

// Downstream lists the assets downstream of id within depth hops (the cleanup bot asks whether
// any of them is still read).
func (s *Service) Downstream(ctx context.Context, id uuid.UUID, depth int) ([]uuid.UUID, error) {
	if err := s.loaded(); err != nil {
		return nil, err // a partial graph would hide readers downstream: fail closed
	}
	// No node cap: a truncated walk would hide readers further down.
	t := s.graph.Traverse(id, Downstream, depth, math.MaxInt)
	out := make([]uuid.UUID, 0, len(t.Nodes))
	for _, n := range t.Nodes[1:] {
		out = append(out, n.ID)
	}
	return out, nil
}

// ImpactNodes is the most nodes DownstreamDepths walks: an impact list longer than that is
// read as "everything", and each node costs the analysis a usage query.
const ImpactNodes = 500

// DownstreamDepths lists the assets downstream of id within depth hops, each with its depth,
// and whether the walk stopped at ImpactNodes (for an impact analysis: usage.DownstreamWalk).
// Past the limit it lists the first ImpactNodes met, nearest first: an asset with 501 direct
// consumers still shows 500 of them.
func (s *Service) DownstreamDepths(ctx context.Context, id uuid.UUID, depth int) ([]uuid.UUID, []int, bool, error) {
	res, err := s.walk(ctx, id, Downstream, depth, ImpactNodes+1, false, true) // a job's other inputs are not downstream
	if err != nil {
		return nil, nil, false, err
	}
	ids, depths := make([]uuid.UUID, 0, len(res.Nodes)), make([]int, 0, len(res.Nodes))
	for _, n := range res.Nodes {
		if n.ID != id {
			ids, depths = append(ids, n.ID), append(depths, n.Depth)
		}
	}
	return ids, depths, res.Truncated, nil
}

// loaded refuses graph answers until the graph has been loaded once.
func (s *Service) loaded() error {
	if s.graph.ready.Load() {
		return nil
	}
	f := s.graph.Freshness()
	return &catalog.Error{Kind: catalog.ErrUnavailable, Message: fmt.Sprintf(
		"the lineage graph is still loading (%d edges among %d assets read so far); retry shortly", f.Edges, f.Nodes)}
}

// NodeID is a Marquez node ID: dataset:<namespace>:<name> or job:<namespace>:<name>.
func NodeID(s catalog.Summary) string {
	if s.Kind == catalog.KindJob {
		return "job:" + s.Namespace + ":" + s.Name
	}
	return "dataset:" + s.Namespace + ":" + s.Name
}

// ResolveNodeID finds the asset a Marquez node ID names. Namespaces hold colons
// (postgres://host:5432), so every split of "<namespace>:<name>" is tried; current names win
// over former ones, and a former name still finds its asset.
func (s *Service) ResolveNodeID(ctx context.Context, nodeID string) (uuid.UUID, error) {
	space, rest, err := parseNodeID(nodeID)
	if err != nil {
		return uuid.Nil, err
	}
	id, _, err := s.resolveSplit(ctx, space, rest, 1)
	if err != nil {
		return uuid.Nil, err
	}
	if id == uuid.Nil {
		typ, _, _ := strings.Cut(nodeID, ":")
		return uuid.Nil, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no %s is or was named %q", typ, rest)}
	}
	return id, nil
}

// parseNodeID splits a Marquez node ID into its name space and "<namespace>:<name>".
func parseNodeID(nodeID string) (catalog.Space, string, error) {
	typ, rest, ok := strings.Cut(nodeID, ":")
	if !ok || (typ != "dataset" && typ != "job") || rest == "" {
		return "", "", invalid("nodeId %q must look like dataset:<namespace>:<name> or job:<namespace>:<name>", truncate(nodeID, 128))
	}
	if typ == "job" {
		return catalog.SpaceJob, rest, nil
	}
	return catalog.SpaceDataset, rest, nil
}

// resolveSplit tries every way to split s into namespace:name[:tail...] where tail has tailParts
// - 1 further colon-separated parts kept whole in the returned tail (for datasetField IDs).
func (s *Service) resolveSplit(ctx context.Context, space catalog.Space, str string, tailParts int) (uuid.UUID, string, error) {
	type cand struct{ ns, name, tail string }
	var cands []cand
	for i := 0; i < len(str); i++ {
		if str[i] != ':' {
			continue
		}
		ns, rest := str[:i], str[i+1:]
		if tailParts == 1 {
			cands = append(cands, cand{ns, rest, ""})
			continue
		}
		for j := len(rest) - 1; j >= 0; j-- {
			if rest[j] == ':' {
				cands = append(cands, cand{ns, rest[:j], rest[j+1:]})
			}
		}
	}
	if tailParts == 1 { // current names from memory, as the graph knows them
		for _, c := range cands {
			if id, ok := s.graph.Named(space, c.ns, c.name); ok {
				return id, "", nil
			}
		}
	}
	var former *cand
	var formerID uuid.UUID
	for i, c := range cands {
		if catalog.ValidateName(c.ns, c.name) != nil {
			continue
		}
		ref, ok, err := s.cat.Lookup(ctx, space, c.ns, c.name)
		if err != nil {
			return uuid.Nil, "", err
		}
		if ok && !ref.Former {
			return ref.ID, c.tail, nil
		}
		if ok && former == nil {
			former, formerID = &cands[i], ref.ID
		}
	}
	if former != nil {
		return formerID, former.tail, nil
	}
	return uuid.Nil, "", nil
}

// SchemaField is a field of a dataset's schema facet.
type SchemaField struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// GraphNode is a node of the Marquez-shaped graph.
type GraphNode struct {
	catalog.Summary
	// FormerName and DeletedSince are as in Node (answers at a time only).
	FormerName   bool
	DeletedSince *time.Time
	NodeID       string
	Fields       []SchemaField
	Description  string
	InEdges      []string // node IDs of origins
	OutEdges     []string // node IDs of destinations
}

// MarquezGraph returns the graph around a node the way Marquez's /lineage does: both
// directions, depth hops, every job with all its inputs and outputs (a dataset's writer shows
// its other inputs too), every node with its in and out edges among the returned nodes.
// At most limit nodes are returned (whole levels; Truncated says when more exist).
func (s *Service) MarquezGraph(ctx context.Context, nodeID string, depth, limit int) ([]GraphNode, LineageResult, error) {
	id, err := s.ResolveNodeID(ctx, nodeID)
	if err != nil {
		return nil, LineageResult{}, err
	}
	res, err := s.walk(ctx, id, Both, depth, limit, true, false)
	if err != nil {
		return nil, LineageResult{}, err
	}
	nodes, err := s.graphNodes(ctx, res)
	return nodes, res, err
}

// graphNodes shapes a walk's answer as Marquez nodes, with their edges, fields and description.
func (s *Service) graphNodes(ctx context.Context, res LineageResult) ([]GraphNode, error) {
	var ids []uuid.UUID // the nodes with fields or a description to read: no read for the rest
	byID := map[uuid.UUID]*GraphNode{}
	nodes := make([]GraphNode, len(res.Nodes))
	for i, n := range res.Nodes {
		if n.Documented {
			ids = append(ids, n.ID)
		}
		nodes[i] = GraphNode{Summary: n.Summary, FormerName: n.FormerName, DeletedSince: n.DeletedSince, NodeID: NodeID(n.Summary),
			InEdges: []string{}, OutEdges: []string{}, Fields: []SchemaField{}}
	}
	for i := range nodes {
		byID[nodes[i].ID] = &nodes[i]
	}
	for _, e := range res.Edges {
		from, to := &nodes[e[0]], &nodes[e[1]]
		from.OutEdges = append(from.OutEdges, to.NodeID)
		to.InEdges = append(to.InEdges, from.NodeID)
	}
	facets, err := s.facets(ctx, ids, docFacets...)
	if err != nil {
		return nil, err
	}
	for id, fs := range facets {
		n := byID[id]
		var sch struct {
			Fields []SchemaField `json:"fields"`
		}
		if json.Unmarshal([]byte(fs["schema"]), &sch) == nil && sch.Fields != nil {
			n.Fields = sch.Fields
		}
		var doc documentationFacet
		if json.Unmarshal([]byte(fs["documentation"]), &doc) == nil {
			n.Description = doc.Description
		}
	}
	return nodes, nil
}

// facets returns the named facets of the assets, by asset and facet name.
func (s *Service) facets(ctx context.Context, ids []uuid.UUID, names ...string) (map[uuid.UUID]map[string]string, error) {
	out := map[uuid.UUID]map[string]string{}
	if !s.sqlite {
		return out, s.facetsPG(ctx, ids, names, out)
	}
	err := chunk.Each(ids, func(part []uuid.UUID) error {
		rows, err := s.db.AssetFacet.Query().Where(assetfacet.AssetIDIn(part...), assetfacet.NameIn(names...)).
			Select(assetfacet.FieldAssetID, assetfacet.FieldName, assetfacet.FieldValue).All(ctx)
		if err != nil {
			return fmt.Errorf("lineage: read facets: %w", err)
		}
		for _, r := range rows {
			if out[r.AssetID] == nil {
				out[r.AssetID] = map[string]string{}
			}
			out[r.AssetID][r.Name] = r.Value
		}
		return nil
	})
	return out, err
}

// facetsPGChunk bounds one statement's text (about 40 bytes an ID).
const facetsPGChunk = 10_000

// facetsPG is facets on PostgreSQL in one round trip per facetsPGChunk IDs: the IDs and names
// are written into the statement, because lib/pq sends a statement without parameters in one
// message (the simple protocol) and one with parameters in two round trips (parse, then bind).
// This is the only database read of the Marquez graph, where the second round trip was about a
// third of the answer's time. Writing them in is safe: a uuid.UUID prints only hex digits and
// dashes, and names are quoted with quote doubling (they are constants here anyway).
func (s *Service) facetsPG(ctx context.Context, ids []uuid.UUID, names []string, out map[uuid.UUID]map[string]string) error {
	var q strings.Builder
	for len(ids) > 0 {
		part := ids[:min(facetsPGChunk, len(ids))]
		ids = ids[len(part):]
		q.Reset()
		q.Grow(120 + 40*len(part) + 20*len(names))
		q.WriteString("SELECT asset_id, name, value FROM asset_facets WHERE asset_id = ANY('{")
		for i, id := range part {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString(id.String())
		}
		q.WriteString("}'::uuid[]) AND name IN (")
		for i, n := range names {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("'" + strings.ReplaceAll(n, "'", "''") + "'")
		}
		q.WriteString(")")
		if err := s.scanFacets(ctx, q.String(), out); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) scanFacets(ctx context.Context, q string, out map[uuid.UUID]map[string]string) error {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("lineage: read facets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var name, value string
		if err := rows.Scan(&id, &name, &value); err != nil {
			return fmt.Errorf("lineage: read facets: %w", err)
		}
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		out[id][name] = value
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lineage: read facets: %w", err)
	}
	return nil
}

// FieldRef names a column: an asset and a field of it.
type FieldRef struct {
	AssetID uuid.UUID
	Field   string
}

// ColumnInput is one input of a column, with how the column derives from it.
type ColumnInput struct {
	FieldRef
	TransformationType    string
	TransformationSubtype string
	Description           string
	Masking               bool
}

// ColumnNode is a column in a column-lineage answer.
type ColumnNode struct {
	FieldRef
	Dataset catalog.Summary
	Inputs  []ColumnInput
	In, Out []FieldRef // edges among the returned columns
}

// ColumnLineage walks column lineage from datasetField:<ns>:<name>:<field> (or every column of
// dataset:<ns>:<name>) upstream, and downstream too when withDownstream, depth hops.
func (s *Service) ColumnLineage(ctx context.Context, nodeID string, depth int, withDownstream bool) ([]ColumnNode, error) {
	if err := checkWalk(depth, 1, 1); err != nil {
		return nil, err
	}
	start, err := s.columnStart(ctx, nodeID)
	if err != nil {
		return nil, err
	}
	return s.columnWalk(ctx, start, truncate(nodeID, 128), depth, withDownstream)
}

// ColumnLineageOf is ColumnLineage for an asset known by ID: from its column field, or from
// every column of it with lineage when field is empty (no name to resolve).
func (s *Service) ColumnLineageOf(ctx context.Context, id uuid.UUID, field string, depth int, withDownstream bool) ([]ColumnNode, error) {
	if err := checkWalk(depth, 1, 1); err != nil {
		return nil, err
	}
	start := []FieldRef{{id, field}}
	if field == "" {
		var err error
		if start, err = s.datasetColumns(ctx, id); err != nil {
			return nil, err
		}
	}
	return s.columnWalk(ctx, start, id.String(), depth, withDownstream)
}

// columnWalk walks column lineage from start; what names the start in errors.
func (s *Service) columnWalk(ctx context.Context, start []FieldRef, what string, depth int, withDownstream bool) ([]ColumnNode, error) {

	nodes := map[FieldRef]*ColumnNode{}
	get := func(f FieldRef) *ColumnNode {
		if n := nodes[f]; n != nil {
			return n
		}
		n := &ColumnNode{FieldRef: f, Inputs: []ColumnInput{}, In: []FieldRef{}, Out: []FieldRef{}}
		nodes[f] = n
		return n
	}
	for _, f := range start {
		get(f)
	}
	linked := map[[2]FieldRef]bool{}
	link := func(in, out FieldRef, r *ent.ColumnEdge) {
		o := get(out)
		o.Inputs = append(o.Inputs, ColumnInput{FieldRef: in, TransformationType: r.TransformationType,
			TransformationSubtype: r.TransformationSubtype, Description: r.Description, Masking: r.Masking})
		if !linked[[2]FieldRef{in, out}] {
			linked[[2]FieldRef{in, out}] = true
			o.In = append(o.In, in)
			get(in).Out = append(get(in).Out, out)
		}
	}
	walk := func(down bool) error {
		frontier, seen := start, map[FieldRef]bool{}
		for _, f := range start {
			seen[f] = true
		}
		for d := 0; d < depth && len(frontier) > 0; d++ {
			var next []FieldRef
			for len(frontier) > 0 {
				n := min(200, len(frontier))
				var ors []predicate.ColumnEdge
				for _, f := range frontier[:n] {
					if down {
						ors = append(ors, columnedge.And(columnedge.InAssetID(f.AssetID), columnedge.InField(f.Field)))
					} else {
						ors = append(ors, columnedge.And(columnedge.OutAssetID(f.AssetID), columnedge.OutField(f.Field)))
					}
				}
				frontier = frontier[n:]
				rows, err := s.db.ColumnEdge.Query().Where(columnedge.Or(ors...)).All(ctx)
				if err != nil {
					return fmt.Errorf("lineage: column edges: %w", err)
				}
				for _, r := range rows {
					in, out := FieldRef{r.InAssetID, r.InField}, FieldRef{r.OutAssetID, r.OutField}
					link(in, out, r)
					other := in
					if down {
						other = out
					}
					if !seen[other] {
						seen[other] = true
						next = append(next, other)
					}
				}
				if len(nodes) > MaxColumns {
					return invalid("column lineage of %q reaches more than %d columns; lower depth", what, MaxColumns)
				}
			}
			frontier = next
		}
		return nil
	}
	if err := walk(false); err != nil {
		return nil, err
	}
	if withDownstream {
		if err := walk(true); err != nil {
			return nil, err
		}
	}
	var ids []uuid.UUID
	seenIDs := map[uuid.UUID]bool{}
	for f := range nodes {
		if !seenIDs[f.AssetID] {
			seenIDs[f.AssetID] = true
			ids = append(ids, f.AssetID)
		}
	}
	sums, err := s.cat.Summaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ColumnNode, 0, len(nodes))
	for _, n := range nodes {
		n.Dataset = sums[n.AssetID]
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b ColumnNode) int {
		return cmp.Or(cmp.Compare(a.Dataset.Namespace, b.Dataset.Namespace), cmp.Compare(a.Dataset.Name, b.Dataset.Name), cmp.Compare(a.Field, b.Field))
	})
	return out, nil
}

// columnStart resolves a column-lineage nodeId to the columns the walk starts from: one field,
// or every field of a dataset that has column lineage.
func (s *Service) columnStart(ctx context.Context, nodeID string) ([]FieldRef, error) {
	typ, rest, _ := strings.Cut(nodeID, ":")
	var start []FieldRef
	switch typ {
	case "datasetField":
		id, field, err := s.resolveSplit(ctx, catalog.SpaceDataset, rest, 2)
		if err != nil {
			return nil, err
		}
		if id == uuid.Nil || field == "" {
			return nil, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no dataset field is or was named %q", truncate(rest, 128))}
		}
		start = []FieldRef{{id, field}}
	case "dataset":
		id, err := s.ResolveNodeID(ctx, nodeID)
		if err != nil {
			return nil, err
		}
		return s.datasetColumns(ctx, id)
	default:
		return nil, invalid("nodeId %q must look like datasetField:<namespace>:<name>:<field> or dataset:<namespace>:<name>", truncate(nodeID, 128))
	}
	return start, nil
}

// datasetColumns returns the columns of a dataset that have column lineage.
func (s *Service) datasetColumns(ctx context.Context, id uuid.UUID) ([]FieldRef, error) {
	rows, err := s.db.ColumnEdge.Query().Where(columnedge.Or(columnedge.OutAssetID(id), columnedge.InAssetID(id))).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: column edges: %w", err)
	}
	set := map[FieldRef]bool{}
	for _, r := range rows {
		if r.OutAssetID == id {
			set[FieldRef{id, r.OutField}] = true
		}
		if r.InAssetID == id {
			set[FieldRef{id, r.InField}] = true
		}
	}
	start := make([]FieldRef, 0, len(set))
	for f := range set {
		start = append(start, f)
	}
	return start, nil
}

// RunInfo is a run as recorded.
type RunInfo struct {
	ID           string
	JobAssetID   uuid.UUID
	State        string
	StateTime    time.Time
	StartedAt    *time.Time
	EndedAt      *time.Time
	NominalStart *time.Time
	NominalEnd   *time.Time
	ParentRunID  string
	Facets       map[string]json.RawMessage
	EventCount   int
	CreatedAt    time.Time
	UpdatedAt    time.Time
	Inputs       []uuid.UUID
	Outputs      []uuid.UUID
}

// GetRun returns a run by its producer-assigned ID.
func (s *Service) GetRun(ctx context.Context, id string) (RunInfo, error) {
	r, err := s.db.Run.Get(ctx, id)
	if ent.IsNotFound(err) {
		return RunInfo{}, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("run %q is not known", truncate(id, 128))}
	}
	if err != nil {
		return RunInfo{}, fmt.Errorf("lineage: read run: %w", err)
	}
	runs, err := s.withIO(ctx, []*ent.Run{r})
	if err != nil {
		return RunInfo{}, err
	}
	return runs[0], nil
}

// RunsOf returns the newest runs of a job asset, or for a dataset the runs that read or wrote it.
func (s *Service) RunsOf(ctx context.Context, assetID uuid.UUID, limit int) ([]RunInfo, error) {
	a, err := s.cat.Get(ctx, assetID)
	if err != nil {
		return nil, err
	}
	q := s.db.Run.Query()
	if a.Kind == catalog.KindJob {
		q = q.Where(run.JobAssetID(assetID))
	} else {
		ids, err := s.db.RunIO.Query().Where(runio.AssetID(assetID)).Order(ent.Desc(runio.FieldFirstSeen)).
			Limit(limit * 2).Select(runio.FieldRunID).Strings(ctx)
		if err != nil {
			return nil, fmt.Errorf("lineage: runs of %s: %w", assetID, err)
		}
		q = q.Where(run.IDIn(ids...))
	}
	rows, err := q.Order(ent.Desc(run.FieldStateTime), ent.Desc(run.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: runs of %s: %w", assetID, err)
	}
	return s.withIO(ctx, rows)
}

// maxWriterCandidates bounds how many of an asset's output records WritersOf looks through.
const maxWriterCandidates = 1000

// WritersOf returns up to limit runs that wrote the asset while [from, to) lasted: a run that
// started before to and had not ended by from, or, without a start, whose state time falls in
// it. It looks through the asset's newest outputs first seen before to (at most
// maxWriterCandidates), so it answers for recent windows of a busy asset, not its whole past.
func (s *Service) WritersOf(ctx context.Context, assetID uuid.UUID, from, to time.Time, limit int) ([]RunInfo, error) {
	ids, err := s.db.RunIO.Query().Where(runio.AssetID(assetID), runio.RoleEQ(runio.RoleOutput), runio.FirstSeenLT(to)).
		Order(ent.Desc(runio.FieldFirstSeen)).Limit(maxWriterCandidates).Select(runio.FieldRunID).Strings(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: writers of %s: %w", assetID, err)
	}
	if len(ids) == 0 {
		return []RunInfo{}, nil
	}
	rows, err := s.db.Run.Query().Where(run.IDIn(ids...), run.Or(
		run.And(run.StartedAtNotNil(), run.StartedAtLT(to), run.Or(run.EndedAtIsNil(), run.EndedAtGTE(from))),
		run.And(run.StartedAtIsNil(), run.StateTimeGTE(from), run.StateTimeLT(to)))).
		Order(ent.Asc(run.FieldStateTime), ent.Asc(run.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: writers of %s: %w", assetID, err)
	}
	return s.withIO(ctx, rows)
}

func (s *Service) withIO(ctx context.Context, rows []*ent.Run) ([]RunInfo, error) {
	out := make([]RunInfo, len(rows))
	idx := map[string]int{}
	var ids []string
	for i, r := range rows {
		out[i] = RunInfo{ID: r.ID, JobAssetID: r.JobAssetID, State: string(r.State), StateTime: r.StateTime.UTC(),
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, NominalStart: r.NominalStart, NominalEnd: r.NominalEnd,
			ParentRunID: r.ParentRunID, Facets: r.Facets, EventCount: r.EventCount, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
			Inputs: []uuid.UUID{}, Outputs: []uuid.UUID{}}
		idx[r.ID] = i
		ids = append(ids, r.ID)
	}
	if len(ids) == 0 {
		return out, nil
	}
	ios, err := s.db.RunIO.Query().Where(runio.RunIDIn(ids...)).Order(ent.Asc(runio.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("lineage: run inputs and outputs: %w", err)
	}
	for _, io := range ios {
		r := &out[idx[io.RunID]]
		if io.Role == runio.RoleInput {
			r.Inputs = append(r.Inputs, io.AssetID)
		} else {
			r.Outputs = append(r.Outputs, io.AssetID)
		}
	}
	return out, nil
}

// Facet returns the latest stored value of one of an asset's OpenLineage facets (schema,
// documentation, ...), nil when it has none.
func (s *Service) Facet(ctx context.Context, id uuid.UUID, name string) (json.RawMessage, error) {
	f, err := s.db.AssetFacet.Query().Where(assetfacet.AssetID(id), assetfacet.Name(name)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lineage: facet %s of %s: %w", name, id, err)
	}
	return json.RawMessage(f.Value), nil
}
