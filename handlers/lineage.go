package handlers

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/lineage"
)

// DefaultLineageBodyLimit bounds an OpenLineage request, compressed or not (4 MiB: a batch of a
// hundred Spark events with column lineage fits; a runaway producer does not).
const DefaultLineageBodyLimit = 4 << 20

// MaxBatchEvents bounds the events in one batch request.
const MaxBatchEvents = 1000

type ingestResponse struct {
	Status   string    `json:"status"` // created or duplicate
	EventID  uuid.UUID `json:"event_id"`
	Kind     string    `json:"kind"`
	Warnings []string  `json:"warnings,omitempty"`
}

type batchSummary struct {
	Received   int `json:"received"`
	Successful int `json:"successful"`
	Failed     int `json:"failed"`
}

type failedEvent struct {
	Index     int    `json:"index"`
	Reason    string `json:"reason"`
	Retriable bool   `json:"retriable"`
}

type batchResponse struct {
	Status       string        `json:"status"` // success, partial_success or failure (a 503 for the whole batch is a problem document)
	Summary      batchSummary  `json:"summary"`
	FailedEvents []failedEvent `json:"failed_events"`
}

type lineageNode struct {
	ID        uuid.UUID `json:"id"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Depth     int       `json:"depth"`
	// With at only: the name shown is the one the asset held then and holds no longer (renamed
	// or deleted since).
	FormerName bool `json:"former_name,omitempty"`
	// With at only: the asset was deleted after at, at this time (status is its status now).
	DeletedSince *time.Time `json:"deleted_since,omitempty"`
}

type lineageEdge struct {
	From uuid.UUID `json:"from"`
	To   uuid.UUID `json:"to"`
}

type graphFreshness struct {
	// SyncedAt: edges other replicas wrote before this time are included; this replica's own
	// writes are included at once.
	SyncedAt time.Time `json:"synced_at"`
	LagMS    int64     `json:"lag_ms"`
	Nodes    int       `json:"nodes"`
	Edges    int       `json:"edges"`
}

type assetLineageResponse struct {
	Root      uuid.UUID `json:"root"`
	Direction string    `json:"direction"`
	Depth     int       `json:"depth"`
	// At is the time asked for (at=): the answer is the graph as it stood then.
	At              *time.Time     `json:"at,omitempty"`
	Nodes           []lineageNode  `json:"nodes"`
	Edges           []lineageEdge  `json:"edges"`
	Truncated       bool           `json:"truncated"`
	ReachedPerDepth []int          `json:"reached_per_depth"`
	Graph           graphFreshness `json:"graph"`
	// Relations of the root that are not data flow: migrated_to, from a dataset migration.
	Relations []relationResponse `json:"relations"`
}

type relationResponse struct {
	From uuid.UUID `json:"from"`
	To   uuid.UUID `json:"to"`
	Kind string    `json:"kind"`
	Ref  uuid.UUID `json:"ref"` // the migration
}

func toRelations(rs []lineage.Relation) []relationResponse {
	out := make([]relationResponse, 0, len(rs))
	for _, r := range rs {
		out = append(out, relationResponse(r))
	}
	return out
}

type marquezEdge struct {
	Origin      string `json:"origin"`
	Destination string `json:"destination"`
}

type marquezDatasetID struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type marquezField struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Tags        []string `json:"tags"`
	Description string   `json:"description"`
}

type marquezData struct {
	ID           marquezDatasetID `json:"id"`
	Type         string           `json:"type"`
	Name         string           `json:"name"`
	PhysicalName string           `json:"physicalName"`
	Namespace    string           `json:"namespace"`
	CreatedAt    time.Time        `json:"createdAt"`
	UpdatedAt    time.Time        `json:"updatedAt"`
	Fields       []marquezField   `json:"fields"`
	Tags         []string         `json:"tags"`
	Description  string           `json:"description"`
	AssetID      uuid.UUID        `json:"assetId"` // Tidemark's stable ID
	Status       string           `json:"status"`
	// With at only (Tidemark's additions): the name is one the asset held then and holds no
	// longer; the asset was deleted after at, at this time.
	FormerName   bool       `json:"formerName,omitempty"`
	DeletedSince *time.Time `json:"deletedSince,omitempty"`
}

type marquezNode struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Data     marquezData   `json:"data"`
	InEdges  []marquezEdge `json:"inEdges"`
	OutEdges []marquezEdge `json:"outEdges"`
}

type marquezGraphResponse struct {
	Graph     []marquezNode  `json:"graph"`
	Truncated bool           `json:"truncated"`
	Freshness graphFreshness `json:"freshness"`
	// At is the time asked for (at=): the graph as it stood then, node IDs from the names of then.
	At *time.Time `json:"at,omitempty"`
}

func (a *API) lineageRoutes() {
	if a.cfg.Lineage == nil {
		return
	}
	const base = "/api/v1"
	limit := a.cfg.LineageBodyLimit
	a.handle(operation{
		Method:     http.MethodPost,
		Path:       base + "/lineage",
		Summary:    "Ingest one OpenLineage event (RunEvent, DatasetEvent or JobEvent; gzip accepted)",
		Tag:        "lineage",
		BodyLimit:  limit,
		Body:       map[string]any{},
		BodySchema: openLineageEventSchema,
		Responses:  map[int]any{201: ingestResponse{}, 200: ingestResponse{}},
	}, a.ingestLineage)
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        base + "/lineage/batch",
		Summary:     "Ingest a JSON array of OpenLineage events",
		Description: batchAtomicity,
		Tag:         "lineage",
		BodyLimit:   limit,
		Body:        []map[string]any{},
		BodySchema:  map[string]any{"type": "array", "maxItems": 1000, "items": openLineageEventSchema},
		Responses:   map[int]any{200: batchResponse{}, 400: batchResponse{}},
	}, a.ingestLineageBatch)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/lineage",
		Summary: "Marquez-shaped lineage graph around a node",
		Tag:     "lineage",
		Params: []param{
			{Name: "nodeId", In: "query", Required: true, Description: "dataset:<namespace>:<name> or job:<namespace>:<name>; former names work"},
			{Name: "depth", In: "query", Description: "hops, 1-20, default 20; every job in the answer comes with all its inputs and outputs, as in Marquez"},
			{Name: "limit", In: "query", Description: "most nodes to return (whole levels), 1 to the server's cap (--lineage-max-nodes, and no more than --lineage-budget-per-client), default 1000; truncated says when more exist. Under load a 503 with Retry-After: retry then"},
			{Name: "at", In: "query", Description: atParamDoc + " nodeId names the asset that held the name then (failing that, as without at); node IDs use the names of then."},
		},
		Responses: map[int]any{200: marquezGraphResponse{}},
	}, a.marquezLineage)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/assets/:id/lineage",
		Summary: "Upstream/downstream lineage of an asset, keyed on IDs",
		Tag:     "lineage",
		Params: []param{
			{Name: "direction", In: "query", Description: "upstream, downstream or both (default)"},
			{Name: "depth", In: "query", Description: "1-20, default 3"},
			{Name: "limit", In: "query", Description: "most nodes to return, 1 to the server's cap (--lineage-max-nodes, and no more than --lineage-budget-per-client), default 1000; under load a 503 with Retry-After"},
			{Name: "at", In: "query", Description: atParamDoc},
		},
		Responses: map[int]any{200: assetLineageResponse{}},
	}, a.assetLineage)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/assets/:id/lineage/compact",
		Summary: "Lineage of an asset in a compact form for big neighbourhoods",
		Description: "Each node once as an array [id, kind, status, namespace, name, depth] (the start first, then by depth); edges as [from, to] indexes into nodes. " +
			"Written as it is encoded. limit defaults to the server's cap (--lineage-max-nodes); levels are kept whole, so a truncated answer covers the depths it returns completely.",
		Tag: "lineage",
		Params: []param{
			{Name: "direction", In: "query", Description: "upstream, downstream or both (default)"},
			{Name: "depth", In: "query", Description: "1-20, default 3"},
			{Name: "limit", In: "query", Description: "most nodes to return, 1 to the server's cap (the default)"},
			{Name: "at", In: "query", Description: atParamDoc + " Each node then has two more elements: former_name and deleted_since."},
		},
		Responses: map[int]any{200: compactLineageResponse{}},
	}, a.compactLineage)
	a.columnLineageRoutes()
	a.runRoutes()
}

// readLineageBody returns the request body, decompressed when Content-Encoding is gzip, refusing
// more than limit bytes after decompression (a gzip bomb is a 413, not an outage).
func readLineageBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	if err := requireJSON(r); err != nil {
		return nil, err
	}
	var body io.Reader = r.Body
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, err
			}
			return nil, badRequest("Content-Encoding", "body is not valid gzip: %v", err)
		}
		defer gz.Close()
		body = gz
	default:
		return nil, newProblem(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Encoding %q is not supported; send gzip or nothing", enc))
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, badRequest("", "cannot read the body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("decompressed body exceeds the limit of %d bytes", limit))
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil, badRequest("", "request body is empty; send an OpenLineage event")
	}
	if err := checkText(b); err != nil {
		return nil, err
	}
	return b, nil
}

func (a *API) ingestLineage(c echo.Context) error {
	body, err := readLineageBody(c, a.cfg.LineageBodyLimit)
	if err != nil {
		return err
	}
	res, err := a.cfg.Lineage.Ingest(c.Request().Context(), body)
	if err != nil {
		if toProblem(err).Status < 500 {
			a.lineageEvents.WithLabelValues("refused").Inc()
		}
		return err
	}
	out := ingestResponse{Status: "created", EventID: res.EventID, Kind: string(res.Kind), Warnings: res.Warnings}
	status := http.StatusCreated
	if res.Duplicate {
		out.Status, status = "duplicate", http.StatusOK
	}
	a.lineageEvents.WithLabelValues(out.Status).Inc()
	return c.JSON(status, out)
}

func (a *API) ingestLineageBatch(c echo.Context) error {
	body, err := readLineageBody(c, a.cfg.LineageBodyLimit)
	if err != nil {
		return err
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(body, &raws); err != nil {
		return badRequest("", "batch body must be a JSON array of OpenLineage events: %v", err)
	}
	if len(raws) > MaxBatchEvents {
		return badRequest("", "batch holds %d events; the limit is %d: split it", len(raws), MaxBatchEvents)
	}
	out := batchResponse{Summary: batchSummary{Received: len(raws)}, FailedEvents: []failedEvent{}}
	bodies := make([][]byte, len(raws))
	for i, r := range raws {
		bodies[i] = r
	}
	// The valid events are stored together; a failure to store them (a lost race retried out, the
	// database gone) fails the request as a whole, and the client's retry is deduplicated.
	items, err := a.cfg.Lineage.IngestBatch(c.Request().Context(), bodies)
	if err != nil {
		return err
	}
	for i, it := range items {
		if it.Err == nil {
			out.Summary.Successful++
			outcome := "created"
			if it.Result.Duplicate {
				outcome = "duplicate"
			}
			a.lineageEvents.WithLabelValues(outcome).Inc()
			continue
		}
		a.lineageEvents.WithLabelValues("refused").Inc()
		// Item errors are the parser's: final, so the client must not retry them.
		out.FailedEvents = append(out.FailedEvents, failedEvent{Index: i, Reason: toProblem(it.Err).Detail})
		out.Summary.Failed++
	}
	switch {
	case out.Summary.Failed == 0:
		out.Status = "success"
		return c.JSON(http.StatusOK, out)
	case out.Summary.Successful == 0:
		out.Status = "failure"
		return c.JSON(http.StatusBadRequest, out)
	}
	out.Status = "partial_success"
	return c.JSON(http.StatusOK, out)
}

func freshness(f lineage.Freshness) graphFreshness {
	return graphFreshness{SyncedAt: f.SyncedAt.UTC(), LagMS: time.Since(f.SyncedAt).Milliseconds(), Nodes: f.Nodes, Edges: f.Edges}
}

// walkParams are an asset lineage request's asset, direction, depth and node limit (defLimit
// unless given).
func (a *API) walkParams(c echo.Context, defLimit int) (id uuid.UUID, dir lineage.Direction, depth, limit int, err error) {
	if id, err = assetID(c); err != nil {
		return
	}
	dir = lineage.Both
	if d := c.QueryParam("direction"); d != "" {
		if dir, err = lineage.ParseDirection(d); err != nil {
			return
		}
	}
	if depth, err = queryInt(c, "depth", 3, 1, lineage.MaxDepth); err != nil {
		return
	}
	limit, err = queryInt(c, "limit", min(defLimit, a.maxLimit()), 1, a.maxLimit())
	return
}

// maxLimit is the largest limit a lineage answer may ask for: the server's cap on one answer,
// and no more than one client may have in flight (a larger one could never be had).
func (a *API) maxLimit() int {
	return min(a.cfg.Lineage.MaxNodes(), a.cfg.Lineage.Budget().PerClient())
}

// reserve holds nodes of the lineage budget for the request's client until the answer is
// written (its encoding is part of the memory): over budget, it waits briefly, then is a 503
// with Retry-After. The client is the verified token's name, else the connection's address,
// as for the anonymous rate limit.
func (a *API) reserve(c echo.Context, nodes int) (*lineage.Reservation, error) {
	if a.cfg.Lineage == nil {
		return nil, nil
	}
	ctx := c.Request().Context()
	client := "address " + c.RealIP()
	if tok, ok := auth.TokenFrom(ctx); ok {
		client = "token " + tok.Name
	}
	return a.cfg.Lineage.Reserve(ctx, client, nodes)
}

// atParamDoc documents at= on the lineage endpoints.
const atParamDoc = "an RFC 3339 time, e.g. 2026-01-31T12:00:00Z, from 1900-01-01 to now: the graph as it stood then. " +
	"An edge is there when an event that used it (of any run of its job) is dated at or before at (event time, so a late event dates its edge to when it happened); " +
	"each asset shows the name it held then (former_name when it holds it no longer), and an asset deleted since is there with deleted_since. " +
	"Read from the database, within the same depth and limit; relations (migrations) are not dated and are left out. Without at: the graph now."

// atParam reads at=, the time a lineage answer is the graph of (nil: now). The lineage service
// checks the range (from 1900, not in the future) against its clock.
func atParam(c echo.Context) (*time.Time, error) {
	s := c.QueryParam("at")
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, badRequest("at", "at must be an RFC 3339 time such as 2026-01-31T12:00:00Z (a UTC offset instead of Z works too, URL-encoded: %%2B01:00), not %q", truncate(s, 64))
	}
	return &t, nil
}

func (a *API) assetLineage(c echo.Context) error {
	return a.streamWalk(c, lineage.DefaultLimit, writeFull)
}

func (a *API) marquezLineage(c echo.Context) error {
	nodeID := c.QueryParam("nodeId")
	if nodeID == "" {
		return badRequest("nodeId", "nodeId is required, e.g. nodeId=dataset:warehouse:orders")
	}
	depth, err := queryInt(c, "depth", lineage.MarquezDefault, 1, lineage.MaxDepth)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", min(lineage.DefaultLimit, a.maxLimit()), 1, a.maxLimit())
	if err != nil {
		return err
	}
	at, err := atParam(c)
	if err != nil {
		return err
	}
	held, err := a.reserve(c, limit)
	if err != nil {
		return err
	}
	defer held.Release()
	var nodes []lineage.GraphNode
	var res lineage.LineageResult
	if at != nil {
		nodes, res, err = a.cfg.Lineage.MarquezGraphAt(c.Request().Context(), nodeID, depth, limit, *at)
	} else {
		nodes, res, err = a.cfg.Lineage.MarquezGraph(c.Request().Context(), nodeID, depth, limit)
	}
	if err != nil {
		return err
	}
	held.Keep(len(nodes) + len(res.Edges))
	return streamJSON(c, func(w io.Writer, b []byte) []byte { return writeMarquez(w, b, nodes, res) })
}

func marquezTypes(k catalog.Kind) (typ, dataType string) {
	if k == catalog.KindJob {
		return "JOB", "BATCH"
	}
	return "DATASET", "DB_TABLE"
}

// batchAtomicity is what a client must know about a batch that fails part-way.
const batchAtomicity = "Invalid events are refused one by one (failed_events) and the valid ones are stored in order with all their effects, " +
	"in transactions of at most 100 events (a long transaction would keep every other writer waiting). The batch is therefore not all-or-nothing: " +
	"a batch that fails part-way (5xx) leaves the events of the transactions before the failure stored, and the assets for names the batch used for " +
	"the first time (created first, each in its own short transaction) in place. " +
	"Retrying the batch is safe: it reuses them and stored events are recognised by their idempotency key."

// openLineageEventSchema is the OpenLineage event as the API documents it: the parts Tidemark
// reads, with facets and anything newer left open (the OpenLineage spec owns them). A RunEvent
// has eventType, run and job; a DatasetEvent dataset; a JobEvent job.
var openLineageEventSchema = func() map[string]any {
	facets := map[string]any{"type": "object", "additionalProperties": true}
	dataset := map[string]any{"type": "object", "required": []string{"namespace", "name"}, "additionalProperties": true,
		"properties": map[string]any{"namespace": map[string]any{"type": "string"}, "name": map[string]any{"type": "string"},
			"facets": facets, "inputFacets": facets, "outputFacets": facets}}
	datasets := map[string]any{"type": "array", "items": dataset}
	return map[string]any{"type": "object", "required": []string{"eventTime", "producer"}, "additionalProperties": true,
		"properties": map[string]any{
			"eventType": map[string]any{"type": "string", "enum": []string{"START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"}},
			"eventTime": map[string]any{"type": "string", "format": "date-time"},
			"producer":  map[string]any{"type": "string", "format": "uri"},
			"schemaURL": map[string]any{"type": "string", "format": "uri"},
			"run": map[string]any{"type": "object", "required": []string{"runId"}, "additionalProperties": true,
				"properties": map[string]any{"runId": map[string]any{"type": "string", "format": "uuid"}, "facets": facets}},
			"job": map[string]any{"type": "object", "required": []string{"namespace", "name"}, "additionalProperties": true,
				"properties": map[string]any{"namespace": map[string]any{"type": "string"}, "name": map[string]any{"type": "string"}, "facets": facets}},
			"inputs":  datasets,
			"outputs": datasets,
			"dataset": dataset,
		}}
}()
