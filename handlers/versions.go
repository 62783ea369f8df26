package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/lineage"
	"github.com/tidemark/tidemark/versions"
)

type versionJob struct {
	ID        uuid.UUID `json:"id"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
}

type versionRunEdge struct {
	RunID string     `json:"run_id"`
	Job   versionJob `json:"job"`
	// Label is how Tidemark knows the run read or produced this version: stated, reported or
	// inferred.
	Label    string    `json:"label"`
	Basis    string    `json:"basis"`
	Flagged  bool      `json:"flagged"` // a stated version the table never had
	Conflict string    `json:"conflict,omitempty"`
	At       time.Time `json:"at"`
}

type versionReader struct {
	Actor    string    `json:"actor"`
	Reads    int64     `json:"reads"`
	LastRead time.Time `json:"last_read"`
}

type versionReads struct {
	Reads    int64           `json:"reads"`
	Actors   int             `json:"actors"`
	LastRead *time.Time      `json:"last_read"`
	Readers  []versionReader `json:"readers"` // most reads first, at most 20
}

type versionProduced struct {
	Runs      []versionRunEdge `json:"runs"` // newest first, at most 20
	RunCount  int              `json:"run_count"`
	CommitID  *uuid.UUID       `json:"commit_id"`
	Principal string           `json:"principal"`
	// RunID is the run the commit's snapshot summary names (openlineage.run-id).
	RunID string `json:"run_id,omitempty"`
}

type versionReadBy struct {
	Runs     []versionRunEdge `json:"runs"` // newest first, at most 20
	RunCount int              `json:"run_count"`
	versionReads
}

type versionTimeTravel struct {
	// Since is when a newer version was first committed: reads of this one after it are time
	// travel. Null when none is newer, or when nothing dated this version.
	Since *time.Time `json:"since"`
	versionReads
}

type versionExpiry struct {
	At time.Time `json:"at"`
	By string    `json:"by"`
}

type versionResponse struct {
	AssetID        uuid.UUID         `json:"asset_id"`
	Version        string            `json:"version"`
	SnapshotID     *int64            `json:"snapshot_id"`
	Parent         string            `json:"parent"`
	SequenceNumber *int64            `json:"sequence_number"`
	Operation      string            `json:"operation"`
	Summary        map[string]string `json:"summary"`
	Principal      string            `json:"principal"`
	CommittedAt    *time.Time        `json:"committed_at"`
	FirstSeen      time.Time         `json:"first_seen"`
	Source         string            `json:"source"`
	SeenInTable    bool              `json:"seen_in_table"`
	Expired        *versionExpiry    `json:"expired"`
	ProducedBy     versionProduced   `json:"produced_by"`
	ReadBy         versionReadBy     `json:"read_by"`
	TimeTravel     versionTimeTravel `json:"time_travel"`
}

type versionsResponse struct {
	AssetID    uuid.UUID         `json:"asset_id"`
	Versions   []versionResponse `json:"versions"`
	NextCursor string            `json:"next_cursor,omitempty"`
}

type versionName struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type versionNode struct {
	AssetID   uuid.UUID `json:"asset_id"`
	Version   string    `json:"version"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	// NameThen is the name the asset held at the version's time, when it differs from now.
	NameThen    *versionName   `json:"name_then"`
	CommittedAt *time.Time     `json:"committed_at"`
	Expired     *versionExpiry `json:"expired"`
	Depth       int            `json:"depth"`
}

type versionKey struct {
	AssetID uuid.UUID `json:"asset_id"`
	Version string    `json:"version"`
}

type versionEdgeEnd struct {
	Label   string `json:"label"`
	Basis   string `json:"basis"`
	Flagged bool   `json:"flagged"`
}

type versionEdge struct {
	From   versionKey     `json:"from"`
	To     versionKey     `json:"to"`
	RunID  string         `json:"run_id"`
	Job    versionJob     `json:"job"`
	Input  versionEdgeEnd `json:"input"`  // the run's edge to the version it read
	Output versionEdgeEnd `json:"output"` // the run's edge to the version it produced
	// Flagged: either end is a stated version the table never had.
	Flagged bool `json:"flagged"`
}

type unknownVersionEdge struct {
	RunID   string     `json:"run_id"`
	Job     versionJob `json:"job"`
	AssetID uuid.UUID  `json:"asset_id"`
	Role    string     `json:"role"`
	Reason  string     `json:"reason"`
}

type unknownVersionEdges struct {
	// Count is how many run edges the walk met that name no version: it could not follow them.
	Count   int                  `json:"count"`
	AtLeast bool                 `json:"at_least"` // the count stopped at its bound
	Edges   []unknownVersionEdge `json:"edges"`    // the first 50
}

type versionLineageResponse struct {
	AssetID   uuid.UUID     `json:"asset_id"`
	Version   string        `json:"version"`
	Direction string        `json:"direction"`
	Depth     int           `json:"depth"`
	Nodes     []versionNode `json:"nodes"`
	Edges     []versionEdge `json:"edges"`
	// Truncated: the walk stopped at its bound (explanation says where).
	Truncated   bool   `json:"truncated"`
	Explanation string `json:"explanation,omitempty"`
	// MoreBeyondDepth: versions at the last depth asked have edges onward.
	MoreBeyondDepth bool                `json:"more_beyond_depth"`
	UnknownEdges    unknownVersionEdges `json:"unknown_edges"`
}

type derivedVersion struct {
	Version     string         `json:"version"`
	CommittedAt *time.Time     `json:"committed_at"`
	Expired     *versionExpiry `json:"expired"`
	Depth       int            `json:"depth"`
}

type currentVersion struct {
	Version     string     `json:"version"` // "" when the newest run output names no version
	From        string     `json:"from"`    // iceberg, committed or run
	CommittedAt *time.Time `json:"committed_at"`
	Derived     bool       `json:"derived"`
}

type producerInput struct {
	AssetID   uuid.UUID `json:"asset_id"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	Label     string    `json:"label"`
	Flagged   bool      `json:"flagged"`
	Derived   bool      `json:"derived"`
}

type producerRun struct {
	RunID  string          `json:"run_id"`
	Job    versionJob      `json:"job"`
	Label  string          `json:"label"`
	Inputs []producerInput `json:"inputs"`
}

type tableImpact struct {
	AssetID         uuid.UUID        `json:"asset_id"`
	Kind            string           `json:"kind"`
	Status          string           `json:"status"`
	Namespace       string           `json:"namespace"`
	Name            string           `json:"name"`
	Depth           int              `json:"depth"`
	DerivedVersions []derivedVersion `json:"derived_versions"`
	Current         *currentVersion  `json:"current"`
	// State: affected, recovered or unknown; Reason says why.
	State      string        `json:"state"`
	Reason     string        `json:"reason"`
	ProducedBy []producerRun `json:"produced_by"` // the runs that produced the current version
	Owners     []string      `json:"owners"`
}

type runToRepeat struct {
	RunID  string      `json:"run_id"`
	Job    versionJob  `json:"job"`
	Depth  int         `json:"depth"`
	Tables []uuid.UUID `json:"tables"`
}

type ownerToTell struct {
	Principal string      `json:"principal"`
	Kind      string      `json:"kind"`
	Tables    []uuid.UUID `json:"tables"`
}

type affectedReads struct {
	AssetID   uuid.UUID `json:"asset_id"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Version   string    `json:"version"`
	How       string    `json:"how"` // version (the read stated it) or while-current
	versionReads
}

type versionImpactResponse struct {
	AssetID uuid.UUID `json:"asset_id"`
	Version string    `json:"version"`
	Depth   int       `json:"depth"`
	// Tables are the downstream tables holding versions derived from this one, nearest first.
	Tables []tableImpact `json:"tables"`
	// Repeat are the runs that produced affected tables' current versions, in dependency order.
	Repeat          []runToRepeat       `json:"repeat"`
	Owners          []ownerToTell       `json:"owners"`
	Readers         []affectedReads     `json:"readers"`
	Truncated       bool                `json:"truncated"`
	Explanation     string              `json:"explanation,omitempty"`
	MoreBeyondDepth bool                `json:"more_beyond_depth"`
	UnknownEdges    unknownVersionEdges `json:"unknown_edges"`
}

func (a *API) versionRoutes() {
	if a.cfg.Versions == nil {
		return
	}
	base := "/api/v1/assets/:id/versions"
	versionParam := param{Name: "v", In: "path", Description: "the version: an Iceberg snapshot ID in decimal, or an OpenLineage datasetVersion (escaped)"}
	depthParam := param{Name: "depth", In: "query", Description: "runs to walk, 1-20, default 5"}
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base,
		Summary: "An asset's versions, newest first, each with the runs that produced and read it, its readers and its time-travel reads",
		Description: "Versions sort by commit time, newest first, versions nothing dated last. from and to bound the commit time " +
			"(from inclusive, to exclusive) and leave undated versions out. Each run edge carries its label: stated, reported or inferred.",
		Tag: "versions",
		Params: []param{{Name: "from", In: "query", Description: "RFC 3339: versions committed at or after"},
			{Name: "to", In: "query", Description: "RFC 3339: versions committed before"},
			{Name: "limit", In: "query", Description: "1-500, default 50"}, {Name: "cursor", In: "query", Description: "next_cursor of the previous page"}},
		Responses: map[int]any{200: versionsResponse{}, 400: Problem{}, 404: Problem{}},
	}, a.listVersions)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:v",
		Summary:   "One version of an asset, described as on the timeline",
		Tag:       "versions",
		Params:    []param{versionParam},
		Responses: map[int]any{200: versionResponse{}, 404: Problem{}},
	}, a.getVersion)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/:v/lineage",
		Summary: "A version's provenance (upstream: the input versions that built it, and theirs) or descendants (downstream: every version built from it)",
		Description: "Walks run edges level by level to depth runs. Edges name the run, its job and both ends' labels. " +
			"Edges that name no version cannot be followed: they are counted in unknown_edges. " +
			"Past 5,000 versions the walk stops and says truncated.",
		Tag: "versions",
		Params: []param{versionParam, {Name: "direction", In: "query", Description: "upstream or downstream (default)"},
			depthParam},
		Responses: map[int]any{200: versionLineageResponse{}, 400: Problem{}, 404: Problem{}},
	}, a.versionLineage)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/:v/impact",
		Summary: "The blast radius of a bad version: downstream tables affected, recovered or unknown, runs to repeat in order, owners, readers",
		Description: "A table is affected when its current version derives from this one; recovered when the run that produced " +
			"its current version is known, with every input version known and none derived from this one (nor reachable from " +
			"edges the walk could not follow); unknown otherwise.",
		Tag:       "versions",
		Params:    []param{versionParam, depthParam},
		Responses: map[int]any{200: versionImpactResponse{}, 400: Problem{}, 404: Problem{}},
	}, a.versionImpact)
}

// rfc3339Param reads an optional RFC 3339 time.
func rfc3339Param(c echo.Context, name string) (time.Time, error) {
	s := c.QueryParam(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badRequest(name, "%s %q is not an RFC 3339 time such as 2026-01-31T12:00:00Z", name, truncate(s, 40))
	}
	return t, nil
}

func (a *API) listVersions(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, versions.DefaultPage, versions.MaxPage)
	if err != nil {
		return err
	}
	from, err := rfc3339Param(c, "from")
	if err != nil {
		return err
	}
	to, err := rfc3339Param(c, "to")
	if err != nil {
		return err
	}
	scope := "versions:" + id.String() + ":" + c.QueryParam("from") + ":" + c.QueryParam("to")
	after, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	page, err := a.cfg.Versions.Timeline(c.Request().Context(), id, versions.TimelineQuery{From: from, To: to, After: after, Limit: limit})
	if err != nil {
		return err
	}
	out := versionsResponse{AssetID: id, Versions: make([]versionResponse, 0, len(page.Versions))}
	for _, v := range page.Versions {
		out.Versions = append(out.Versions, toVersionResponse(v))
	}
	if page.More && len(page.Versions) > 0 {
		out.NextCursor = encodeCursor(page.Versions[len(page.Versions)-1].ID, scope)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) getVersion(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	v, err := pathParam(c, "v")
	if err != nil {
		return err
	}
	ver, err := a.cfg.Versions.Get(c.Request().Context(), id, v)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toVersionResponse(ver))
}

// reserveVersions holds, in the lineage budget, the most versions a version walk collects (the
// versions package's cap; within one client's share): those answers grow with their nodes too.
func (a *API) reserveVersions(c echo.Context) (*lineage.Reservation, error) {
	if a.cfg.Lineage == nil {
		return nil, nil
	}
	return a.reserve(c, min(versions.DefaultMaxNodes, a.cfg.Lineage.Budget().PerClient()))
}

func (a *API) versionLineage(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	v, err := pathParam(c, "v")
	if err != nil {
		return err
	}
	dir, err := versions.ParseDirection(c.QueryParam("direction"))
	if err != nil {
		return err
	}
	depth, err := queryInt(c, "depth", versions.DefaultDepth, 1, versions.MaxDepth)
	if err != nil {
		return err
	}
	held, err := a.reserveVersions(c)
	if err != nil {
		return err
	}
	defer held.Release()
	g, err := a.cfg.Versions.Lineage(c.Request().Context(), id, v, dir, depth)
	if err != nil {
		return err
	}
	out := versionLineageResponse{AssetID: id, Version: v, Direction: string(g.Direction), Depth: g.Depth,
		Nodes: make([]versionNode, 0, len(g.Nodes)), Edges: make([]versionEdge, 0, len(g.Edges)),
		Truncated: g.Truncated, Explanation: g.Explanation, MoreBeyondDepth: g.MoreBeyondDepth, UnknownEdges: toUnknownEdges(g.Unknown)}
	for _, n := range g.Nodes {
		vn := versionNode{AssetID: n.AssetID, Version: n.Version, Kind: n.Kind, Status: n.Status, Namespace: n.Name.Namespace, Name: n.Name.Name,
			CommittedAt: n.CommittedAt, Expired: toExpiry(n.Expired), Depth: n.Depth}
		if n.NameThen != nil {
			vn.NameThen = &versionName{Namespace: n.NameThen.Namespace, Name: n.NameThen.Name}
		}
		out.Nodes = append(out.Nodes, vn)
	}
	for _, e := range g.Edges {
		out.Edges = append(out.Edges, versionEdge{From: versionKey(e.From), To: versionKey(e.To), RunID: e.RunID, Job: versionJob(e.Job),
			Input: versionEdgeEnd(e.Input), Output: versionEdgeEnd(e.Output), Flagged: e.Flagged})
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) versionImpact(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	v, err := pathParam(c, "v")
	if err != nil {
		return err
	}
	depth, err := queryInt(c, "depth", versions.DefaultDepth, 1, versions.MaxDepth)
	if err != nil {
		return err
	}
	held, err := a.reserveVersions(c)
	if err != nil {
		return err
	}
	defer held.Release()
	im, err := a.cfg.Versions.Impact(c.Request().Context(), id, v, depth)
	if err != nil {
		return err
	}
	out := versionImpactResponse{AssetID: id, Version: v, Depth: im.Depth, Tables: make([]tableImpact, 0, len(im.Tables)),
		Repeat: make([]runToRepeat, 0, len(im.Repeat)), Owners: make([]ownerToTell, 0, len(im.Owners)), Readers: make([]affectedReads, 0, len(im.Readers)),
		Truncated: im.Truncated, Explanation: im.Explanation, MoreBeyondDepth: im.MoreBeyondDepth, UnknownEdges: toUnknownEdges(im.Unknown)}
	for _, t := range im.Tables {
		ti := tableImpact{AssetID: t.AssetID, Kind: t.Kind, Status: t.Status, Namespace: t.Name.Namespace, Name: t.Name.Name, Depth: t.Depth,
			DerivedVersions: make([]derivedVersion, 0, len(t.Derived)), State: t.State, Reason: t.Reason,
			ProducedBy: make([]producerRun, 0, len(t.Producers)), Owners: t.Owners}
		for _, d := range t.Derived {
			ti.DerivedVersions = append(ti.DerivedVersions, derivedVersion{Version: d.Version, CommittedAt: d.CommittedAt, Expired: toExpiry(d.Expired), Depth: d.Depth})
		}
		if t.Current != nil {
			cv := currentVersion(*t.Current)
			ti.Current = &cv
		}
		for _, p := range t.Producers {
			pr := producerRun{RunID: p.RunID, Job: versionJob(p.Job), Label: p.Label, Inputs: make([]producerInput, 0, len(p.Inputs))}
			for _, in := range p.Inputs {
				pr.Inputs = append(pr.Inputs, producerInput{AssetID: in.AssetID, Namespace: in.Name.Namespace, Name: in.Name.Name, Version: in.Version,
					Label: in.Label, Flagged: in.Flagged, Derived: in.Derived})
			}
			ti.ProducedBy = append(ti.ProducedBy, pr)
		}
		out.Tables = append(out.Tables, ti)
	}
	for _, r := range im.Repeat {
		out.Repeat = append(out.Repeat, runToRepeat{RunID: r.RunID, Job: versionJob(r.Job), Depth: r.Depth, Tables: r.Tables})
	}
	for _, o := range im.Owners {
		out.Owners = append(out.Owners, ownerToTell(o))
	}
	for _, r := range im.Readers {
		out.Readers = append(out.Readers, affectedReads{AssetID: r.AssetID, Namespace: r.Name.Namespace, Name: r.Name.Name, Version: r.Version,
			How: r.How, versionReads: toVersionReads(r.Reads)})
	}
	return c.JSON(http.StatusOK, out)
}

func toVersionResponse(v versions.Version) versionResponse {
	out := versionResponse{AssetID: v.AssetID, Version: v.Version, SnapshotID: v.SnapshotID, Parent: v.Parent, SequenceNumber: v.SequenceNumber,
		Operation: v.Operation, Summary: v.Summary, Principal: v.Principal, CommittedAt: v.CommittedAt, FirstSeen: v.FirstSeen,
		Source: v.Source, SeenInTable: v.SeenInTable, Expired: toExpiry(v.Expired),
		ProducedBy: versionProduced{Runs: toRunEdges(v.ProducedBy.Runs), RunCount: v.ProducedBy.RunCount, CommitID: v.ProducedBy.CommitID,
			Principal: v.ProducedBy.Principal, RunID: v.ProducedBy.RunID},
		ReadBy:     versionReadBy{Runs: toRunEdges(v.ReadBy.Runs), RunCount: v.ReadBy.RunCount, versionReads: toVersionReads(v.ReadBy.Reads)},
		TimeTravel: versionTimeTravel{Since: v.TimeTravel.Since, versionReads: toVersionReads(v.TimeTravel.Reads)}}
	if out.Summary == nil {
		out.Summary = map[string]string{}
	}
	return out
}

func toRunEdges(es []versions.RunEdge) []versionRunEdge {
	out := make([]versionRunEdge, 0, len(es))
	for _, e := range es {
		out = append(out, versionRunEdge{RunID: e.RunID, Job: versionJob(e.Job), Label: e.Label, Basis: e.Basis, Flagged: e.Flagged,
			Conflict: e.Conflict, At: e.At})
	}
	return out
}

func toVersionReads(r versions.Reads) versionReads {
	out := versionReads{Reads: r.Reads, Actors: r.Actors, LastRead: r.LastRead, Readers: make([]versionReader, 0, len(r.Readers))}
	for _, x := range r.Readers {
		out.Readers = append(out.Readers, versionReader(x))
	}
	return out
}

func toExpiry(e *versions.Expiry) *versionExpiry {
	if e == nil {
		return nil
	}
	return &versionExpiry{At: e.At, By: e.By}
}

func toUnknownEdges(u versions.UnknownEdges) unknownVersionEdges {
	out := unknownVersionEdges{Count: u.Count, AtLeast: u.AtLeast, Edges: make([]unknownVersionEdge, 0, len(u.Edges))}
	for _, e := range u.Edges {
		out.Edges = append(out.Edges, unknownVersionEdge{RunID: e.RunID, Job: versionJob(e.Job), AssetID: e.AssetID, Role: e.Role, Reason: e.Reason})
	}
	return out
}
