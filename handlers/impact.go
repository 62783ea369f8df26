package handlers

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/usage"
)

type impactedAsset struct {
	ID        uuid.UUID    `json:"id"`
	Kind      string       `json:"kind"`
	Status    string       `json:"status"`
	Namespace string       `json:"namespace"`
	Name      string       `json:"name"`
	Depth     int          `json:"depth"`
	Owners    []string     `json:"owners"`
	Reads     int64        `json:"reads"`
	Writes    int64        `json:"writes"`
	Readers   []actorCount `json:"readers"`
}

type ownerImpact struct {
	Principal string `json:"principal"`
	Assets    int    `json:"assets"`
	Reads     int64  `json:"reads"`
}

type impactResponse struct {
	AssetID uuid.UUID `json:"asset_id"`
	Depth   int       `json:"depth"`
	Window  string    `json:"window"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	// Truncated: more assets lie downstream than the walk's node limit (500); Assets holds the
	// first of them reached, nearest first.
	Truncated bool `json:"truncated"`
	// Assets are what a rename, drop or schema change reaches downstream, most read first.
	Assets []impactedAsset `json:"assets"`
	// Notify are the owners of those assets, weighted by their reads.
	Notify []ownerImpact `json:"notify"`
}

func (a *API) impactRoutes() {
	if a.cfg.Usage == nil {
		return
	}
	a.handle(operation{
		Method:  http.MethodGet,
		Path:    "/api/v1/assets/:id/impact",
		Summary: "What a rename, drop or schema change of an asset reaches downstream: assets with depth, owners and readers, most read first",
		Tag:     "usage",
		Params: []param{{Name: "depth", In: "query", Description: "lineage hops downstream, 1-20, default 6 (a job between two datasets is a hop)"},
			{Name: "window", In: "query", Description: "reads counted over e.g. 30d (default), 1d to 365d"}},
		Responses: map[int]any{200: impactResponse{}},
	}, a.assetImpact)
}

func (a *API) assetImpact(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	depth, err := queryInt(c, "depth", usage.DefaultImpactDepth, 1, usage.MaxImpactDepth)
	if err != nil {
		return err
	}
	window := c.QueryParam("window")
	if window == "" {
		window = "30d"
	}
	w, err := parseWindow(window)
	if err != nil {
		return err
	}
	var walk usage.DownstreamWalk
	if a.cfg.Lineage != nil {
		walk = a.cfg.Lineage.DownstreamDepths
	}
	im, err := a.cfg.Usage.Impact(c.Request().Context(), id, walk, depth, w)
	if err != nil {
		return err
	}
	out := impactResponse{AssetID: id, Depth: im.Depth, Window: window, From: usage.Day(im.From), To: im.To.UTC().Format(time.RFC3339),
		Truncated: im.Truncated, Assets: make([]impactedAsset, 0, len(im.Assets)), Notify: make([]ownerImpact, 0, len(im.Notify))}
	for _, x := range im.Assets {
		ia := impactedAsset{ID: x.ID, Kind: string(x.Kind), Status: string(x.Status), Namespace: x.Namespace, Name: x.Name, Depth: x.Depth,
			Owners: x.Owners, Reads: x.Reads, Writes: x.Writes, Readers: make([]actorCount, 0, len(x.Readers))}
		for _, r := range x.Readers {
			ia.Readers = append(ia.Readers, actorCount(r))
		}
		out.Assets = append(out.Assets, ia)
	}
	for _, n := range im.Notify {
		out.Notify = append(out.Notify, ownerImpact(n))
	}
	return c.JSON(http.StatusOK, out)
}
