package warehouse

// A served view's versions, as its asset page shows them.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergview"
)

// ViewDetail is what Tidemark serves of a view: its pointer and the versions its metadata keeps.
type ViewDetail struct {
	Warehouse        string
	Identifier       string
	Live             bool // false once dropped (the versions are those of its last metadata)
	MetadataLocation string
	Location         string
	CurrentVersionID int64
	Versions         []ViewVersion // newest first
}

// ViewVersion is one version of a view.
type ViewVersion struct {
	VersionID       int64
	At              time.Time
	SchemaID        int
	Summary         map[string]string
	Representations []ViewRepresentation
	Current         bool
}

// ViewRepresentation is one SQL text of a version.
type ViewRepresentation struct {
	Dialect string
	SQL     string
}

// ViewOf returns the served view bound to an asset; ok is false when the asset is no served view.
func (s *Service) ViewOf(ctx context.Context, asset uuid.UUID) (ViewDetail, bool, error) {
	row, err := s.db.IcebergView.Query().Where(icebergview.ID(asset)).Only(ctx)
	if ent.IsNotFound(err) {
		return ViewDetail{}, false, nil
	}
	if err != nil {
		return ViewDetail{}, false, fmt.Errorf("warehouse: read view %s: %w", asset, err)
	}
	w, err := s.warehouse(row.Warehouse)
	if err != nil {
		return ViewDetail{}, false, err
	}
	meta, err := s.readViewMetadata(ctx, w, row.MetadataLocation)
	if err != nil {
		return ViewDetail{}, false, err
	}
	d := ViewDetail{Warehouse: row.Warehouse, Identifier: row.Identifier, Live: row.GoneAt == nil, MetadataLocation: row.MetadataLocation,
		Location: meta.Location(), CurrentVersionID: meta.CurrentVersionID()}
	for _, v := range meta.Versions() {
		vv := ViewVersion{VersionID: v.VersionID, At: time.UnixMilli(v.TimestampMS).UTC(), SchemaID: v.SchemaID, Summary: v.Summary,
			Current: v.VersionID == meta.CurrentVersionID()}
		for _, r := range v.Representations {
			vv.Representations = append(vv.Representations, ViewRepresentation{Dialect: r.Dialect, SQL: r.Sql})
		}
		d.Versions = append(d.Versions, vv)
	}
	slices.SortFunc(d.Versions, func(a, b ViewVersion) int { return int(b.VersionID - a.VersionID) })
	return d, true, nil
}
