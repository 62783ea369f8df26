package restcatalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	etags "github.com/tidemark/tidemark/internal/etag"
	"github.com/tidemark/tidemark/warehouse"
)

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type listTablesResponse struct {
	NextPageToken *string      `json:"next-page-token,omitempty"`
	Identifiers   []identifier `json:"identifiers"`
}

func (f *Face) listTables(c echo.Context) error { return listNames(c, f.cfg.Warehouse.ListServed) }

// listNames answers a page of a namespace's tables or views, as list finds them.
func listNames(c echo.Context, list func(ctx context.Context, wh string, ns []string, token string, size int) ([]string, string, error)) error {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	size, err := pageSize(c)
	if err != nil {
		return err
	}
	names, next, err := list(c.Request().Context(), wh, ns, c.QueryParam("pageToken"), size)
	if err != nil {
		return err
	}
	r := listTablesResponse{Identifiers: make([]identifier, len(names))}
	for i, n := range names {
		r.Identifiers[i] = identifier{Namespace: ns, Name: n}
	}
	if next != "" {
		r.NextPageToken = &next
	}
	return c.JSON(http.StatusOK, r)
}

// loadTableResponse is the spec's LoadTableResult.
type loadTableResponse struct {
	MetadataLocation   string              `json:"metadata-location,omitempty"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

// answerLoad answers a LoadTableResult with the table's ETag (none for a staged table: it has
// no metadata file yet) and its storage access (access.go).
func (f *Face) answerLoad(c echo.Context, wh string, t warehouse.ServedTable) error {
	return f.answerLoadOf(c, wh, t, false)
}

// answerLoadOf answers a load; refs keeps only the snapshots a branch or tag points at
// (snapshots=refs), under an ETag of its own.
func (f *Face) answerLoadOf(c echo.Context, wh string, t warehouse.ServedTable, refs bool) error {
	b, err := json.Marshal(t.Metadata)
	if err != nil {
		return err
	}
	if refs {
		if b, err = onlyRefSnapshots(b); err != nil {
			return err
		}
	}
	cfg, creds, err := f.storageAccess(c, wh, t)
	if err != nil {
		return err
	}
	if t.MetadataLocation != "" {
		c.Response().Header().Set("ETag", loadETag(t.MetadataLocation, refs))
	}
	if len(creds) > 0 {
		c.Response().Header().Set("Cache-Control", "no-store")
	}
	return c.JSON(http.StatusOK, loadTableResponse{MetadataLocation: t.MetadataLocation, Metadata: b, Config: cfg, StorageCredentials: creds})
}

// loadETag names what a load answers: the table's state, and whether only referenced
// snapshots were asked for (the spec wants the two answers to have distinct ETags).
func loadETag(loc string, refs bool) string {
	if refs {
		return etag(loc + "#snapshots=refs")
	}
	return etag(loc)
}

// onlyRefSnapshots keeps, of a metadata document's snapshots, those a branch or tag points at.
// The snapshot log stays whole: it is history, and readers of refs only use it for display.
func onlyRefSnapshots(b []byte) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var refs map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	}
	if raw, ok := doc["refs"]; ok {
		if err := json.Unmarshal(raw, &refs); err != nil {
			return nil, err
		}
	}
	keep := map[int64]bool{}
	for _, r := range refs {
		keep[r.SnapshotID] = true
	}
	if cur, ok := doc["current-snapshot-id"]; ok {
		var id *int64
		if err := json.Unmarshal(cur, &id); err == nil && id != nil {
			keep[*id] = true
		}
	}
	var snaps []json.RawMessage
	if raw, ok := doc["snapshots"]; ok {
		if err := json.Unmarshal(raw, &snaps); err != nil {
			return nil, err
		}
	}
	kept := make([]json.RawMessage, 0, len(snaps))
	for _, sn := range snaps {
		var id struct {
			SnapshotID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(sn, &id); err != nil {
			return nil, err
		}
		if keep[id.SnapshotID] {
			kept = append(kept, sn)
		}
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["snapshots"] = raw
	return json.Marshal(doc)
}

// etag names a table's state: the metadata location changes with every commit.
func etag(loc string) string {
	sum := sha256.Sum256([]byte(loc))
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

type createTableBody struct {
	Name          string                        `json:"name"`
	Location      string                        `json:"location"`
	Schema        *iceberg.Schema               `json:"schema"`
	PartitionSpec *iceberg.UnboundPartitionSpec `json:"partition-spec"`
	WriteOrder    *table.UnboundSortOrder       `json:"write-order"`
	StageCreate   bool                          `json:"stage-create"`
	Properties    map[string]string             `json:"properties"`
}

func (f *Face) createTable(c echo.Context) error {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	var in createTableBody
	if err := decode(c, &in); err != nil {
		return err
	}
	ci := warehouse.CreateServedInput{Ident: warehouse.TableIdent{Namespace: ns, Name: in.Name}, Schema: in.Schema, Location: in.Location,
		Properties: in.Properties, Stage: in.StageCreate}
	if in.PartitionSpec != nil {
		ci.Spec = &in.PartitionSpec.PartitionSpec
	}
	if in.WriteOrder != nil {
		ci.SortOrder = &in.WriteOrder.SortOrder
	}
	t, err := f.cfg.Warehouse.CreateServed(c.Request().Context(), wh, ci, f.options(c))
	if err != nil {
		return err
	}
	return f.answerLoad(c, wh, t)
}

type registerBody struct {
	Name             string `json:"name"`
	MetadataLocation string `json:"metadata-location"`
	Overwrite        bool   `json:"overwrite"`
}

func (f *Face) registerTable(c echo.Context) error {
	wh, ns, err := namespaceArgs(c)
	if err != nil {
		return err
	}
	var in registerBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.MetadataLocation == "" {
		return badRequest("metadata-location is empty: give the URI of the table's metadata JSON file")
	}
	t, err := f.cfg.Warehouse.RegisterServed(c.Request().Context(), wh, warehouse.TableIdent{Namespace: ns, Name: in.Name}, in.MetadataLocation, in.Overwrite, f.options(c))
	if err != nil {
		return err
	}
	return f.answerLoad(c, wh, t)
}

func (f *Face) loadTable(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	refs := false
	switch c.QueryParam("snapshots") {
	case "", "all":
	case "refs":
		refs = true
	default:
		return badRequest("snapshots must be all or refs, not %q", c.QueryParam("snapshots"))
	}
	ctx := c.Request().Context()
	if inm := c.Request().Header.Get("If-None-Match"); inm != "" {
		_, loc, err := f.cfg.Warehouse.ServedPointer(ctx, wh, id)
		if err != nil {
			return err
		}
		// A list of tags, weak ones, several header lines: RFC 9110's weak comparison.
		if tag := loadETag(loc, refs); etags.Matches(strings.Join(c.Request().Header.Values("If-None-Match"), ","), tag) {
			c.Response().Header().Set("ETag", tag)
			return c.NoContent(http.StatusNotModified)
		}
	}
	t, err := f.cfg.Warehouse.LoadServed(ctx, wh, id)
	if err != nil {
		return err
	}
	f.loaded(ctx, t.AssetID)
	return f.answerLoadOf(c, wh, t, refs)
}

func (f *Face) tableExists(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	if _, _, err := f.cfg.Warehouse.ServedPointer(c.Request().Context(), wh, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// commitBody is the spec's CommitTableRequest (and one of a transaction's table changes).
type commitBody struct {
	Identifier   *identifier        `json:"identifier"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`
}

type commitResponse struct {
	MetadataLocation string          `json:"metadata-location"`
	Metadata         json.RawMessage `json:"metadata"`
}

// maxUpdates bounds one table change; a commit of more is a mistake, not a workload.
const maxUpdates = 10000

func (b commitBody) change(id warehouse.TableIdent) (warehouse.CommitChange, error) {
	if len(b.Updates)+len(b.Requirements) > maxUpdates {
		return warehouse.CommitChange{}, badRequest("a table change may hold at most %d requirements and updates", maxUpdates)
	}
	return warehouse.CommitChange{Ident: id, Requirements: b.Requirements, Updates: b.Updates}, nil
}

func (f *Face) commitTable(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	done := warehouse.Phase(c.Request().Context(), "decode")
	var in commitBody
	err = decode(c, &in)
	done()
	if err != nil {
		return err
	}
	if in.Identifier != nil && (in.Identifier.Name != id.Name || strings.Join(in.Identifier.Namespace, "\x1f") != strings.Join(id.Namespace, "\x1f")) {
		return badRequest("the body's identifier %s.%s is not the table in the path, %s", strings.Join(in.Identifier.Namespace, "."), in.Identifier.Name, id)
	}
	ch, err := in.change(id)
	if err != nil {
		return err
	}
	out, err := f.cfg.Warehouse.Commit(c.Request().Context(), wh, []warehouse.CommitChange{ch}, f.writeOptions(c))
	if err != nil {
		return err
	}
	f.wrote(c, out)
	c.Response().Header().Set("ETag", etag(out[0].MetadataLocation))
	b := out[0].MetadataJSON // as the commit wrote it: not encoded a second time
	if b == nil {
		m, err := json.Marshal(out[0].Metadata)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, commitResponse{MetadataLocation: out[0].MetadataLocation, Metadata: m})
	}
	// commitResponse written by hand: json.Marshal would compact the metadata's bytes again.
	loc, err := json.Marshal(out[0].MetadataLocation)
	if err != nil {
		return err
	}
	body := make([]byte, 0, len(b)+len(loc)+36)
	body = append(append(append(append(body, `{"metadata-location":`...), loc...), `,"metadata":`...), b...)
	return c.JSONBlob(http.StatusOK, append(body, '}'))
}

// writeOptions are a commit's options (one table's or a transaction's): each table's commit is
// kept as a write in its usage, in the swap's transaction (best effort: the commit stands either
// way).
func (f *Face) writeOptions(c echo.Context) warehouse.CommitOptions {
	opt := f.options(c)
	if f.cfg.RecordUse != nil {
		opt.Committed = func(ctx context.Context, asset uuid.UUID, loc string) error {
			return f.cfg.RecordUse(ctx, asset, "write", catalog.ActorFrom(ctx), "iceberg-commit:"+loc, f.cfg.Now())
		}
	}
	return opt
}

// wrote notes the committed tables' writes against the loads held for their principal (a load
// followed by a commit is not a read; loads.go).
func (f *Face) wrote(c echo.Context, out []warehouse.ServedTable) {
	if f.cfg.RecordUse == nil {
		return
	}
	for _, t := range out {
		f.committed(c.Request().Context(), t.AssetID)
	}
}

type transactionBody struct {
	TableChanges []commitBody `json:"table-changes"`
}

// maxTableChanges bounds one multi-table transaction.
const maxTableChanges = 100

func (f *Face) commitTransaction(c echo.Context) error {
	wh, err := prefix(c)
	if err != nil {
		return err
	}
	var in transactionBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if len(in.TableChanges) == 0 || len(in.TableChanges) > maxTableChanges {
		return badRequest("a transaction holds 1 to %d table changes, not %d", maxTableChanges, len(in.TableChanges))
	}
	changes := make([]warehouse.CommitChange, len(in.TableChanges))
	for i, b := range in.TableChanges {
		if b.Identifier == nil {
			return badRequest("table change %d has no identifier", i)
		}
		ch, err := b.change(warehouse.TableIdent{Namespace: b.Identifier.Namespace, Name: b.Identifier.Name})
		if err != nil {
			return err
		}
		changes[i] = ch
	}
	out, err := f.cfg.Warehouse.Commit(c.Request().Context(), wh, changes, f.writeOptions(c))
	if err != nil {
		return err
	}
	f.wrote(c, out)
	return c.NoContent(http.StatusNoContent)
}

func (f *Face) dropTable(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	purge := false
	if v := c.QueryParam("purgeRequested"); v != "" {
		if purge, err = strconv.ParseBool(v); err != nil {
			return badRequest("purgeRequested must be true or false, not %q", v)
		}
	}
	if purge && !f.allows(c, auth.ScopeAdmin) {
		return apiError(http.StatusForbidden, "ForbiddenException", "dropping with purgeRequested=true needs a token with the admin scope (the purge itself waits for a cleanup proposal and a person's approval)")
	}
	if err := f.cfg.Warehouse.DropServed(c.Request().Context(), wh, id, purge, f.options(c)); err != nil {
		return err
	}
	if purge && f.cfg.Purged != nil {
		f.cfg.Purged(c.Request().Context())
	}
	return c.NoContent(http.StatusNoContent)
}

// unregisterTable takes a table out of the catalog and leaves its files (the opposite of a
// register, so admin like one), answering its last metadata.
func (f *Face) unregisterTable(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	t, err := f.cfg.Warehouse.UnregisterServed(c.Request().Context(), wh, id, f.options(c))
	if err != nil {
		return err
	}
	b, err := json.Marshal(t.Metadata)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, commitResponse{MetadataLocation: t.MetadataLocation, Metadata: b})
}

type renameBody struct {
	Source      *identifier `json:"source"`
	Destination *identifier `json:"destination"`
}

func (f *Face) renameTable(c echo.Context) error {
	wh, err := prefix(c)
	if err != nil {
		return err
	}
	var in renameBody
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Source == nil || in.Destination == nil {
		return badRequest("a rename needs source and destination identifiers")
	}
	from := warehouse.TableIdent{Namespace: in.Source.Namespace, Name: in.Source.Name}
	to := warehouse.TableIdent{Namespace: in.Destination.Namespace, Name: in.Destination.Name}
	if err := f.cfg.Warehouse.RenameServed(c.Request().Context(), wh, from, to, f.options(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

type metricsBody struct {
	ReportType string `json:"report-type"`
	TableName  string `json:"table-name"`
	// SnapshotID is read as written: snapshot IDs routinely exceed 2^53, beyond a float.
	SnapshotID json.RawMessage `json:"snapshot-id"`
}

// snapshot is the report's snapshot ID in decimal ("" when it names none), or an error when it
// is not a 64-bit integer.
func (m metricsBody) snapshot() (string, error) {
	s := strings.TrimSpace(string(m.SnapshotID))
	if s == "" || s == "null" {
		return "", nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return "", badRequest("snapshot-id must be a 64-bit integer, not %.40s", s)
	}
	return strconv.FormatInt(n, 10), nil
}

// reportMetrics keeps a scan report as a read of the table at the snapshot it names (a commit
// report is already known: the commit went through this catalog). A retried report is counted
// once; one principal's reports of two snapshots in one hour are two reads. Only a token's
// report is a read (anonymous traffic must not keep a table alive, see loads.go), so a report
// without one is checked and answered, and recorded nowhere.
func (f *Face) reportMetrics(c echo.Context) error {
	wh, id, err := tableArgs(c)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var in metricsBody
	if err := json.Unmarshal(body, &in); err != nil {
		return badRequest("the metrics report is not JSON: %v", err)
	}
	switch in.ReportType {
	case "scan-report", "commit-report":
	default:
		return badRequest("report-type must be scan-report or commit-report, not %q", in.ReportType)
	}
	version, err := in.snapshot()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	asset, _, err := f.cfg.Warehouse.ServedPointer(ctx, wh, id)
	if err != nil {
		return err
	}
	actor, ok := byToken(ctx)
	if !ok || in.ReportType != "scan-report" {
		return c.NoContent(http.StatusNoContent)
	}
	// One read a principal, table, snapshot and hour (see loads.go).
	now := f.cfg.Now()
	key := readKey(asset, actor, now)
	switch {
	case f.cfg.RecordScan != nil:
		if version != "" {
			key += ":" + version
		}
		if err := f.cfg.RecordScan(ctx, asset, actor, key, version, now); err != nil {
			return err
		}
		if version != "" {
			// The principal's held load of the table this hour was this read's: the report
			// counted it, with its version.
			f.loads.mu.Lock()
			delete(f.loads.held, readKey(asset, actor, now))
			f.loads.mu.Unlock()
		}
	case f.cfg.RecordUse != nil:
		if err := f.cfg.RecordUse(ctx, asset, "read", actor, key, now); err != nil {
			return err
		}
	}
	if version != "" && f.cfg.ScanReported != nil {
		// The read is recorded; a retried report records nothing twice and tells again.
		if err := f.cfg.ScanReported(ctx, asset, now); err != nil {
			return err
		}
	}
	return c.NoContent(http.StatusNoContent)
}
