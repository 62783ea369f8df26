package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
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
	// FinalReconciliation: for a migrated asset's retirement, the clean run after the cutover.
	FinalReconciliation *uuid.UUID `json:"final_reconciliation,omitempty"`
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
	ID            uuid.UUID          `json:"id"`
	Kind          string             `json:"kind"`
	AssetID       uuid.UUID          `json:"asset_id"`
	State         string             `json:"state"`
	Severity      string             `json:"severity"`
	Executable    bool               `json:"executable"`
	Evidence      evidenceResponse   `json:"evidence"`
	Reason        string             `json:"reason,omitempty"`
	DecidedBy     string             `json:"decided_by,omitempty"`
	DecidedAt     *time.Time         `json:"decided_at,omitempty"`
	CreatedAt     time.Time          `json:"created_at"`
	UpdatedAt     time.Time          `json:"updated_at"`
	ExecutedAt    *time.Time         `json:"executed_at,omitempty"`
	DueAt         *time.Time         `json:"due_at,omitempty"`
	Outcome       json.RawMessage    `json:"outcome,omitempty"`
	Version       int64              `json:"version"`
	Files         map[string]int     `json:"files,omitempty"`
	Steps         []stepResponse     `json:"steps,omitempty"`
	Notifications []deliveryResponse `json:"notifications,omitempty"`
}

type proposalListResponse struct {
	Items      []proposalResponse `json:"items"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

type decisionRequest struct {
	Reason string `json:"reason,omitempty"`
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

type webhookRequest struct {
	URL string `json:"url"`
}

type webhookResponse struct {
	Principal string `json:"principal"`
	URL       string `json:"url,omitempty"`
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
		Params: []param{{Name: "state", In: "query", Description: "open, approved, executing, executed, failed, rejected, withdrawn, expired"},
			{Name: "kind", In: "query", Description: "orphan_files, unused_asset, expire_snapshots, dangling_reference, shared_location"},
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
		Method:    http.MethodPost,
		Path:      "/api/v1/proposals/:id/approve",
		Summary:   "Approve an open proposal (a person with the admin scope; recorded as the approver)",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    id,
		Body:      decisionRequest{},
		Responses: map[int]any{200: proposalResponse{}},
	}, a.approveProposal)
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
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      "/api/v1/webhooks/:principal",
		Summary:   "Where an owner's cleanup notifications go (an empty url removes it)",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    []param{{Name: "principal", In: "path", Required: true}},
		Body:      webhookRequest{},
		Responses: map[int]any{200: webhookResponse{}},
	}, a.setWebhook)
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
		p, err = a.cfg.Cleanup.Approve(ctx, id, req.Reason)
	} else {
		p, err = a.cfg.Cleanup.Reject(ctx, id, req.Reason)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toProposalResponse(p))
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

func (a *API) setWebhook(c echo.Context) error {
	principal, err := pathParam(c, "principal")
	if err != nil {
		return err
	}
	var req webhookRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if len(principal) > catalog.MaxPrincipalBytes {
		return badRequest("principal", "principal is %d bytes long; the limit is %d", len(principal), catalog.MaxPrincipalBytes)
	}
	if err := a.cfg.Cleanup.SetWebhook(c.Request().Context(), principal, req.URL); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookResponse{Principal: principal, URL: req.URL})
}

func toProposalResponse(p cleanup.Proposal) proposalResponse {
	e := p.Evidence
	ev := evidenceResponse{Summary: e.Summary, Scans: e.Scans, Shards: e.Shards, Files: e.Files, Bytes: e.Bytes, MonthlyCostUSD: e.MonthlyCost,
		AgeThreshold: e.AgeThreshold, Assumption: e.Assumption, Window: e.Window, From: e.From, To: e.To, LastRead: e.LastRead,
		Readers: e.Readers, Downstream: e.Downstream, Owners: e.Owners, AssetCreatedAt: e.AssetCreatedAt, Location: e.Location,
		Snapshots: e.Snapshots, KeepLast: e.KeepLast, MaxAge: e.MaxAge, DanglingCount: e.DanglingCount, Remedies: e.Remedies, ScanID: e.ScanID, RefCheckID: e.RefCheckID,
		MinGap: e.MinGap, TableUUID: e.TableUUID, MetadataLocation: e.MetadataLocation, Reopens: e.Reopens, ReopensWhy: e.ReopensWhy,
		FinalReconciliation: e.FinalReconciliation}
	if len(e.Foreign) > 0 {
		ev.ForeignTenants = toForeignResponse(e.Foreign)
	}
	for _, n := range e.Names {
		ev.Names = append(ev.Names, nameEvidenceResponse(n))
	}
	for _, d := range e.Dangling {
		ev.Dangling = append(ev.Dangling, danglingResponse(d))
	}
	out := proposalResponse{ID: p.ID, Kind: p.Kind, AssetID: p.AssetID, State: p.State, Severity: p.Severity, Executable: p.Executable,
		Evidence: ev, Reason: p.Reason, DecidedBy: p.DecidedBy, DecidedAt: p.DecidedAt, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		ExecutedAt: p.ExecutedAt, DueAt: p.DueAt, Outcome: p.Outcome, Version: p.Version, Files: p.Files}
	for _, s := range p.Steps {
		out.Steps = append(out.Steps, stepResponse(s))
	}
	for _, d := range p.Notifications {
		out.Notifications = append(out.Notifications, deliveryResponse(d))
	}
	return out
}
