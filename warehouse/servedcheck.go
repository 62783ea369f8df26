package warehouse

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
)

// ServedBy says whether asset id is a table served through the Iceberg REST catalog (engines
// commit to it through /iceberg/v1): the warehouse serving it and the table's identifier there.
func (s *Service) ServedBy(ctx context.Context, id uuid.UUID) (warehouse, ident string, ok bool, err error) {
	row, err := s.db.IcebergTable.Query().Where(icebergtable.ID(id), icebergtable.RestKeyNotNil()).
		Select(icebergtable.FieldWarehouse, icebergtable.FieldIdentifier).Only(ctx)
	if ent.IsNotFound(err) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("warehouse: is asset %s served: %w", id, err)
	}
	return row.Warehouse, row.Identifier, true, nil
}

// RefuseServed is a conflict when asset id is a served table. Its name and its life are the
// REST catalog's: renamed, deleted or restored from elsewhere, /iceberg would keep serving it
// under a name the catalog no longer gives it, and another asset could take that name. Only the
// catalog moves it (RenameServed, DropServed), and those keep the asset in step.
func (s *Service) RefuseServed(ctx context.Context, id uuid.UUID) error {
	wh, ident, ok, err := s.ServedBy(ctx, id)
	if err != nil {
		return err
	}
	if !ok {
		return s.refuseServedView(ctx, id)
	}
	return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf(
		"asset %s is the table %s served by warehouse %s through the Iceberg REST catalog: rename or drop it through the catalog (/iceberg/v1/%s/...)",
		id, ident, wh, wh)}
}
