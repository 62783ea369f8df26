package web

import (
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/usage"
)

// The impact page: what a rename, drop or schema change of an asset would reach downstream,
// with owners and readers, most read first (usage.Impact composes lineage, catalog and usage).

type impactData struct {
	Asset  catalog.Asset
	Impact usage.Impact
	Days   int
	Depths []int
	Window []int
}

func (u *UI) impact(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID"})
		return
	}
	if u.cfg.Usage == nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrNotFound, Message: "impact analysis needs usage, which this server does not keep"})
		return
	}
	ctx := r.Context()
	a, err := u.cfg.Catalog.Get(ctx, id)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := impactData{Asset: a, Days: 30, Depths: []int{1, 2, 3, 4, 6, 8, 10, 20}, Window: []int{7, 30, 90, 365}}
	depth := usage.DefaultImpactDepth
	if s := r.URL.Query().Get("depth"); s != "" {
		if depth, err = strconv.Atoi(s); err != nil || depth < 1 || depth > usage.MaxImpactDepth {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "depth", Message: "depth must be a number from 1 to 20"})
			return
		}
	}
	if s := r.URL.Query().Get("days"); s != "" {
		if d.Days, err = strconv.Atoi(s); err != nil || d.Days < 1 || d.Days > 365 {
			u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Field: "days", Message: "days must be a number from 1 to 365"})
			return
		}
	}
	var walk usage.DownstreamWalk
	if u.cfg.Lineage != nil {
		walk = u.cfg.Lineage.DownstreamDepths
	}
	if d.Impact, err = u.cfg.Usage.Impact(ctx, id, walk, depth, time.Duration(d.Days)*24*time.Hour); err != nil {
		u.fail(w, r, err)
		return
	}
	u.render(w, r, http.StatusOK, "impact", "What a change of "+a.Name+" touches", d)
}
