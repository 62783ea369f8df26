package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/cleanup"
)

// Response types of the reference check API.

type refCheckResponse struct {
	ID               uuid.UUID                  `json:"id"`
	AssetID          uuid.UUID                  `json:"asset_id"`
	State            string                     `json:"state"`
	StartedAt        time.Time                  `json:"started_at"`
	FinishedAt       *time.Time                 `json:"finished_at,omitempty"`
	Runs             int                        `json:"runs"`
	Error            string                     `json:"error,omitempty"`
	MetadataLocation string                     `json:"metadata_location"`
	Units            int                        `json:"units"`
	UnitsChecked     int                        `json:"units_checked"`
	FilesChecked     int64                      `json:"files_checked"`
	Prioritised      int                        `json:"prioritised"`
	MissingFirst     int64                      `json:"missing_first_check"`
	Rechecked        bool                       `json:"rechecked"`
	DanglingCount    int64                      `json:"dangling_count"`
	Dangling         []danglingResponse         `json:"dangling"`
	Unchecked        int64                      `json:"unchecked"`
	Snapshots        []snapshotCoverageResponse `json:"snapshots"`
	Refs             []refCoverageResponse      `json:"refs"`
	Requests         scanRequestsResponse       `json:"requests"`
	Summary          string                     `json:"summary"`
}

type snapshotCoverageResponse struct {
	SnapshotID       int64    `json:"snapshot_id"`
	Current          bool     `json:"current"`
	Refs             []string `json:"refs,omitempty"`
	Manifests        int      `json:"manifests"`
	ManifestsChecked int      `json:"manifests_checked"`
	FilesChecked     int64    `json:"files_checked"`
	ListUnreadable   bool     `json:"manifest_list_unreadable,omitempty"`
}

type refCoverageResponse struct {
	Name             string `json:"name"`
	SnapshotID       int64  `json:"snapshot_id"`
	Manifests        int    `json:"manifests"`
	ManifestsChecked int    `json:"manifests_checked"`
	FilesChecked     int64  `json:"files_checked"`
}

type refCheckListResponse struct {
	Items      []refCheckResponse `json:"items"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

func (a *API) refCheckRoutes() {
	if a.cfg.Cleanup == nil {
		return
	}
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/ref-checks/:id",
		Summary:   "One reference check's report: files checked by key of every retained snapshot and ref, coverage, dangling references",
		Tag:       "cleanup",
		Params:    []param{{Name: "id", In: "path", Required: true}},
		Responses: map[int]any{200: refCheckResponse{}},
	}, a.getRefCheck)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/tables/:id/ref-checks",
		Summary:   "A table's reference checks, newest first",
		Tag:       "cleanup",
		Params:    []param{{Name: "id", In: "path", Required: true}, {Name: "limit", In: "query", Description: "1-100, default 20"}, {Name: "cursor", In: "query"}},
		Responses: map[int]any{200: refCheckListResponse{}},
	}, a.tableRefChecks)
}

func (a *API) getRefCheck(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	r, err := a.cfg.Cleanup.GetRefCheck(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toRefCheckResponse(r))
}

func (a *API) tableRefChecks(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := a.cfg.Tables.Get(ctx, id); err != nil {
		return err
	}
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	scope := "ref-checks|" + id.String()
	before, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	reps, err := a.cfg.Cleanup.RefChecks(ctx, cleanup.RefCheckFilter{AssetID: id, Before: before, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := refCheckListResponse{Items: []refCheckResponse{}}
	for i, r := range reps {
		if i == limit {
			out.NextCursor = encodeCursor(reps[limit-1].CheckID, scope)
			break
		}
		out.Items = append(out.Items, toRefCheckResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}

func toRefCheckResponse(r cleanup.RefCheckReport) refCheckResponse {
	out := refCheckResponse{ID: r.CheckID, AssetID: r.AssetID, State: r.State, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt,
		Runs: r.Runs, Error: r.Error, MetadataLocation: r.MetadataLocation, Units: r.Units, UnitsChecked: r.UnitsChecked,
		FilesChecked: r.FilesChecked, Prioritised: r.Prioritised, MissingFirst: r.MissingFirst, Rechecked: r.Rechecked,
		DanglingCount: r.DanglingCount, Dangling: []danglingResponse{}, Unchecked: r.Unchecked, Snapshots: []snapshotCoverageResponse{},
		Refs: []refCoverageResponse{}, Requests: scanRequestsResponse(r.Requests), Summary: r.Summary}
	for _, d := range r.Dangling {
		out.Dangling = append(out.Dangling, danglingResponse(d))
	}
	for _, s := range r.Snapshots {
		out.Snapshots = append(out.Snapshots, snapshotCoverageResponse(s))
	}
	for _, rc := range r.Refs {
		out.Refs = append(out.Refs, refCoverageResponse(rc))
	}
	return out
}
