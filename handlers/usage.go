package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/usage"
)

type usageAssetRef struct {
	ID        *uuid.UUID `json:"id,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	Name      string     `json:"name,omitempty"`
}

type usageRecordRequest struct {
	Asset          usageAssetRef `json:"asset"`
	Kind           string        `json:"kind"`
	Actor          string        `json:"actor,omitempty"`
	At             time.Time     `json:"at"`
	QueryID        string        `json:"query_id,omitempty"`
	Source         string        `json:"source,omitempty"`
	IdempotencyKey string        `json:"idempotency_key,omitempty"`
	// Version is the version read or written (an Iceberg snapshot ID, a datasetVersion), when
	// the query log knows it.
	Version string `json:"version,omitempty"`
}

type usageRequest struct {
	Events []usageRecordRequest `json:"events"`
	// Backfill accepts records up to the usage retention old instead of the lateness (a query
	// log posted after the fact); it needs a token with the admin scope.
	Backfill bool `json:"backfill,omitempty"`
}

type usageRecordResult struct {
	Index   int        `json:"index"`
	Status  string     `json:"status"` // accepted, duplicate, refused, unresolved
	AssetID *uuid.UUID `json:"asset_id,omitempty"`
	Reason  string     `json:"reason,omitempty"`
	// Resolution says how a name resolved when it did not name its holder at the time
	// exactly: before_first_seen or rename_window.
	Resolution string `json:"resolution,omitempty"`
}

type usageSummary struct {
	Received   int `json:"received"`
	Accepted   int `json:"accepted"`
	Duplicate  int `json:"duplicate"`
	Refused    int `json:"refused"`
	Unresolved int `json:"unresolved"`
}

type usageResponse struct {
	Summary usageSummary        `json:"summary"`
	Results []usageRecordResult `json:"results"`
}

type usagePoint struct {
	Start          string `json:"start"`
	Reads          int64  `json:"reads"`
	Writes         int64  `json:"writes"`
	DistinctActors int    `json:"distinct_actors"`
	DistinctJobs   int    `json:"distinct_jobs"`
}

type actorCount struct {
	Actor  string `json:"actor"`
	Reads  int64  `json:"reads"`
	Writes int64  `json:"writes"`
}

type nameSeen struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	FirstAt   time.Time `json:"first_at"`
	LastAt    time.Time `json:"last_at"`
	Current   bool      `json:"current"`
}

type usageTotals struct {
	Reads          int64      `json:"reads"`
	Writes         int64      `json:"writes"`
	DistinctActors int        `json:"distinct_actors"`
	LastRead       *time.Time `json:"last_read,omitempty"`
	LastWrite      *time.Time `json:"last_write,omitempty"`
	// LateRecords were attributed after the fact: they waited unresolved until a name
	// appeared or changed.
	LateRecords int64 `json:"late_records"`
}

type assetUsageResponse struct {
	AssetID     uuid.UUID    `json:"asset_id"`
	From        string       `json:"from"`
	To          string       `json:"to"`
	Granularity string       `json:"granularity"`
	Series      []usagePoint `json:"series"`
	Totals      usageTotals  `json:"totals"`
	TopActors   []actorCount `json:"top_actors"`
	// NamesSeen lists every name this asset's usage was reported under: former names included.
	NamesSeen []nameSeen `json:"names_seen"`
}

type rankedAsset struct {
	ID        uuid.UUID `json:"id"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Reads     int64     `json:"reads"`
	Writes    int64     `json:"writes"`
}

type topUsageResponse struct {
	Kind   string        `json:"kind"`
	Window string        `json:"window"`
	Assets []rankedAsset `json:"assets"`
}

type waitingName struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Reads     int64     `json:"reads"`
	Writes    int64     `json:"writes"`
	FirstAt   time.Time `json:"first_at"`
	LastAt    time.Time `json:"last_at"`
}

type unresolvedResponse struct {
	// Records is how many records wait in all; Names the names they wait under, most first.
	Records int64         `json:"records"`
	Names   []waitingName `json:"names"`
}

// DefaultUsageBodyLimit fits a batch of 5000 records.
const DefaultUsageBodyLimit = 4 << 20

func (a *API) usageRoutes() {
	if a.cfg.Usage == nil {
		return
	}
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      "/api/v1/usage",
		Summary:   "Record query-log usage (idempotent per source, query ID and asset)",
		Tag:       "usage",
		Body:      usageRequest{},
		BodyLimit: DefaultUsageBodyLimit,
		Responses: map[int]any{200: usageResponse{}},
	}, a.recordUsage)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/assets/:id/usage",
		Summary: "Usage series of an asset across all its names",
		Tag:     "usage",
		Params: []param{{Name: "from", In: "query", Description: "YYYY-MM-DD or RFC 3339; default 29 days before to"},
			{Name: "to", In: "query", Description: "YYYY-MM-DD or RFC 3339; default today"}, {Name: "granularity", In: "query", Description: "day (default) or week"}},
		Responses: map[int]any{200: assetUsageResponse{}},
	}, a.assetUsage)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/usage/top",
		Summary: "Most used assets in a window",
		Tag:     "usage",
		Params: []param{{Name: "kind", In: "query", Description: "read (default) or write"},
			{Name: "window", In: "query", Description: "e.g. 30d (default), 7d, 12h"}, {Name: "limit", In: "query", Description: "1-1000, default 20"}},
		Responses: map[int]any{200: topUsageResponse{}},
	}, a.topUsage)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/usage/unresolved",
		Summary:   "Usage records kept until an asset takes their name, by name",
		Tag:       "usage",
		Params:    []param{{Name: "limit", In: "query", Description: "1-1000, default 100"}},
		Responses: map[int]any{200: unresolvedResponse{}},
	}, a.unresolvedUsage)
}

func (a *API) unresolvedUsage(c echo.Context) error {
	limit, err := queryInt(c, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	names, total, err := a.cfg.Usage.Unresolved(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	out := unresolvedResponse{Records: total, Names: []waitingName{}}
	for _, w := range names {
		out.Names = append(out.Names, waitingName(w))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) recordUsage(c echo.Context) error {
	var req usageRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if len(req.Events) == 0 {
		return badRequest("events", "events is empty; send {\"events\": [...]}")
	}
	if len(req.Events) > usage.MaxRecords {
		return badRequest("events", "%d events in one request; the limit is %d: split the batch", len(req.Events), usage.MaxRecords)
	}
	recs := make([]usage.Record, len(req.Events))
	for i, e := range req.Events {
		recs[i] = usage.Record{Namespace: e.Asset.Namespace, Name: e.Asset.Name, Kind: e.Kind, Actor: e.Actor, At: e.At,
			QueryID: e.QueryID, Source: e.Source, IdempotencyKey: e.IdempotencyKey, Version: e.Version}
		if e.Asset.ID != nil {
			recs[i].AssetID = *e.Asset.ID
		}
	}
	record := a.cfg.Usage.Record
	if req.Backfill {
		if !a.allows(c, auth.ScopeAdmin) {
			return newProblem(http.StatusForbidden, "backfill accepts records older than the lateness window: it needs a token with the admin scope")
		}
		record = a.cfg.Usage.Backfill
	}
	results, err := record(c.Request().Context(), recs)
	if err != nil {
		return err
	}
	out := usageResponse{Summary: usageSummary{Received: len(results)}, Results: make([]usageRecordResult, len(results))}
	for i, r := range results {
		a.usageRecords.WithLabelValues(r.Status).Inc()
		out.Results[i] = usageRecordResult{Index: i, Status: r.Status, Reason: r.Reason, Resolution: r.Resolution}
		if r.AssetID != uuid.Nil {
			id := r.AssetID
			out.Results[i].AssetID = &id
		}
		switch r.Status {
		case usage.StatusAccepted:
			out.Summary.Accepted++
		case usage.StatusDuplicate:
			out.Summary.Duplicate++
		case usage.StatusRefused:
			out.Summary.Refused++
		case usage.StatusUnresolved:
			out.Summary.Unresolved++
		}
	}
	return c.JSON(http.StatusOK, out)
}

// queryDay reads a date (YYYY-MM-DD) or an RFC 3339 time.
func queryDay(c echo.Context, name string, def time.Time) (time.Time, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, badRequest(name, "%s %q is not a date (2026-01-31) or an RFC 3339 time", name, truncate(s, 40))
}

func (a *API) assetUsage(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	to, err := queryDay(c, "to", time.Now().UTC())
	if err != nil {
		return err
	}
	from, err := queryDay(c, "from", to.AddDate(0, 0, -29))
	if err != nil {
		return err
	}
	gran := c.QueryParam("granularity")
	if gran == "" {
		gran = usage.Daily
	}
	s, err := a.cfg.Usage.Series(c.Request().Context(), id, from, to, gran)
	if err != nil {
		return err
	}
	out := assetUsageResponse{AssetID: id, From: usage.Day(s.From), To: usage.Day(s.To), Granularity: s.Granularity,
		Series: make([]usagePoint, 0, len(s.Points)), TopActors: make([]actorCount, 0, len(s.TopActors)), NamesSeen: make([]nameSeen, 0, len(s.NamesSeen)),
		Totals: usageTotals{Reads: s.Reads, Writes: s.Writes, DistinctActors: s.DistinctActors, LastRead: s.LastRead, LastWrite: s.LastWrite, LateRecords: s.LateRecords}}
	for _, p := range s.Points {
		out.Series = append(out.Series, usagePoint{Start: usage.Day(p.Start), Reads: p.Reads, Writes: p.Writes, DistinctActors: p.DistinctActors, DistinctJobs: p.DistinctJobs})
	}
	for _, ac := range s.TopActors {
		out.TopActors = append(out.TopActors, actorCount(ac))
	}
	for _, n := range s.NamesSeen {
		out.NamesSeen = append(out.NamesSeen, nameSeen(n))
	}
	return c.JSON(http.StatusOK, out)
}

// parseWindow reads "30d" (days) or a Go duration such as "12h".
func parseWindow(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return 0, badRequest("window", "window %q is not a number of days such as 30d", truncate(s, 20))
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	w, err := time.ParseDuration(s)
	if err != nil || w <= 0 {
		return 0, badRequest("window", "window %q is not a duration such as 30d or 12h", truncate(s, 20))
	}
	return w, nil
}

func (a *API) topUsage(c echo.Context) error {
	kind := c.QueryParam("kind")
	if kind == "" {
		kind = "read"
	}
	window := c.QueryParam("window")
	if window == "" {
		window = "30d"
	}
	w, err := parseWindow(window)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 20, 1, usage.MaxTop)
	if err != nil {
		return err
	}
	ranked, err := a.cfg.Usage.Top(c.Request().Context(), kind, w, limit)
	if err != nil {
		return err
	}
	out := topUsageResponse{Kind: kind, Window: window, Assets: make([]rankedAsset, 0, len(ranked))}
	for _, r := range ranked {
		out.Assets = append(out.Assets, rankedAsset{ID: r.Asset.ID, Kind: string(r.Asset.Kind), Status: string(r.Asset.Status),
			Namespace: r.Asset.Namespace, Name: r.Asset.Name, Reads: r.Reads, Writes: r.Writes})
	}
	return c.JSON(http.StatusOK, out)
}
