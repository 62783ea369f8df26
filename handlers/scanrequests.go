package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/cleanup"
)

type scanRequestBody struct {
	// FromInventory asks for an inventory pass instead of a full walk (tables Tidemark serves).
	FromInventory bool `json:"from_inventory,omitempty"`
}

type scanRequestResponse struct {
	ID            uuid.UUID  `json:"id"`
	AssetID       uuid.UUID  `json:"asset_id"`
	RequestedAt   time.Time  `json:"requested_at"`
	Actor         string     `json:"actor"`
	FromInventory bool       `json:"from_inventory"`
	State         string     `json:"state"` // pending until a scan answers it
	ScanID        *uuid.UUID `json:"scan_id,omitempty"`
	DoneAt        *time.Time `json:"done_at,omitempty"`
	Note          string     `json:"note,omitempty"`
	// Created is false when a pending request of the same kind was already there: this is it.
	Created bool `json:"created"`
	// Scans is where the scan's report appears once the scheduler has run it.
	Scans string `json:"scans"`
}

func (a *API) scanRequestRoutes() {
	a.handle(operation{
		Method:  http.MethodPost,
		Path:    "/api/v1/tables/:id/scans",
		Summary: "Ask for a cleanup scan of the table now: the scheduler runs it first on its next round",
		Description: "The scan does not run in this request: the request is recorded (and audited) and the " +
			"scheduler's scan loop picks requested tables up first on its next round, inside the maintenance " +
			"window if one is set. 202 says where the report will appear (Location: the table's scans). Asking " +
			"again while a request of the same kind is pending is idempotent: 202 with that request and " +
			"created false. from_inventory asks for an inventory pass, for tables Tidemark serves only (400 " +
			"otherwise); an unknown table is 404, a table dropped from its catalog 409.",
		Tag:       "cleanup",
		Params:    []param{{Name: "id", In: "path", Required: true, Description: "the table's asset ID"}},
		Body:      scanRequestBody{},
		Responses: map[int]any{202: scanRequestResponse{}},
	}, a.requestScan)
}

func (a *API) requestScan(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	var body scanRequestBody
	if err := bindOptional(c, &body); err != nil {
		return err
	}
	r, created, err := a.cfg.Cleanup.RequestScan(c.Request().Context(), id, body.FromInventory)
	if err != nil {
		return err
	}
	scans := "/api/v1/tables/" + id.String() + "/scans"
	c.Response().Header().Set(echo.HeaderLocation, scans)
	return c.JSON(http.StatusAccepted, toScanRequestResponse(r, created, scans))
}

func toScanRequestResponse(r cleanup.ScanRequest, created bool, scans string) scanRequestResponse {
	state := "done"
	if r.Pending() {
		state = "pending"
	}
	return scanRequestResponse{ID: r.ID, AssetID: r.AssetID, RequestedAt: r.RequestedAt, Actor: r.Actor, FromInventory: r.FromInventory,
		State: state, ScanID: r.ScanID, DoneAt: r.DoneAt, Note: r.Note, Created: created, Scans: scans}
}
