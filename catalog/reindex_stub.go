package catalog

import (
	"context"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
)

// reindex is replaced by the search index (branch search); removed on merge.
func (c *Catalog) reindex(ctx context.Context, client *ent.Client, ids ...uuid.UUID) error {
	return nil
}
