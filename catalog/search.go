package catalog

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/auditevent"
	"github.com/tidemark/tidemark/ent/owner"
)

// Hit is one search result: the asset, and what matched.
type Hit struct {
	Asset Asset
	// Matched is the name that matched; Former says it is not the asset's current name.
	Matched Name
	Former  bool
	// Owner is the current owner that matched, when the match was on an owner.
	Owner string
}

// Search finds assets whose current or former name or namespace contains q
// (case-insensitively), or whose current owner does, current names first. Deleted assets are
// left out.
func (c *Catalog) Search(ctx context.Context, q string, limit int) ([]Hit, error) {
	if q == "" || limit <= 0 {
		return nil, invalid("q", "give something to search for")
	}
	names, err := c.client(ctx).AssetName.Query().Where(assetname.Or(assetname.NameContainsFold(q), assetname.NamespaceContainsFold(q))).
		Order(ent.Asc(assetname.FieldValidTo)).Limit(limit * 4).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: search names: %w", err)
	}
	owners, err := c.client(ctx).Owner.Query().Where(owner.PrincipalContainsFold(q), owner.RemovedAtIsNil()).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: search owners: %w", err)
	}
	// Current names first, then former ones (most recent first); one hit per asset.
	slices.SortStableFunc(names, func(a, b *ent.AssetName) int {
		switch {
		case a.ValidTo == nil && b.ValidTo != nil:
			return -1
		case a.ValidTo != nil && b.ValidTo == nil:
			return 1
		case a.ValidTo != nil && b.ValidTo != nil:
			return b.ValidTo.Compare(*a.ValidTo)
		}
		return 0
	})
	var hits []Hit
	seen := map[uuid.UUID]bool{}
	add := func(id uuid.UUID, h Hit) error {
		if seen[id] || len(hits) == limit {
			return nil
		}
		a, err := c.Get(ctx, id)
		if err != nil || a.Status == StatusDeleted {
			return nil // deleted meanwhile, or deleted: not a search result
		}
		seen[id] = true
		h.Asset = a
		hits = append(hits, h)
		return nil
	}
	for _, n := range names {
		h := Hit{Matched: Name{Namespace: n.Namespace, Name: n.Name, ValidFrom: n.ValidFrom, ValidTo: n.ValidTo}, Former: n.ValidTo != nil}
		if err := add(n.AssetID, h); err != nil {
			return nil, err
		}
	}
	for _, o := range owners {
		if err := add(o.AssetID, Hit{Owner: o.Principal}); err != nil {
			return nil, err
		}
	}
	return hits, nil
}

// AuditLog returns the whole audit trail, newest first, before the event ID before (zero for
// the newest).
func (c *Catalog) AuditLog(ctx context.Context, before uuid.UUID, limit int) ([]AuditEvent, error) {
	q := c.client(ctx).AuditEvent.Query().Order(ent.Desc(auditevent.FieldID)).Limit(limit)
	if before != uuid.Nil {
		q = q.Where(auditevent.IDLT(before))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: audit log: %w", err)
	}
	out := make([]AuditEvent, len(rows))
	for i, r := range rows {
		out[i] = AuditEvent{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, AssetID: r.AssetID,
			Before: r.Before, After: r.After, RequestID: r.RequestID}
	}
	return out, nil
}
