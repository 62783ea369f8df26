package handlers

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/tables"
)

// Response types of the Iceberg table API.

type tableResponse struct {
	AssetID           uuid.UUID  `json:"asset_id"`
	Namespace         string     `json:"namespace"` // the asset's current (or, once deleted, last) name
	Name              string     `json:"name"`
	Status            string     `json:"status"`
	Connection        string     `json:"connection,omitempty"`
	Warehouse         string     `json:"warehouse,omitempty"` // served by Tidemark over the Iceberg REST protocol
	Identifier        string     `json:"identifier,omitempty"`
	TableUUID         string     `json:"table_uuid"`
	Location          string     `json:"location"`
	MetadataLocation  string     `json:"metadata_location"`
	FormatVersion     int        `json:"format_version"`
	CurrentSnapshotID *int64     `json:"current_snapshot_id,omitempty"`
	LastUpdatedAt     *time.Time `json:"last_updated_at,omitempty"`
	RefreshedAt       *time.Time `json:"refreshed_at,omitempty"`
	Error             string     `json:"error,omitempty"`
	ErrorAt           *time.Time `json:"error_at,omitempty"`
	GoneAt            *time.Time `json:"gone_at,omitempty"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

type tableDetailResponse struct {
	tableResponse
	MetadataLog         []metadataFileResponse `json:"metadata_log"`
	Statistics          []statsFileResponse    `json:"statistics"`
	PartitionStatistics []statsFileResponse    `json:"partition_statistics"`
	PartitionSpecs      []specResponse         `json:"partition_specs"`
	CurrentSnapshot     *snapshotResponse      `json:"current_snapshot,omitempty"`
}

type metadataFileResponse struct {
	Path string    `json:"path"`
	At   time.Time `json:"at"`
}

type statsFileResponse struct {
	SnapshotID int64  `json:"snapshot_id"`
	Path       string `json:"path"`
	SizeBytes  int64  `json:"size_bytes"`
}

type specResponse struct {
	ID     int                 `json:"id"`
	Fields []specFieldResponse `json:"fields"`
}

type specFieldResponse struct {
	FieldID   int    `json:"field_id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

type tableListResponse struct {
	Items      []tableResponse `json:"items"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

type registerTableRequest struct {
	MetadataLocation string `json:"metadata_location"`
	Namespace        string `json:"namespace,omitempty"`
	Name             string `json:"name,omitempty"`
	// Force registers a metadata file older than the table's current one (admin only).
	Force bool `json:"force,omitempty"`
}

type refreshResponse struct {
	AssetID             uuid.UUID `json:"asset_id"`
	MetadataLocation    string    `json:"metadata_location"`
	Snapshots           int       `json:"snapshots"`
	ManifestListsRead   int       `json:"manifest_lists_read"`
	ManifestListsCached int       `json:"manifest_lists_cached"`
	ManifestsRead       int       `json:"manifests_read"`
	ManifestsCached     int       `json:"manifests_cached"`
	EntriesRead         int64     `json:"entries_read"`
	Duration            string    `json:"duration"`
}

type registerResponse struct {
	Table   tableResponse   `json:"table"`
	Refresh refreshResponse `json:"refresh"`
}

type snapshotResponse struct {
	ID              int64             `json:"id"`
	ParentID        *int64            `json:"parent_id,omitempty"`
	SequenceNumber  int64             `json:"sequence_number"`
	At              time.Time         `json:"at"`
	Operation       string            `json:"operation,omitempty"`
	Current         bool              `json:"current"`
	ManifestList    string            `json:"manifest_list"`
	DataManifests   int               `json:"data_manifests"`
	DeleteManifests int               `json:"delete_manifests"`
	DataFiles       int64             `json:"data_files"`
	DeleteFiles     int64             `json:"delete_files"`
	Records         int64             `json:"records"`
	Bytes           int64             `json:"bytes"`
	ManifestEntries int64             `json:"manifest_entries"`
	Summary         map[string]string `json:"summary,omitempty"`
}

type snapshotsResponse struct {
	AssetID   uuid.UUID          `json:"asset_id"`
	Snapshots []snapshotResponse `json:"snapshots"`
}

type fileResponse struct {
	Path            string         `json:"path"`
	Content         string         `json:"content"`
	Format          string         `json:"format"`
	SizeBytes       int64          `json:"size_bytes"`
	Records         int64          `json:"records"`
	SpecID          int32          `json:"spec_id"`
	Partition       map[string]any `json:"partition,omitempty"`
	Manifest        string         `json:"manifest"`
	AddedSnapshotID int64          `json:"added_snapshot_id"`
}

type filesResponse struct {
	AssetID    uuid.UUID      `json:"asset_id"`
	SnapshotID int64          `json:"snapshot_id,omitempty"`
	Items      []fileResponse `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

type distributionResponse struct {
	Min    int64   `json:"min"`
	Median int64   `json:"median"`
	Avg    float64 `json:"avg"`
	P90    int64   `json:"p90"`
	Max    int64   `json:"max"`
}

type bucketResponse struct {
	Label     string `json:"label"`
	UpToBytes int64  `json:"up_to_bytes"`
	Files     int64  `json:"files"`
	Bytes     int64  `json:"bytes"`
}

type recommendationResponse struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Figures map[string]any `json:"figures"`
}

type tableHealthResponse struct {
	AssetID               uuid.UUID                `json:"asset_id"`
	SnapshotID            *int64                   `json:"snapshot_id,omitempty"`
	ComputedAt            time.Time                `json:"computed_at"`
	DataFiles             int64                    `json:"data_files"`
	DeleteFiles           int64                    `json:"delete_files"`
	Records               int64                    `json:"records"`
	Bytes                 int64                    `json:"bytes"`
	Partitions            int64                    `json:"partitions"`
	FilesPerPartition     distributionResponse     `json:"files_per_partition"`
	FileSizeBytes         distributionResponse     `json:"file_size_bytes"`
	FileSizeHistogram     []bucketResponse         `json:"file_size_histogram"`
	SmallFileTargetBytes  int64                    `json:"small_file_target_bytes"`
	SmallFiles            int64                    `json:"small_files"`
	SmallFilesBytes       int64                    `json:"small_files_bytes"`
	Manifests             int                      `json:"manifests"`
	ManifestsPerSnapshot  distributionResponse     `json:"manifests_per_snapshot"`
	ScanEntries           int64                    `json:"scan_entries"`
	SnapshotsRetained     int                      `json:"snapshots_retained"`
	OldestSnapshotAt      *time.Time               `json:"oldest_snapshot_at,omitempty"`
	MetadataFilesRetained int                      `json:"metadata_files_retained"`
	Recommendations       []recommendationResponse `json:"recommendations"`
}

type syncChangeResponse struct {
	AssetID    *uuid.UUID `json:"asset_id,omitempty"`
	Identifier string     `json:"identifier"`
	From       string     `json:"from,omitempty"`
	TableUUID  string     `json:"table_uuid,omitempty"`
	Error      string     `json:"error,omitempty"`
}

type namespaceErrorResponse struct {
	Namespace string `json:"namespace"`
	Error     string `json:"error"`
}

type syncConnectionResponse struct {
	Name                  string                   `json:"name"`
	Error                 string                   `json:"error,omitempty"`
	Namespaces            int                      `json:"namespaces"`
	Tables                int                      `json:"tables"`
	UnreachableNamespaces []namespaceErrorResponse `json:"unreachable_namespaces"`
	Added                 []syncChangeResponse     `json:"added"`
	Renamed               []syncChangeResponse     `json:"renamed"`
	Restored              []syncChangeResponse     `json:"restored"`
	MarkedDeleted         []syncChangeResponse     `json:"marked_deleted"`
	Failed                []syncChangeResponse     `json:"failed"`
	Refreshed             int                      `json:"refreshed"`
	Unchanged             int                      `json:"unchanged"`
	ManifestsRead         int                      `json:"manifests_read"`
	ManifestsCached       int                      `json:"manifests_cached"`
}

type syncResponse struct {
	ID            uuid.UUID                `json:"id"`
	StartedAt     time.Time                `json:"started_at"`
	FinishedAt    time.Time                `json:"finished_at"`
	Connections   []syncConnectionResponse `json:"connections"`
	Added         int                      `json:"added"`
	Renamed       int                      `json:"renamed"`
	Restored      int                      `json:"restored"`
	MarkedDeleted int                      `json:"marked_deleted"`
	Refreshed     int                      `json:"refreshed"`
	Errors        int                      `json:"errors"`
}

type syncsResponse struct {
	Items []syncResponse `json:"items"`
}

func (a *API) tableRoutes() {
	if a.cfg.Tables == nil {
		return
	}
	const base = "/api/v1/tables"
	idParam := []param{{Name: "id", In: "path", Required: true, Description: "the table's asset ID"}}
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base,
		Summary:   "Register an Iceberg table by its metadata location (again: move it to that metadata)",
		Tag:       "tables",
		Body:      registerTableRequest{},
		Responses: map[int]any{200: registerResponse{}},
	}, a.registerTable)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base,
		Summary:   "Iceberg tables the catalog knows, in asset-ID order",
		Tag:       "tables",
		Params:    []param{{Name: "limit", In: "query", Description: "1-1000, default 100"}, {Name: "cursor", In: "query"}},
		Responses: map[int]any{200: tableListResponse{}},
	}, a.listTables)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/sync",
		Summary:   "Sync every configured Iceberg catalog now and return the reconciliation report",
		Tag:       "tables",
		Scope:     auth.ScopeAdmin,
		Responses: map[int]any{200: syncResponse{}},
	}, a.syncTables)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/syncs",
		Summary:   "Recent sync reports, newest first",
		Tag:       "tables",
		Params:    []param{{Name: "limit", In: "query", Description: "1-100, default 10"}},
		Responses: map[int]any{200: syncsResponse{}},
	}, a.listSyncs)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id",
		Summary:   "An Iceberg table: source, metadata files, statistics files, partition specs, current snapshot",
		Tag:       "tables",
		Params:    idParam,
		Responses: map[int]any{200: tableDetailResponse{}},
	}, a.getTable)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      base + "/:id/refresh",
		Summary:   "Reload the table's metadata and inspect it, reading only manifests not read before",
		Tag:       "tables",
		Params:    idParam,
		Responses: map[int]any{200: refreshResponse{}},
	}, a.refreshTable)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/snapshots",
		Summary:   "Retained snapshots, oldest first, with manifest and file counts",
		Tag:       "tables",
		Params:    idParam,
		Responses: map[int]any{200: snapshotsResponse{}},
	}, a.tableSnapshots)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    base + "/:id/files",
		Summary: "Live data and delete files a snapshot references",
		Tag:     "tables",
		Params: append(idParam, param{Name: "snapshot", In: "query", Description: "snapshot ID; default the current one"},
			param{Name: "limit", In: "query", Description: "1-1000, default 100"}, param{Name: "cursor", In: "query"}),
		Responses: map[int]any{200: filesResponse{}},
	}, a.tableFiles)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/:id/health",
		Summary:   "Layout health of the current snapshot, with recommendations and the figures behind them",
		Tag:       "tables",
		Params:    idParam,
		Responses: map[int]any{200: tableHealthResponse{}},
	}, a.tableHealth)
	a.commitRoutes()
}

func (a *API) registerTable(c echo.Context) error {
	var req registerTableRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if req.Force && !a.allows(c, auth.ScopeAdmin) {
		return newProblem(http.StatusForbidden, "force moves a table back to older metadata: it needs a token with the admin scope")
	}
	t, rep, err := a.cfg.Tables.Register(ctx, tables.RegisterInput{MetadataLocation: req.MetadataLocation, Namespace: req.Namespace, Name: req.Name, Force: req.Force})
	if err != nil {
		return err
	}
	tr, err := a.tableResponse(c, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, registerResponse{Table: tr, Refresh: toRefreshResponse(rep)})
}

func (a *API) tableResponse(c echo.Context, t tables.Table) (tableResponse, error) {
	asset, err := a.cfg.Catalog.Get(c.Request().Context(), t.AssetID)
	if err != nil {
		return tableResponse{}, err
	}
	return tableResponse{AssetID: t.AssetID, Namespace: asset.Namespace, Name: asset.Name, Status: string(asset.Status),
		Connection: t.Connection, Warehouse: t.Warehouse, Identifier: t.Identifier, TableUUID: t.TableUUID, Location: t.Location,
		MetadataLocation: t.MetadataLocation, FormatVersion: t.FormatVersion, CurrentSnapshotID: t.CurrentSnapshotID,
		LastUpdatedAt: t.LastUpdatedAt, RefreshedAt: t.RefreshedAt, Error: t.Error, ErrorAt: t.ErrorAt, GoneAt: t.GoneAt,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}, nil
}

func (a *API) listTables(c echo.Context) error {
	limit, err := queryLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	after, err := decodeCursor(c.QueryParam("cursor"), "tables")
	if err != nil {
		return err
	}
	ts, more, err := a.cfg.Tables.List(c.Request().Context(), after, limit)
	if err != nil {
		return err
	}
	out := tableListResponse{Items: make([]tableResponse, 0, len(ts))}
	for _, t := range ts {
		tr, err := a.tableResponse(c, t)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, tr)
	}
	if more {
		out.NextCursor = encodeCursor(ts[len(ts)-1].AssetID, "tables")
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) getTable(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := a.cfg.Tables.Get(ctx, id)
	if err != nil {
		return err
	}
	tr, err := a.tableResponse(c, t)
	if err != nil {
		return err
	}
	out := tableDetailResponse{tableResponse: tr, MetadataLog: []metadataFileResponse{}, Statistics: []statsFileResponse{},
		PartitionStatistics: []statsFileResponse{}, PartitionSpecs: []specResponse{}}
	in, err := a.cfg.Tables.Inspection(ctx, id)
	if err == nil {
		for _, m := range in.MetadataLog {
			out.MetadataLog = append(out.MetadataLog, metadataFileResponse(m))
		}
		for _, s := range in.Statistics {
			out.Statistics = append(out.Statistics, statsFileResponse{SnapshotID: s.SnapshotID, Path: s.Path, SizeBytes: s.Size})
		}
		for _, s := range in.PartitionStats {
			out.PartitionStatistics = append(out.PartitionStatistics, statsFileResponse{SnapshotID: s.SnapshotID, Path: s.Path, SizeBytes: s.Size})
		}
		for _, sp := range in.Specs {
			r := specResponse{ID: sp.ID, Fields: []specFieldResponse{}}
			for _, f := range sp.Fields {
				r.Fields = append(r.Fields, specFieldResponse(f))
			}
			out.PartitionSpecs = append(out.PartitionSpecs, r)
		}
		for _, s := range in.Snapshots {
			if s.Current {
				sr := toSnapshotResponse(s)
				out.CurrentSnapshot = &sr
			}
		}
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) refreshTable(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	rep, err := a.cfg.Tables.Refresh(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toRefreshResponse(rep))
}

func (a *API) tableSnapshots(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	in, err := a.cfg.Tables.Inspection(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := snapshotsResponse{AssetID: id, Snapshots: make([]snapshotResponse, 0, len(in.Snapshots))}
	for _, s := range in.Snapshots {
		out.Snapshots = append(out.Snapshots, toSnapshotResponse(s))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) tableFiles(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	var snap *int64
	if s := c.QueryParam("snapshot"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return badRequest("snapshot", "snapshot must be a snapshot ID (a whole number), not %q", truncate(s, 32))
		}
		snap = &n
	}
	cursor := ""
	if s := c.QueryParam("cursor"); s != "" {
		raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(s) > 200 {
			return badRequest("cursor", "cursor %q is not valid; pass next_cursor from the previous page unchanged", truncate(s, 64))
		}
		cursor = string(raw)
	}
	page, err := a.cfg.Tables.Files(c.Request().Context(), id, snap, cursor, limit)
	if err != nil {
		return err
	}
	out := filesResponse{AssetID: id, SnapshotID: page.SnapshotID, Items: make([]fileResponse, 0, len(page.Files))}
	for _, f := range page.Files {
		out.Items = append(out.Items, fileResponse{Path: f.Path, Content: f.Content, Format: f.Format, SizeBytes: f.Size,
			Records: f.Records, SpecID: f.SpecID, Partition: f.Partition, Manifest: f.Manifest, AddedSnapshotID: f.Added})
	}
	if page.Next != "" {
		out.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page.Next))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) tableHealth(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	h, err := a.cfg.Tables.Health(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := tableHealthResponse{AssetID: id, SnapshotID: h.SnapshotID, ComputedAt: h.ComputedAt, DataFiles: h.DataFiles,
		DeleteFiles: h.DeleteFiles, Records: h.Records, Bytes: h.Bytes, Partitions: h.Partitions,
		FilesPerPartition: distributionResponse(h.FilesPerPartition), FileSizeBytes: distributionResponse(h.FileSize),
		FileSizeHistogram: []bucketResponse{}, SmallFileTargetBytes: h.SmallFileTarget, SmallFiles: h.SmallFiles,
		SmallFilesBytes: h.SmallFilesBytes, Manifests: h.Manifests, ManifestsPerSnapshot: distributionResponse(h.ManifestsPerSnapshot),
		ScanEntries: h.ScanEntries, SnapshotsRetained: h.SnapshotsRetained, OldestSnapshotAt: h.OldestSnapshotAt,
		MetadataFilesRetained: h.MetadataFilesRetained, Recommendations: []recommendationResponse{}}
	for _, b := range h.FileSizeHistogram {
		out.FileSizeHistogram = append(out.FileSizeHistogram, bucketResponse{Label: b.Label, UpToBytes: b.UpTo, Files: b.Files, Bytes: b.Bytes})
	}
	for _, r := range h.Recommendations {
		out.Recommendations = append(out.Recommendations, recommendationResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) syncTables(c echo.Context) error {
	rep, err := a.cfg.Tables.Sync(c.Request().Context(), nil)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toSyncResponse(rep))
}

func (a *API) listSyncs(c echo.Context) error {
	limit, err := queryLimit(c, 10, 100)
	if err != nil {
		return err
	}
	reps, err := a.cfg.Tables.Syncs(c.Request().Context(), limit)
	if err != nil {
		return err
	}
	out := syncsResponse{Items: make([]syncResponse, 0, len(reps))}
	for _, r := range reps {
		out.Items = append(out.Items, toSyncResponse(r))
	}
	return c.JSON(http.StatusOK, out)
}

func toRefreshResponse(r tables.RefreshReport) refreshResponse {
	return refreshResponse{AssetID: r.AssetID, MetadataLocation: r.MetadataLocation, Snapshots: r.Snapshots,
		ManifestListsRead: r.ManifestListsRead, ManifestListsCached: r.ManifestListsHit, ManifestsRead: r.ManifestsRead,
		ManifestsCached: r.ManifestsCached, EntriesRead: r.EntriesRead, Duration: r.Duration}
}

func toSnapshotResponse(s tables.Snapshot) snapshotResponse {
	return snapshotResponse{ID: s.ID, ParentID: s.ParentID, SequenceNumber: s.SequenceNumber, At: s.At, Operation: s.Operation,
		Current: s.Current, ManifestList: s.ManifestList, DataManifests: s.DataManifests, DeleteManifests: s.DeleteManifests,
		DataFiles: s.DataFiles, DeleteFiles: s.DeleteFiles, Records: s.Records, Bytes: s.Bytes, ManifestEntries: s.ManifestEntries,
		Summary: s.Summary}
}

func toSyncResponse(r tables.SyncReport) syncResponse {
	changes := func(cs []tables.TableChange) []syncChangeResponse {
		out := make([]syncChangeResponse, 0, len(cs))
		for _, ch := range cs {
			sc := syncChangeResponse{Identifier: ch.Identifier, From: ch.From, TableUUID: ch.TableUUID, Error: ch.Error}
			if ch.AssetID != uuid.Nil {
				id := ch.AssetID
				sc.AssetID = &id
			}
			out = append(out, sc)
		}
		return out
	}
	out := syncResponse{ID: r.ID, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Connections: []syncConnectionResponse{},
		Added: r.Added, Renamed: r.Renamed, Restored: r.Restored, MarkedDeleted: r.MarkedDeleted, Refreshed: r.Refreshed, Errors: r.Errors}
	for _, cr := range r.Connections {
		sc := syncConnectionResponse{Name: cr.Name, Error: cr.Error, Namespaces: cr.Namespaces, Tables: cr.Tables,
			UnreachableNamespaces: []namespaceErrorResponse{}, Added: changes(cr.Added), Renamed: changes(cr.Renamed),
			Restored: changes(cr.Restored), MarkedDeleted: changes(cr.Deleted), Failed: changes(cr.Failed),
			Refreshed: cr.Refreshed, Unchanged: cr.Unchanged, ManifestsRead: cr.ManifestsRead, ManifestsCached: cr.ManifestsCached}
		for _, u := range cr.Unreachable {
			sc.UnreachableNamespaces = append(sc.UnreachableNamespaces, namespaceErrorResponse(u))
		}
		out.Connections = append(out.Connections, sc)
	}
	return out
}
