package handlers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/tidemark/tidemark/warehouse"
)

// The write path of tables Tidemark serves over the Iceberg REST protocol: the inventory of
// every commit, the commits themselves, and commit health.

type inventoryFileResponse struct {
	CommitID   uuid.UUID `json:"commit_id"`
	SnapshotID int64     `json:"snapshot_id"` // 0 for the metadata file a commit wrote
	Path       string    `json:"path"`
	Kind       string    `json:"kind"`   // metadata, manifest_list, manifest, data, delete
	Change     string    `json:"change"` // added, removed, staged (written for a commit that did not happen), signed (written through a remote signature)
	SizeBytes  int64     `json:"size_bytes"`
	Records    int64     `json:"records"`
	RecordedAt time.Time `json:"recorded_at"`
	Actor      string    `json:"actor,omitempty"` // who a signed file's signature was issued to
}

type inventoryResponse struct {
	AssetID    uuid.UUID               `json:"asset_id"`
	Items      []inventoryFileResponse `json:"items"`
	NextCursor string                  `json:"next_cursor,omitempty"`
}

type commitRecordResponse struct {
	ID            uuid.UUID  `json:"id"`
	Kind          string     `json:"kind"`  // create, commit, register, rename, drop
	State         string     `json:"state"` // pending, committed, conflict, abandoned
	BaseLocation  string     `json:"base_location,omitempty"`
	NewLocation   string     `json:"new_location,omitempty"`
	SnapshotID    *int64     `json:"snapshot_id,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	TransactionID *uuid.UUID `json:"transaction_id,omitempty"`
	Actor         string     `json:"actor,omitempty"`
	AddedFiles    int64      `json:"added_files"`
	RemovedFiles  int64      `json:"removed_files"`
	AddedBytes    int64      `json:"added_bytes"`
	StartedAt     time.Time  `json:"started_at"`
	FinishedAt    *time.Time `json:"finished_at,omitempty"`
}

type commitsResponse struct {
	AssetID    uuid.UUID              `json:"asset_id"`
	Items      []commitRecordResponse `json:"items"`
	NextCursor string                 `json:"next_cursor,omitempty"`
}

type commitHealthResponse struct {
	AssetID          uuid.UUID `json:"asset_id"`
	WindowSeconds    float64   `json:"window_seconds"`
	From             time.Time `json:"from"`
	To               time.Time `json:"to"`
	Commits          int       `json:"commits"`
	Conflicts        int       `json:"conflicts"`
	Retries          int       `json:"retries"`
	Abandoned        int       `json:"abandoned"`
	CommitsPerMinute float64   `json:"commits_per_minute"`
	ConflictRate     float64   `json:"conflict_rate"`
	MedianGapSeconds float64   `json:"median_gap_seconds"`
	MinGapSeconds    float64   `json:"min_gap_seconds"`
	BatchRecommended bool      `json:"batch_recommended"`
	Recommendation   string    `json:"recommendation,omitempty"`
}

// commitRoutes are the served warehouses' record of a table's commits (package warehouse); nil
// Warehouse leaves them out.
func (a *API) commitRoutes() {
	if a.cfg.Warehouse == nil {
		return
	}
	base := "/api/v1/tables/:id"
	idParam := []param{{Name: "id", In: "path", Required: true, Description: "the table's asset ID"}}
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/inventory",
		Summary: "The write-path inventory of a table served by Tidemark: every file its commits added or removed, and files staged by commits that did not happen",
		Tag:     "tables",
		Params: append(idParam, param{Name: "snapshot", In: "query", Description: "only the files of the commit that added this snapshot"},
			param{Name: "change", In: "query", Description: "added, removed or staged"},
			param{Name: "limit", In: "query", Description: "1-1000, default 100"}, param{Name: "cursor", In: "query"}),
		Responses: map[int]any{200: inventoryResponse{}},
	}, a.tableInventory)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/commits",
		Summary:   "Commits to a table served by Tidemark, newest first: committed, refused (409), pending or abandoned",
		Tag:       "tables",
		Params:    append(idParam, param{Name: "limit", In: "query", Description: "1-1000, default 100"}, param{Name: "cursor", In: "query"}),
		Responses: map[int]any{200: commitsResponse{}},
	}, a.tableCommits)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/commit-health",
		Summary:   "How a served table is committed to: commits a minute, 409 rate, retries, gaps, and whether to batch",
		Tag:       "tables",
		Params:    append(idParam, param{Name: "window", In: "query", Description: "a duration such as 1h (default) or 15m, at most 7 days"}),
		Responses: map[int]any{200: commitHealthResponse{}},
	}, a.tableCommitHealth)
}

func (a *API) tableInventory(c echo.Context) error {
	id, err := idParam(c, "table")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	f := warehouse.InventoryFilter{Change: c.QueryParam("change"), Limit: limit}
	if s := c.QueryParam("snapshot"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return badRequest("snapshot", "snapshot must be a snapshot ID (a whole number), not %q", truncate(s, 32))
		}
		f.SnapshotID = &n
	}
	scope := "inventory:" + id.String() + ":" + c.QueryParam("snapshot") + ":" + f.Change
	if f.After, err = decodeCursor(c.QueryParam("cursor"), scope); err != nil {
		return err
	}
	files, more, err := a.cfg.Warehouse.Inventory(c.Request().Context(), id, f)
	if err != nil {
		return err
	}
	out := inventoryResponse{AssetID: id, Items: make([]inventoryFileResponse, len(files))}
	for i, f := range files {
		out.Items[i] = inventoryFileResponse{CommitID: f.CommitID, SnapshotID: f.SnapshotID, Path: f.Path, Kind: f.Kind, Change: f.Change,
			SizeBytes: f.Size, Records: f.Records, RecordedAt: f.RecordedAt, Actor: f.Actor}
	}
	if more {
		out.NextCursor = encodeCursor(files[len(files)-1].ID, scope)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) tableCommits(c echo.Context) error {
	id, err := idParam(c, "table")
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	scope := "commits:" + id.String()
	before, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	recs, more, err := a.cfg.Warehouse.Commits(c.Request().Context(), id, before, limit)
	if err != nil {
		return err
	}
	out := commitsResponse{AssetID: id, Items: make([]commitRecordResponse, len(recs))}
	for i, r := range recs {
		out.Items[i] = commitRecordResponse{ID: r.ID, Kind: r.Kind, State: r.State, BaseLocation: r.BaseLocation, NewLocation: r.NewLocation,
			SnapshotID: r.SnapshotID, Reason: r.Reason, TransactionID: r.TransactionID, Actor: r.Actor, AddedFiles: r.AddedFiles,
			RemovedFiles: r.RemovedFiles, AddedBytes: r.AddedBytes, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	}
	if more {
		out.NextCursor = encodeCursor(recs[len(recs)-1].ID, scope)
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) tableCommitHealth(c echo.Context) error {
	id, err := idParam(c, "table")
	if err != nil {
		return err
	}
	window := warehouse.DefaultCommitWindow
	if s := c.QueryParam("window"); s != "" {
		if window, err = time.ParseDuration(s); err != nil || window < time.Minute || window > 7*24*time.Hour {
			return badRequest("window", "window must be a duration from 1m to 168h, such as 1h, not %q", truncate(s, 32))
		}
	}
	h, err := a.cfg.Warehouse.CommitHealth(c.Request().Context(), id, window)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, commitHealthResponse{AssetID: h.AssetID, WindowSeconds: h.Window.Seconds(), From: h.From, To: h.To,
		Commits: h.Commits, Conflicts: h.Conflicts, Retries: h.Retries, Abandoned: h.Abandoned, CommitsPerMinute: h.CommitsPerMinute,
		ConflictRate: h.ConflictRate, MedianGapSeconds: h.MedianGap.Seconds(), MinGapSeconds: h.MinGap.Seconds(),
		BatchRecommended: h.BatchRecommended, Recommendation: h.Recommendation})
}
