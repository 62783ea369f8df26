package web

// Versions in the UI: the asset page's timeline of versions (versions.Timeline), and the
// version page: a version's facts, its provenance and its blast radius, drawn by the lineage
// graph's script (static/lineage.js, which collapses wide fan-outs into groups).

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/versions"
)

func init() {
	funcs["plural"] = plural
	funcs["seg"] = url.PathEscape
	funcs["readsText"] = readsText
	funcs["travelText"] = travelText
	funcs["versionHref"] = versionHref
	funcs["summaryText"] = summaryText
	funcs["actor"] = actorName
	// more is how many of total a list of shown leaves out (0 when none).
	funcs["more"] = func(total, shown int) int { return max(total-shown, 0) }
}

// versionsPage is how many versions the asset page shows at once.
const versionsPage = 10

// versionGraphLimit bounds the nodes the version page sends to the browser, which draws wide
// fan-outs as groups; past it the nearest nodes are drawn and the page says how many are not.
const versionGraphLimit = 1000

// plural is a count with its noun: "1 read", "3 reads" ("reader" takes an s).
func plural(n any, noun string) string {
	var k int64
	switch v := n.(type) {
	case int:
		k = int64(v)
	case int64:
		k = v
	}
	if k == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ay"):
		noun = noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"):
		noun += "es"
	default:
		noun += "s"
	}
	return strconv.FormatInt(k, 10) + " " + noun
}

// readsText says a version's reads in prose: "3 reads by 2 readers, last 2026-03-02 04:00 UTC".
func readsText(r versions.Reads) string {
	if r.Reads == 0 {
		return "no reads recorded"
	}
	s := plural(r.Reads, "read") + " by " + plural(r.Actors, "reader")
	if r.LastRead != nil {
		s += ", last " + when(*r.LastRead)
	}
	return s
}

// travelText says a version's time-travel reads: those made once a newer version was current.
func travelText(t versions.TimeTravel) string {
	if t.Since == nil || t.Reads.Reads == 0 {
		return ""
	}
	return plural(t.Reads.Reads, "time-travel read") + " (made after " + when(*t.Since) + ", when a newer version was current)"
}

// actorName names a reader; usage from a run's events, posted without a token, names none.
func actorName(a string) string {
	if a == "" {
		return "unnamed reader"
	}
	return a
}

// summaryText is a snapshot summary's counts, the ones a person looks at first.
func summaryText(m map[string]string) string {
	var parts []string
	for _, k := range []struct{ key, noun, what string }{
		{"added-records", "record", " added"}, {"deleted-records", "record", " deleted"}, {"added-data-files", "data file", " added"},
		{"deleted-data-files", "data file", " removed"}, {"total-records", "record", " in all"},
	} {
		v, ok := m[k.key]
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			parts = append(parts, plural(n, k.noun)+k.what)
		} else {
			parts = append(parts, v+" "+k.noun+"s"+k.what)
		}
	}
	return strings.Join(parts, ", ")
}

func versionHref(asset uuid.UUID, version string) string {
	return "/assets/" + asset.String() + "/versions/" + url.PathEscape(version)
}

// versionsView is the asset page's versions section.
type versionsView struct {
	Versions []versions.Version
	Older    string // the link to the next page of older versions, "" on the last page
	Newest   string // the link back to the newest, when this page continues the timeline
	Note     string // why the page shows the newest versions rather than where the link pointed
}

// versionsParts reads the asset page's page of versions, newest first: from the place the
// "older versions" link names (versions_after, the last version of the page before).
func (u *UI) versionsParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	if u.cfg.Versions == nil || d.Asset.Kind == catalog.KindJob {
		return
	}
	ctx, id := r.Context(), d.Asset.ID
	g.Go(func() error {
		v := &versionsView{}
		q := versions.TimelineQuery{Limit: versionsPage}
		after := r.URL.Query().Get("versions_after")
		if after != "" {
			if q.After, _ = uuid.Parse(after); q.After == uuid.Nil {
				v.Note = "That link's place in the timeline is not one this page can continue from; these are the newest versions."
			}
		}
		p, err := u.cfg.Versions.Timeline(ctx, id, q)
		if errors.Is(err, catalog.ErrInvalid) && q.After != uuid.Nil {
			// A cursor of another asset's timeline, or of a version gone since: start again.
			v.Note = "That link's place in the timeline is not a version of this asset any more; these are the newest versions."
			q.After = uuid.Nil
			p, err = u.cfg.Versions.Timeline(ctx, id, q)
		}
		if miss("the versions", err) {
			return nil
		}
		v.Versions = p.Versions
		link := func(after string) string {
			qs := r.URL.Query()
			qs.Del("versions_after")
			qs.Del("flash")
			if after != "" {
				qs.Set("versions_after", after)
			}
			if e := qs.Encode(); e != "" {
				return "?" + e + "#versions-h"
			}
			return "/assets/" + id.String() + "#versions-h"
		}
		if p.More && len(p.Versions) > 0 {
			v.Older = link(p.Versions[len(p.Versions)-1].ID.String())
		}
		if q.After != uuid.Nil {
			v.Newest = link("")
		}
		d.Versions = v
		return nil
	})
}

// nodeNames names each version's table in a walk: "namespace.name", with the name it had at
// the version's time when that differs.
func nodeNames(g versions.Graph) map[versions.Key]string {
	out := make(map[versions.Key]string, len(g.Nodes))
	for _, n := range g.Nodes {
		s := n.Name.Namespace + "." + n.Name.Name
		if n.NameThen != nil {
			s += " (then " + n.NameThen.Namespace + "." + n.NameThen.Name + ")"
		}
		out[n.Key] = s
	}
	return out
}

// stateCounts counts the downstream tables of an impact by state.
type stateCounts struct{ Affected, Recovered, Unknown int }

// versionPageData is the version page.
type versionPageData struct {
	Asset catalog.Asset
	V     string
	// Version is the version's record; nil when no table showed it and only runs name it.
	Version *versions.Version
	Depth   int
	Depths  []int
	Up      versions.Graph
	Down    versions.Graph
	Impact  versions.Impact
	Graph   graphData
	Cut     int // nodes the graph leaves out (past versionGraphLimit)
	Counts  stateCounts
	Names   map[uuid.UUID]string // downstream tables' names, for the runs to repeat
	UpNames map[versions.Key]string
	// LineageAt links the asset's lineage as it stood at the version's time.
	LineageAt string
}

// versionPage shows a version: its facts, what built it and what it poisoned.
func (u *UI) versionPage(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID"})
		return
	}
	v := r.PathValue("v")
	if u.cfg.Versions == nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrNotFound, Message: "This server does not keep versions."})
		return
	}
	ctx := r.Context()
	a, err := u.cfg.Catalog.Get(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := versionPageData{Asset: a, V: v, Depth: versions.DefaultDepth, Depths: []int{1, 2, 3, 5, 8, 10, 15, 20}}
	if s := r.URL.Query().Get("depth"); s != "" {
		if d.Depth, err = strconv.Atoi(s); err != nil || d.Depth < 1 || d.Depth > versions.MaxDepth {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "depth", Message: fmt.Sprintf("depth must be a number from 1 to %d (runs away from the version)", versions.MaxDepth)})
			return
		}
	}
	// The page walks three times (upstream, downstream, impact): it holds each walk's most
	// versions in the lineage budget until the page is written, as the API does for one.
	if u.cfg.Lineage != nil {
		held, err := u.cfg.Lineage.Reserve(ctx, u.client(r), min(3*versions.DefaultMaxNodes, u.cfg.Lineage.Budget().PerClient()))
		if err != nil {
			u.fail(w, r, err)
			return
		}
		defer held.Release()
	}
	// The four reads are independent: they run at once. A version no table showed but a run
	// names still has lineage, so a missing record alone is not a 404.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		ver, err := u.cfg.Versions.Get(gctx, id, v)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil
		}
		if err == nil {
			d.Version = &ver
		}
		return err
	})
	g.Go(func() (err error) {
		d.Up, err = u.cfg.Versions.Lineage(gctx, id, v, versions.Upstream, d.Depth)
		return err
	})
	g.Go(func() (err error) {
		d.Down, err = u.cfg.Versions.Lineage(gctx, id, v, versions.Downstream, d.Depth)
		return err
	})
	g.Go(func() (err error) {
		d.Impact, err = u.cfg.Versions.Impact(gctx, id, v, d.Depth)
		return err
	})
	if err := g.Wait(); err != nil {
		u.fail(w, r, err)
		return
	}
	d.Names = map[uuid.UUID]string{}
	for _, t := range d.Impact.Tables {
		d.Names[t.AssetID] = t.Name.Namespace + "." + t.Name.Name
		switch t.State {
		case versions.Affected:
			d.Counts.Affected++
		case versions.Recovered:
			d.Counts.Recovered++
		default:
			d.Counts.Unknown++
		}
	}
	d.UpNames = nodeNames(d.Up)
	d.Graph, d.Cut = versionGraph(a, v, d.Up, d.Down, d.Impact)
	if d.Version != nil && d.Version.CommittedAt != nil && !d.Version.CommittedAt.Before(lineage.EarliestAt) {
		d.LineageAt = "/assets/" + id.String() + "?" + url.Values{"at": {d.Version.CommittedAt.UTC().Format(time.RFC3339)}}.Encode() + "#lineage-h"
	}
	u.render(w, r, http.StatusOK, "version", a.Name+" version "+v, d)
}

// versionGraph draws a version's provenance (upstream) and descendants (downstream) the way
// the asset page draws lineage: a node per table (its versions in its details) and per job
// between them, each with the node it was reached from, so the browser collapses wide
// fan-outs into groups. Downstream tables carry their state (affected, recovered, unknown) in
// colour and in words; jobs with a run to repeat carry their place in the order. It returns
// the graph and how many nodes it left out past versionGraphLimit, nearest kept first.
func versionGraph(a catalog.Asset, v string, up, down versions.Graph, im versions.Impact) (graphData, int) {
	b := &graphBuilder{at: map[string]int{}}
	rootID := a.ID.String()
	b.node(graphNodeData{ID: rootID, Label: a.Name, Namespace: a.Namespace, Kind: string(a.Kind), Href: versionHref(a.ID, v),
		Root: true, Side: "root", Note: "version " + v, Detail: "The version this page is about."})
	states := map[uuid.UUID]versions.TableImpact{}
	for _, t := range im.Tables {
		states[t.AssetID] = t
	}
	steps := map[uuid.UUID]int{} // a job's first place in the order of runs to repeat
	for i, rr := range im.Repeat {
		if _, ok := steps[rr.Job.ID]; !ok {
			steps[rr.Job.ID] = i + 1
		}
	}
	for _, side := range []struct {
		g    versions.Graph
		name string
	}{{up, "upstream"}, {down, "downstream"}} {
		dist := map[versions.Key]int{}
		vers := map[string][]string{} // a table node's versions, in walk order
		nodeOf := func(k versions.Key) string {
			if k == side.g.Root {
				return rootID
			}
			return side.name + ":" + k.AssetID.String()
		}
		for _, n := range side.g.Nodes {
			dist[n.Key] = n.Depth
			if n.Key == side.g.Root {
				continue
			}
			id := nodeOf(n.Key)
			vers[id] = append(vers[id], n.Version)
			if _, ok := b.at[id]; ok {
				continue
			}
			nd := graphNodeData{ID: id, Label: n.Name.Name, Namespace: n.Name.Namespace, Kind: n.Kind, Href: versionHref(n.AssetID, n.Version),
				Depth: 2 * n.Depth, Side: side.name}
			if n.NameThen != nil {
				nd.Detail = "Then named " + n.NameThen.Namespace + "." + n.NameThen.Name + ". "
			}
			if side.name == "downstream" {
				if t, ok := states[n.AssetID]; ok {
					nd.State = t.State
					nd.Note = stateWord(t.State)
					nd.Detail += stateWord(t.State) + ": " + t.Reason + "."
				}
			}
			b.node(nd)
		}
		// Upstream, the versions that built this one; downstream, those derived from it (a
		// recovered table's current version is another: its details say which).
		what := "version"
		if side.name == "downstream" {
			what = "derived"
		}
		for id, vs := range vers {
			n := &b.nodes[b.at[id]].Data
			if len(vs) == 1 {
				n.Note = strings.TrimPrefix(n.Note+" · "+what+" "+vs[0], " · ")
			} else {
				n.Note = strings.TrimPrefix(n.Note+" · "+plural(len(vs), what+" version"), " · ")
				n.Detail += " Versions reached: " + strings.Join(vs, ", ") + "."
			}
			n.Detail = strings.TrimSpace(n.Detail)
		}
		for _, e := range side.g.Edges {
			from, to := nodeOf(e.From), nodeOf(e.To)
			near, far := e.From, e.To // downstream: the walk reached the run from its input
			if side.name == "upstream" {
				near, far = e.To, e.From
			}
			jobID := side.name + "-job:" + e.Job.ID.String()
			if e.Job.ID == uuid.Nil {
				jobID = side.name + "-run:" + e.RunID
			}
			depth := 2*dist[far] - 1
			if _, ok := b.at[jobID]; !ok {
				label := e.Job.Name
				if label == "" {
					label = "run " + e.RunID
				}
				nd := graphNodeData{ID: jobID, Label: label, Namespace: e.Job.Namespace, Kind: string(catalog.KindJob), Depth: depth, Side: side.name}
				if e.Job.ID != uuid.Nil {
					nd.Href = "/assets/" + e.Job.ID.String()
				}
				if step, ok := steps[e.Job.ID]; ok && side.name == "downstream" && e.Job.ID != uuid.Nil {
					nd.State, nd.Note = "repeat", fmt.Sprintf("repeat: step %d", step)
					nd.Detail = fmt.Sprintf("Step %d of the runs to repeat: a run of this job produced the current version of an affected table.", step)
				}
				b.node(nd)
			}
			if e.Flagged {
				n := &b.nodes[b.at[jobID]].Data
				if !strings.Contains(n.Detail, "flagged") {
					n.Detail = strings.TrimSpace(n.Detail + " ⚠ A run of it states a version the table never had (flagged).")
				}
			}
			b.parent(jobID, nodeOf(near), depth)
			b.parent(nodeOf(far), jobID, depth+1)
			b.edge(from, jobID)
			b.edge(jobID, to)
		}
	}
	return b.capped(versionGraphLimit)
}

// stateWord is a downstream table's state in words.
func stateWord(state string) string {
	if state == versions.StateUnknown {
		return "state unknown"
	}
	return state
}

// graphBuilder collects a graph's nodes and edges once each.
type graphBuilder struct {
	nodes []graphNode
	edges []graphEdge
	at    map[string]int
	seen  map[[2]string]bool
}

func (b *graphBuilder) node(d graphNodeData) {
	b.at[d.ID] = len(b.nodes)
	b.nodes = append(b.nodes, graphNode{Data: d})
}

// parent records that node was reached from parent, when parent lies one level nearer the
// root (the grouping in the browser keys on it).
func (b *graphBuilder) parent(node, parent string, depth int) {
	i, ok := b.at[node]
	j, pok := b.at[parent]
	if !ok || !pok {
		return
	}
	n := &b.nodes[i].Data
	if n.Parent == "" && !n.Root && n.Depth == depth && b.nodes[j].Data.Depth == depth-1 {
		n.Parent = parent
	}
}

func (b *graphBuilder) edge(from, to string) {
	if b.seen == nil {
		b.seen = map[[2]string]bool{}
	}
	if k := [2]string{from, to}; !b.seen[k] {
		b.seen[k] = true
		b.edges = append(b.edges, graphEdge{Data: graphEdgeData{Source: from, Target: to}})
	}
}

// capped keeps the limit nearest nodes (the root first) and the edges between them.
func (b *graphBuilder) capped(limit int) (graphData, int) {
	g := graphData{Nodes: b.nodes, Edges: b.edges}
	if len(g.Nodes) <= limit {
		return g, 0
	}
	nodes := slices.Clone(g.Nodes)
	slices.SortStableFunc(nodes, func(x, y graphNode) int {
		switch {
		case x.Data.Root != y.Data.Root:
			if x.Data.Root {
				return -1
			}
			return 1
		}
		return x.Data.Depth - y.Data.Depth
	})
	cut := len(nodes) - limit
	nodes = nodes[:limit]
	keep := map[string]bool{}
	for _, n := range nodes {
		keep[n.Data.ID] = true
	}
	var edges []graphEdge
	for _, e := range g.Edges {
		if keep[e.Data.Source] && keep[e.Data.Target] {
			edges = append(edges, e)
		}
	}
	return graphData{Nodes: nodes, Edges: edges}, cut
}

// parseAt reads the lineage section's at: RFC 3339 (links), or the datetime input's
// 2006-01-02T15:04[:05], read as UTC.
func parseAt(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return time.Time{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "at", Message: fmt.Sprintf(
		"%q is not a time the lineage can be shown at: pick one in the date and time field (UTC), or write it as 2026-01-31T12:00 (UTC) or 2026-01-31T12:00:00Z", s)}
}
