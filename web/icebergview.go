package web

// The asset page's section for an Iceberg view Tidemark serves: its versions, each with its SQL
// representations and dialects, and which is current.

import (
	"net/http"

	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/warehouse"
)

// viewParts reads the served view behind a view asset.
func (u *UI) viewParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	if d.Asset.Kind != catalog.KindView || u.cfg.Warehouse == nil {
		return
	}
	g.Go(func() error {
		v, ok, err := u.cfg.Warehouse.ViewOf(r.Context(), d.Asset.ID)
		if !miss("the Iceberg view's versions", err) && ok {
			d.View = &v
		}
		return nil
	})
}

// viewData is what the view section shows (warehouse.ViewDetail).
type viewData = warehouse.ViewDetail
