package warehouse

// What tables asks of the warehouse (tables.Served): tables' own changes of a table the
// warehouse serves, the drop of a retired table and the cleanup bot's snapshot expiry, go through
// the same pointer and commit record as every engine's commit.

import (
	"context"
	"errors"

	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/tables"
)

// served is the Service as tables.Served (registered by New).
type served struct{ s *Service }

// DropServedRow removes a served table's pointer and records the drop (tables.Service.Drop).
func (h served) DropServedRow(ctx context.Context, row *ent.IcebergTable) error {
	return h.s.dropServedRow(ctx, row, false, CommitOptions{})
}

// CommitServedRow commits requirements and updates to a served table by compare-and-swap
// (tables.Service.RemoveSnapshots); a refusal because the table moved meanwhile reads as
// iceberg-go's table.ErrCommitFailed too, as tables.IsCommitConflict expects.
func (h served) CommitServedRow(ctx context.Context, row *ent.IcebergTable, reqs []table.Requirement, updates []table.Update) error {
	id, err := servedIdent(row)
	if err != nil {
		return err
	}
	// The snapshots it removes are expired by the principal that asked (the cleanup bot's
	// executor names the approver), else by cleanup.
	_, err = h.s.Commit(ctx, row.Warehouse, []CommitChange{{Ident: id, Requirements: reqs, Updates: updates}},
		CommitOptions{expiredBy: tables.ExpiryBy(ctx)})
	if errors.Is(err, ErrCommitFailed) {
		return conflict{err}
	}
	return err
}

// conflict is a commit refused because the table moved: ErrCommitFailed, and iceberg-go's
// table.ErrCommitFailed to tables.
type conflict struct{ error }

func (c conflict) Is(target error) bool { return target == table.ErrCommitFailed }
func (c conflict) Unwrap() error        { return c.error }
