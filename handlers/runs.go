package handlers

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/lineage"
)

func (a *API) runRoutes() {
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/runs/:runId",
		Summary:   "A run: state, facets merged across its events, inputs and outputs",
		Tag:       "lineage",
		Responses: map[int]any{200: runResponse{}},
	}, a.getRun)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/assets/:id/runs",
		Summary:   "Runs of a job, or runs that read or wrote a dataset, newest first",
		Tag:       "lineage",
		Params:    []param{{Name: "limit", In: "query"}},
		Responses: map[int]any{200: runsResponse{}},
	}, a.assetRuns)
}

type runResponse struct {
	ID           string                     `json:"id"`
	JobAssetID   uuid.UUID                  `json:"job_asset_id"`
	State        string                     `json:"state"`
	StateTime    time.Time                  `json:"state_time"`
	StartedAt    *time.Time                 `json:"started_at,omitempty"`
	EndedAt      *time.Time                 `json:"ended_at,omitempty"`
	NominalStart *time.Time                 `json:"nominal_start,omitempty"`
	NominalEnd   *time.Time                 `json:"nominal_end,omitempty"`
	ParentRunID  string                     `json:"parent_run_id,omitempty"`
	EventCount   int                        `json:"event_count"`
	Inputs       []uuid.UUID                `json:"inputs"`
	Outputs      []uuid.UUID                `json:"outputs"`
	Facets       map[string]json.RawMessage `json:"facets"`
	CreatedAt    time.Time                  `json:"created_at"`
	UpdatedAt    time.Time                  `json:"updated_at"`
}

type runsResponse struct {
	AssetID uuid.UUID     `json:"asset_id"`
	Runs    []runResponse `json:"runs"`
}

func toRunResponse(r lineage.RunInfo) runResponse {
	facets := r.Facets
	if facets == nil {
		facets = map[string]json.RawMessage{}
	}
	return runResponse{ID: r.ID, JobAssetID: r.JobAssetID, State: r.State, StateTime: r.StateTime, StartedAt: r.StartedAt,
		EndedAt: r.EndedAt, NominalStart: r.NominalStart, NominalEnd: r.NominalEnd, ParentRunID: r.ParentRunID,
		EventCount: r.EventCount, Inputs: r.Inputs, Outputs: r.Outputs, Facets: facets, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func (a *API) getRun(c echo.Context) error {
	id, err := pathParam(c, "runId")
	if err != nil {
		return err
	}
	r, err := a.cfg.Lineage.GetRun(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toRunResponse(r))
}

func (a *API) assetRuns(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, defaultPageSize, maxPageSize)
	if err != nil {
		return err
	}
	runs, err := a.cfg.Lineage.RunsOf(c.Request().Context(), id, limit)
	if err != nil {
		return err
	}
	out := runsResponse{AssetID: id, Runs: make([]runResponse, 0, len(runs))}
	for _, r := range runs {
		out.Runs = append(out.Runs, toRunResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}
