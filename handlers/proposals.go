package handlers

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/cleanup"
)

// Response types of the proposal API.

type nameEvidenceResponse struct {
	Namespace  string     `json:"namespace"`
	Name       string     `json:"name"`
	Current    bool       `json:"current"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

type evidenceResponse struct {
	Summary          string                  `json:"summary"`
	Scans            []uuid.UUID             `json:"scans,omitempty"`
	Shards           []string                `json:"shards,omitempty"`
	Files            int64                   `json:"files,omitempty"`
	Bytes            int64                   `json:"bytes,omitempty"`
	MonthlyCostUSD   float64                 `json:"monthly_cost_usd,omitempty"`
	AgeThreshold     string                  `json:"age_threshold,omitempty"`
	MinGap           string                  `json:"min_gap,omitempty"`
	Assumption       string                  `json:"assumption,omitempty"`
	TableUUID        string                  `json:"table_uuid,omitempty"`
	MetadataLocation string                  `json:"metadata_location,omitempty"`
	ForeignTenants   []foreignTenantResponse `json:"foreign_tenants,omitempty"`
	Reopens          *uuid.UUID              `json:"reopens,omitempty"`
	ReopensWhy       string                  `json:"reopens_why,omitempty"`
	Window           string                  `json:"window,omitempty"`
	From             *time.Time              `json:"from,omitempty"`
	To               *time.Time              `json:"to,omitempty"`
	LastRead         *time.Time              `json:"last_read,omitempty"`
	Names            []nameEvidenceResponse  `json:"names,omitempty"`
	Readers          int                     `json:"distinct_readers_ever,omitempty"`
	Downstream       []uuid.UUID             `json:"downstream,omitempty"`
	Owners           []string                `json:"owners,omitempty"`
	AssetCreatedAt   *time.Time              `json:"asset_created_at,omitempty"`
	Location         string                  `json:"location,omitempty"`
	Snapshots        []int64                 `json:"snapshots,omitempty"`
	KeepLast         int                     `json:"keep_last,omitempty"`
	MaxAge           string                  `json:"max_age,omitempty"`
	Dangling         []danglingResponse      `json:"dangling,omitempty"`
	DanglingCount    int64                   `json:"dangling_count,omitempty"`
	Remedies         []string                `json:"remedies,omitempty"`
	ScanID           *uuid.UUID              `json:"scan_id,omitempty"`
	RefCheckID       *uuid.UUID              `json:"ref_check_id,omitempty"`
	// Kept (expire_snapshots): snapshots old enough to expire that it keeps, and why (read by
	// time travel, an input version a keep-input-versions downstream needs).
	Kept []keptSnapshotResponse `json:"kept,omitempty"`
	// FileList (expire_snapshots): the proposal lists the exact files it deletes (files, bytes;
	// GET .../files), and approving it confirms their count and bytes.
	FileList bool `json:"file_list,omitempty"`
	// FinalReconciliation: for a migrated asset's retirement, the clean run after the cutover.
	FinalReconciliation *uuid.UUID `json:"final_reconciliation,omitempty"`
}

type keptReaderResponse struct {
	Reader    string    `json:"reader"`
	Reads     int64     `json:"reads"`
	FirstRead time.Time `json:"first_read"`
	LastRead  time.Time `json:"last_read"`
}

type keptSnapshotResponse struct {
	Snapshot          int64                `json:"snapshot"`
	Reason            string               `json:"reason"`
	Readers           []keptReaderResponse `json:"readers,omitempty"`
	Downstream        *uuid.UUID           `json:"downstream,omitempty"`
	DownstreamVersion string               `json:"downstream_version,omitempty"`
	Run               string               `json:"run,omitempty"`
	Detail            string               `json:"detail"`
}

type stepResponse struct {
	Step   string          `json:"step"`
	DoneAt time.Time       `json:"done_at"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

type deliveryResponse struct {
	ID          uuid.UUID  `json:"id"`
	Event       string     `json:"event"`
	Recipient   string     `json:"recipient"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

type proposalResponse struct {
	ID         uuid.UUID        `json:"id"`
	Kind       string           `json:"kind"`
	AssetID    uuid.UUID        `json:"asset_id"`
	State      string           `json:"state"`
	Severity   string           `json:"severity"`
	Executable bool             `json:"executable"`
	Evidence   evidenceResponse `json:"evidence"`
	Reason     string           `json:"reason,omitempty"`
	DecidedBy  string           `json:"decided_by,omitempty"`
	DecidedAt  *time.Time       `json:"decided_at,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
	UpdatedAt  time.Time        `json:"updated_at"`
	ExecutedAt *time.Time       `json:"executed_at,omitempty"`
	DueAt      *time.Time       `json:"due_at,omitempty"`
	Outcome    json.RawMessage  `json:"outcome,omitempty"`
	Version    int64            `json:"version"`
	Files      map[string]int   `json:"files,omitempty"`
	// FileCount and FileBytes total the file list (GET .../files); approving a proposal with
	// confirm_required must confirm both.
	FileCount int64 `json:"file_count,omitempty"`
	FileBytes int64 `json:"file_bytes,omitempty"`
	// ConfirmRequired: the file list is what the proposal deletes (orphan_files, purge, and
	// expire_snapshots with evidence.file_list), so approving it needs confirm_files and
	// confirm_bytes.
	ConfirmRequired bool               `json:"confirm_required,omitempty"`
	Steps           []stepResponse     `json:"steps,omitempty"`
	Notifications   []deliveryResponse `json:"notifications,omitempty"`
}

type proposalListResponse struct {
	Items      []proposalResponse `json:"items"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

type decisionRequest struct {
	Reason string `json:"reason,omitempty"`
	// ConfirmFiles and ConfirmBytes (approve): the file count and bytes you reviewed; a
	// proposal with confirm_required (orphan_files, and expire_snapshots that list their files)
	// is approved only when they equal its file_count and file_bytes.
	ConfirmFiles *int64 `json:"confirm_files,omitempty"`
	ConfirmBytes *int64 `json:"confirm_bytes,omitempty"`
}

type proposalFileResponse struct {
	Path       string     `json:"path"`
	Size       int64      `json:"size"`
	ModifiedAt *time.Time `json:"modified_at,omitempty"`
	State      string     `json:"state"` // pending, deleted, gone, skipped; not_deleted once the proposal closed without execution
	Detail     string     `json:"detail,omitempty"`
	DoneAt     *time.Time `json:"done_at,omitempty"`
}

type proposalFileListResponse struct {
	Items      []proposalFileResponse `json:"items"`
	NextCursor string                 `json:"next_cursor,omitempty"`
}

type exemptRequest struct {
	Exempt bool   `json:"exempt"`
	Reason string `json:"reason,omitempty"`
	// Kinds are the proposal kinds exempted: unused_asset (the default), orphan_files, expire_snapshots.
	Kinds []string `json:"kinds,omitempty"`
}

type exemptResponse struct {
	AssetID uuid.UUID `json:"asset_id"`
	Exempt  bool      `json:"exempt"`
	Kinds   []string  `json:"kinds,omitempty"`
}

func (a *API) proposalRoutes() {
	if a.cfg.Cleanup == nil {
		return
	}
	id := []param{{Name: "id", In: "path", Required: true}}
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/proposals",
		Summary: "Cleanup proposals, newest first",
		Tag:     "cleanup",
		Params: []param{{Name: "state", In: "query", Description: "open, approved, executing, executed, failed, stopped, rejected, withdrawn, expired, cancelled"},
			{Name: "kind", In: "query", Description: "orphan_files, unused_asset, expire_snapshots, purge, dangling_reference, shared_location"},
			{Name: "asset", In: "query", Description: "an asset ID"}, {Name: "limit", In: "query", Description: "1-100, default 20"}, {Name: "cursor", In: "query"}},
		Responses: map[int]any{200: proposalListResponse{}},
	}, a.listProposals)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      "/api/v1/proposals/:id",
		Summary:   "A proposal with its evidence, execution journal and notification deliveries",
		Tag:       "cleanup",
		Params:    id,
		Responses: map[int]any{200: proposalResponse{}},
	}, a.getProposal)
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/proposals/:id/files",
		Summary: "The exact files of a proposal (path, size, modification time) and each one's journal outcome",
		Description: "In journal order, cursor-paged; format=csv or format=json downloads every file at once (an attachment; JSON as one page with every item). " +
			"state is pending until executed, then deleted, gone (already gone) or skipped (with the detail saying why).",
		Tag: "cleanup",
		Params: append(id, param{Name: "state", In: "query", Description: "pending, deleted, gone, skipped"},
			param{Name: "limit", In: "query", Description: "1-1000, default 100"}, param{Name: "cursor", In: "query"},
			param{Name: "format", In: "query", Description: "csv or json: every file as a download instead of a page"}),
		Responses: map[int]any{200: proposalFileListResponse{}},
		CSV:       true,
	}, a.proposalFiles)
	a.handle(operation{
		Method:  http.MethodPost,
		Path:    "/api/v1/proposals/:id/approve",
		Summary: "Approve an open proposal (a person with the admin scope; recorded as the approver)",
		Description: "A proposal that lists the files it deletes (confirm_required: orphan_files, and expire_snapshots with evidence.file_list) needs confirm_files and confirm_bytes equal to its file_count and file_bytes (400 otherwise). " +
			"The approved proposal waits the stop window (--cleanup-stop-window; due_at says until when) before it is executed; until then POST .../cancel takes it back.",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    id,
		Body:      decisionRequest{},
		Responses: map[int]any{200: proposalResponse{}},
	}, a.approveProposal)
	a.handle(operation{
		Method:      http.MethodPost,
		Path:        "/api/v1/proposals/:id/cancel",
		Summary:     "Cancel an approved proposal before its execution starts (reason optional)",
		Description: "409 once the executor has started it. Nothing of a cancelled proposal is executed.",
		Tag:         "cleanup",
		Scope:       auth.ScopeAdmin,
		Params:      id,
		Body:        decisionRequest{},
		Responses:   map[int]any{200: proposalResponse{}},
	}, a.cancelProposal)
	a.handle(operation{
		Method:    http.MethodPost,
		Path:      "/api/v1/proposals/:id/reject",
		Summary:   "Reject an open proposal, with the reason",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    id,
		Body:      decisionRequest{},
		Responses: map[int]any{200: proposalResponse{}},
	}, a.rejectProposal)
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      "/api/v1/assets/:id/cleanup-exempt",
		Summary:   "Exempt an asset from unused-asset, orphan-file or snapshot-expiry proposals (or lift the exemption)",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    id,
		Body:      exemptRequest{},
		Responses: map[int]any{200: exemptResponse{}},
	}, a.setExempt)
}

func (a *API) listProposals(c echo.Context) error {
	limit, err := queryLimit(c, 20, 100)
	if err != nil {
		return err
	}
	f := cleanup.ProposalFilter{State: c.QueryParam("state"), Kind: c.QueryParam("kind"), Limit: limit + 1}
	if s := c.QueryParam("asset"); s != "" {
		if f.AssetID, err = uuid.Parse(s); err != nil {
			return badRequest("asset", "asset %q is not an asset ID", truncate(s, 64))
		}
	}
	scope := fmt.Sprintf("proposals|%s|%s|%s", f.State, f.Kind, f.AssetID)
	if f.Before, err = decodeCursor(c.QueryParam("cursor"), scope); err != nil {
		return err
	}
	ps, err := a.cfg.Cleanup.Proposals(c.Request().Context(), f)
	if err != nil {
		return err
	}
	out := proposalListResponse{Items: []proposalResponse{}}
	for i, p := range ps {
		if i == limit {
			out.NextCursor = encodeCursor(ps[limit-1].ID, scope)
			break
		}
		out.Items = append(out.Items, toProposalResponse(p))
	}
	return c.JSON(http.StatusOK, out)
}

func (a *API) getProposal(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	p, err := a.cfg.Cleanup.GetProposal(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposalResponse(p))
}

func (a *API) approveProposal(c echo.Context) error { return a.decideProposal(c, true) }
func (a *API) rejectProposal(c echo.Context) error  { return a.decideProposal(c, false) }

func (a *API) decideProposal(c echo.Context, approve bool) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	var req decisionRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	var p cleanup.Proposal
	if approve {
		p, err = a.cfg.Cleanup.ApproveConfirmed(ctx, id, cleanup.Approval{Note: req.Reason, Files: req.ConfirmFiles, Bytes: req.ConfirmBytes})
	} else {
		p, err = a.cfg.Cleanup.Reject(ctx, id, req.Reason)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposalResponse(p))
}

func (a *API) cancelProposal(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	var req decisionRequest
	if err := bindOptional(c, &req); err != nil {
		return err
	}
	p, err := a.cfg.Cleanup.Cancel(c.Request().Context(), id, req.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposalResponse(p))
}

func (a *API) proposalFiles(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	state := c.QueryParam("state")
	ctx := c.Request().Context()
	switch format := c.QueryParam("format"); format {
	case "":
	case "csv", "json":
		// Check the proposal and the filter before the first byte is written.
		if _, err := a.cfg.Cleanup.ProposalFiles(ctx, id, cleanup.FileFilter{State: state, Limit: 1}); err != nil {
			return err
		}
		return writeProposalFiles(c, format, id, func(after uuid.UUID) ([]cleanup.ProposalFile, error) {
			return a.cfg.Cleanup.ProposalFiles(ctx, id, cleanup.FileFilter{After: after, State: state, Limit: 1000})
		})
	default:
		return badRequest("format", "format %q is not csv or json (leave it out for a page)", truncate(format, 32))
	}
	limit, err := queryLimit(c, 100, 1000)
	if err != nil {
		return err
	}
	scope := fmt.Sprintf("proposal-files|%s|%s", id, state)
	after, err := decodeCursor(c.QueryParam("cursor"), scope)
	if err != nil {
		return err
	}
	fs, err := a.cfg.Cleanup.ProposalFiles(ctx, id, cleanup.FileFilter{After: after, State: state, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := proposalFileListResponse{Items: []proposalFileResponse{}}
	for i, f := range fs {
		if i == limit {
			out.NextCursor = encodeCursor(fs[limit-1].ID, scope)
			break
		}
		out.Items = append(out.Items, toProposalFileResponse(f))
	}
	return c.JSON(http.StatusOK, out)
}

func toProposalFileResponse(f cleanup.ProposalFile) proposalFileResponse {
	return proposalFileResponse{Path: f.Path, Size: f.Size, ModifiedAt: f.ModifiedAt, State: f.State, Detail: f.Detail, DoneAt: f.DoneAt}
}

// writeProposalFiles streams every file of a proposal as a CSV or JSON download, a page at a
// time (a proposal may list millions of files).
func writeProposalFiles(c echo.Context, format string, id uuid.UUID, page func(after uuid.UUID) ([]cleanup.ProposalFile, error)) error {
	w := c.Response()
	name := fmt.Sprintf("proposal-%s-files.%s", id, format)
	w.Header().Set(echo.HeaderContentDisposition, fmt.Sprintf("attachment; filename=%q", name))
	if format == "csv" {
		w.Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	} else {
		w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	enc := json.NewEncoder(w)
	if format == "csv" {
		_ = cw.Write([]string{"path", "size", "modified_at", "state", "detail", "done_at"})
	} else {
		_, _ = io.WriteString(w, `{"items":[`)
	}
	stamp := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	first, after := true, uuid.Nil
	for {
		fs, err := page(after)
		if err != nil {
			// The status is sent: all that is left is to cut the download short, visibly.
			c.Logger().Errorf("proposal %s files download: %v", id, err)
			return nil
		}
		if len(fs) == 0 {
			break
		}
		for _, f := range fs {
			if format == "csv" {
				_ = cw.Write([]string{f.Path, strconv.FormatInt(f.Size, 10), stamp(f.ModifiedAt), f.State, f.Detail, stamp(f.DoneAt)})
				continue
			}
			if !first {
				_, _ = io.WriteString(w, ",")
			}
			first = false
			if err := enc.Encode(toProposalFileResponse(f)); err != nil {
				return nil
			}
		}
		cw.Flush()
		after = fs[len(fs)-1].ID
	}
	if format == "json" {
		_, _ = io.WriteString(w, "]}\n")
	}
	cw.Flush()
	return nil
}

func (a *API) setExempt(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	var req exemptRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if len(req.Reason) > catalog.MaxDescription {
		return badRequest("reason", "reason is %d bytes long; the limit is %d", len(req.Reason), catalog.MaxDescription)
	}
	if len(req.Kinds) > 3 {
		return badRequest("kinds", "give at most the three exemptible kinds: unused_asset, orphan_files, expire_snapshots")
	}
	if err := a.cfg.Cleanup.Exempt(c.Request().Context(), id, req.Exempt, req.Reason, req.Kinds...); err != nil {
		return err
	}
	kinds := req.Kinds
	if req.Exempt && len(kinds) == 0 {
		kinds = []string{cleanup.KindUnusedAsset}
	}
	if !req.Exempt {
		kinds = nil
	}
	return c.JSON(http.StatusOK, exemptResponse{AssetID: id, Exempt: req.Exempt, Kinds: kinds})
}

func toProposalResponse(p cleanup.Proposal) proposalResponse {
	e := p.Evidence
	ev := evidenceResponse{Summary: e.Summary, Scans: e.Scans, Shards: e.Shards, Files: e.Files, Bytes: e.Bytes, MonthlyCostUSD: e.MonthlyCost,
		AgeThreshold: e.AgeThreshold, Assumption: e.Assumption, Window: e.Window, From: e.From, To: e.To, LastRead: e.LastRead,
		Readers: e.Readers, Downstream: e.Downstream, Owners: e.Owners, AssetCreatedAt: e.AssetCreatedAt, Location: e.Location,
		Snapshots: e.Snapshots, KeepLast: e.KeepLast, MaxAge: e.MaxAge, DanglingCount: e.DanglingCount, Remedies: e.Remedies, ScanID: e.ScanID, RefCheckID: e.RefCheckID,
		MinGap: e.MinGap, TableUUID: e.TableUUID, MetadataLocation: e.MetadataLocation, Reopens: e.Reopens, ReopensWhy: e.ReopensWhy,
		FileList: e.FileList, FinalReconciliation: e.FinalReconciliation}
	if len(e.Foreign) > 0 {
		ev.ForeignTenants = toForeignResponse(e.Foreign)
	}
	for _, k := range e.Kept {
		kr := keptSnapshotResponse{Snapshot: k.Snapshot, Reason: k.Reason, Downstream: k.Downstream, DownstreamVersion: k.DownstreamVersion,
			Run: k.Run, Detail: k.Detail}
		for _, r := range k.Readers {
			kr.Readers = append(kr.Readers, keptReaderResponse{Reader: r.Reader, Reads: r.Reads, FirstRead: r.FirstRead, LastRead: r.LastRead})
		}
		ev.Kept = append(ev.Kept, kr)
	}
	for _, n := range e.Names {
		ev.Names = append(ev.Names, nameEvidenceResponse(n))
	}
	for _, d := range e.Dangling {
		ev.Dangling = append(ev.Dangling, danglingResponse(d))
	}
	out := proposalResponse{ID: p.ID, Kind: p.Kind, AssetID: p.AssetID, State: p.State, Severity: p.Severity, Executable: p.Executable,
		Evidence: ev, Reason: p.Reason, DecidedBy: p.DecidedBy, DecidedAt: p.DecidedAt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		ExecutedAt: p.ExecutedAt, DueAt: p.DueAt, Outcome: p.Outcome, Version: p.Version, Files: p.Files, FileCount: p.FileCount, FileBytes: p.FileBytes,
		ConfirmRequired: p.ConfirmsFiles()}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, stepResponse(s))
	}
	for _, d := range p.Notifications {
		out.Notifications = append(out.Notifications, deliveryResponse(d))
	}
	return out
}
