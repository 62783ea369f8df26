package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/cleanup"
)

// Response types of the cleanup scan API.

type scanShardResponse struct {
	Shard        string     `json:"shard"`
	Outcome      string     `json:"outcome"`
	TooSoon      bool       `json:"too_soon,omitempty"`
	StartedAt    time.Time  `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	Entries      int64      `json:"entries"`
	Duplicates   int64      `json:"duplicates"`
	ListRequests int64      `json:"list_requests"`
	Candidates   int64      `json:"candidates"`
	Confirmed    int64      `json:"confirmed"`
	Error        string     `json:"error,omitempty"`
}

type scanHoleResponse struct {
	Shard          string     `json:"shard"`
	Outcome        string     `json:"outcome"`
	LastCompleteAt *time.Time `json:"last_complete_at,omitempty"`
}

type danglingResponse struct {
	SnapshotID int64    `json:"snapshot_id"`
	Manifest   string   `json:"manifest"`
	Path       string   `json:"path"`
	Content    string   `json:"content"`
	Refs       []string `json:"refs,omitempty"`
}

type scanRequestsResponse struct {
	List          int64 `json:"list"`
	Head          int64 `json:"head"`
	ManifestReads int   `json:"manifest_reads"`
	Get           int64 `json:"get,omitempty"`
}

type pacingResponse struct {
	ListPerSecond float64 `json:"list_per_second"`
	HeadPerSecond float64 `json:"head_per_second"`
	PageSize      int     `json:"page_size"`
	HeadParallel  int     `json:"head_parallel"`
	ShardParallel int     `json:"shard_parallel"`
}

type sharedTableResponse struct {
	AssetID   uuid.UUID  `json:"asset_id"`
	TableUUID string     `json:"table_uuid"`
	Location  string     `json:"location"`
	GoneAt    *time.Time `json:"gone_at,omitempty"`
	Skipped   string     `json:"skipped,omitempty"`
}

type foreignTenantResponse struct {
	MetadataFile string     `json:"metadata_file"`
	TableUUID    string     `json:"table_uuid,omitempty"`
	AssetID      *uuid.UUID `json:"asset_id,omitempty"`
	Error        string     `json:"error,omitempty"`
}

type scanCostResponse struct {
	ScanUSD                     float64 `json:"scan_usd"`
	ConfirmedOrphansUSDPerMonth float64 `json:"confirmed_orphans_usd_per_month"`
	ListPer1000USD              float64 `json:"list_per_1000_usd"`
	GetPer1000USD               float64 `json:"get_per_1000_usd"`
	StorageGBMonthUSD           float64 `json:"storage_gb_month_usd"`
}

type scanResponse struct {
	ID                  uuid.UUID               `json:"id"`
	AssetID             uuid.UUID               `json:"asset_id"`
	Location            string                  `json:"location"`
	MetadataLocation    string                  `json:"metadata_location"`
	StartedAt           time.Time               `json:"started_at"`
	FinishedAt          *time.Time              `json:"finished_at,omitempty"`
	State               string                  `json:"state"`
	Error               string                  `json:"error,omitempty"`
	AgeThreshold        string                  `json:"age_threshold"`
	ThresholdOverride   bool                    `json:"threshold_override"`
	Assumption          string                  `json:"assumption"`
	Summary             string                  `json:"summary"`
	ConfirmOnly         bool                    `json:"confirm_only"`
	FromInventory       bool                    `json:"from_inventory"`
	SettledByInventory  int64                   `json:"settled_by_inventory"`
	SettledByWalk       int64                   `json:"settled_by_walk"`
	StagedThenCommitted int64                   `json:"staged_then_committed,omitempty"`
	LeftoversGone       int64                   `json:"leftovers_gone,omitempty"`
	Unrecorded          *int64                  `json:"unrecorded_candidates,omitempty"`
	NothingToConfirm    int                     `json:"nothing_to_confirm_shards"`
	ReferencesReused    bool                    `json:"references_reused"`
	Shards              []scanShardResponse     `json:"shards"`
	ShardsComplete      int                     `json:"shards_complete"`
	ShardsFailed        int                     `json:"shards_failed"`
	ShardsNotReached    int                     `json:"shards_not_reached"`
	Holes               []scanHoleResponse      `json:"holes"`
	EntriesListed       int64                   `json:"entries_listed"`
	DuplicateListed     int64                   `json:"duplicate_listed"`
	ReferencedFiles     int64                   `json:"referenced_files"`
	MidWalk             int64                   `json:"mid_walk"`
	TooYoung            int64                   `json:"too_young"`
	Candidates          int64                   `json:"candidates"`
	CandidateBytes      int64                   `json:"candidate_bytes"`
	Confirmed           int64                   `json:"confirmed"`
	ConfirmedBytes      int64                   `json:"confirmed_bytes"`
	ConfirmedSample     []string                `json:"confirmed_sample"`
	Requests            scanRequestsResponse    `json:"requests"`
	Cost                scanCostResponse        `json:"cost"`
	MinGap              string                  `json:"min_gap"`
	TooSoonShards       int                     `json:"too_soon_shards"`
	Pacing              pacingResponse          `json:"pacing"`
	SharedWith          []sharedTableResponse   `json:"shared_with"`
	ForeignTenants      []foreignTenantResponse `json:"foreign_tenants"`
}

type scanListResponse struct {
	Items      []scanResponse `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

func (a *API) scanRoutes() {
	if a.cfg.Cleanup == nil {
		return
	}
	page := []param{{Name: "limit", In: "query", Description: "1-100, default 20"}, {Name: "cursor", In: "query"}}
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/scans",
		Summary:   "Cleanup scan reports, newest first",
		Tag:       "cleanup",
		Params:    page,
		Responses: map[int]any{200: scanListResponse{}},
	}, a.listScans)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/scans/:id",
		Summary:   "One cleanup scan's report: shards covered and holes, candidates, confirmed orphans, requests and cost",
		Tag:       "cleanup",
		Params:    []param{{Name: "id", In: "path", Required: true}},
		Responses: map[int]any{200: scanResponse{}},
	}, a.getScan)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/tables/:id/scans",
		Summary:   "A table's cleanup scan reports, newest first",
		Tag:       "cleanup",
		Params:    append([]param{{Name: "id", In: "path", Required: true}}, page...),
		Responses: map[int]any{200: scanListResponse{}},
	}, a.tableScans)
	a.scanRequestRoutes()
}

func (a *API) listScans(c echo.Context) error { return a.scanList(c, uuid.Nil) }

func (a *API) tableScans(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	if _, err := a.cfg.Tables.Get(c.Request().Context(), id); err != nil {
		return err
	}
	return a.scanList(c, id)
}

func (a *API) scanList(c echo.Context, asset uuid.UUID) error {
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	scope := "scans|" + asset.String()
	before, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	reps, err := a.cfg.Cleanup.Scans(c.Request().Context(), cleanup.ScanFilter{AssetID: asset, Before: before, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := scanListResponse{Items: []scanResponse{}}
	for i, r := range reps {
		if i == limit {
			out.NextCursor = encodeCursor(reps[limit-1].ScanID, scope)
			break
		}
		out.Items = append(out.Items, toScanResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) getScan(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	r, err := a.cfg.Cleanup.GetScan(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toScanResponse(r))
}

func toScanResponse(r cleanup.Report) scanResponse {
	out := scanResponse{ID: r.ScanID, AssetID: r.AssetID, Location: r.Location, MetadataLocation: r.MetadataLocation,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, State: r.State, Error: r.Error, AgeThreshold: r.AgeThreshold,
		ThresholdOverride: r.ThresholdOverride, Assumption: r.Assumption, Summary: r.Summary, Shards: []scanShardResponse{},
		ConfirmOnly: r.ConfirmOnly, NothingToConfirm: r.NothingToConfirm, FromInventory: r.FromInventory, SettledByInventory: r.SettledByInventory,
		SettledByWalk: r.SettledByWalk, StagedThenCommitted: r.StagedThenCommitted, LeftoversGone: r.LeftoversGone, Unrecorded: r.Unrecorded, ReferencesReused: r.ReferencesReused,
		ShardsComplete: r.ShardsComplete, ShardsFailed: r.ShardsFailed, ShardsNotReached: r.ShardsNotReached, Holes: []scanHoleResponse{}, EntriesListed: r.EntriesListed, DuplicateListed: r.DuplicateListed,
		ReferencedFiles: r.ReferencedFiles, MidWalk: r.MidWalk, TooYoung: r.TooYoung, Candidates: r.Candidates,
		CandidateBytes: r.CandidateBytes, Confirmed: r.Confirmed, ConfirmedBytes: r.ConfirmedBytes, ConfirmedSample: r.ConfirmedSample,
		Requests: scanRequestsResponse(r.Requests),
		Cost: scanCostResponse{ScanUSD: r.Cost.Scan, ConfirmedOrphansUSDPerMonth: r.Cost.OrphansPerMonth, ListPer1000USD: r.Prices.ListPer1000,
			GetPer1000USD: r.Prices.GetPer1000, StorageGBMonthUSD: r.Prices.StorageGBMonth},
		MinGap: r.MinGap, TooSoonShards: r.TooSoonShards, Pacing: pacingResponse(r.Pacing),
		SharedWith: []sharedTableResponse{}, ForeignTenants: toForeignResponse(r.Foreign)}
	for _, t := range r.SharedWith {
		out.SharedWith = append(out.SharedWith, sharedTableResponse(t))
	}
	if out.ConfirmedSample == nil {
		out.ConfirmedSample = []string{}
	}
	for _, s := range r.Shards {
		out.Shards = append(out.Shards, scanShardResponse(s))
	}
	for _, h := range r.Holes {
		out.Holes = append(out.Holes, scanHoleResponse(h))
	}
	return out
}

func toForeignResponse(fs []cleanup.ForeignTenant) []foreignTenantResponse {
	out := []foreignTenantResponse{}
	for _, f := range fs {
		out = append(out, foreignTenantResponse(f))
	}
	return out
}
