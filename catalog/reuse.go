package catalog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/auditevent"
)

// NameShare is a name an asset held that another asset held at another time: the name was
// taken again after the first holder let go of it (a rename, a deletion). Tidemark resolves
// names by time, so lineage and usage under the name go to whichever asset held it then; a
// person reading either asset's page needs to know, since a producer still using the old name
// for the renamed table would feed the other asset.
type NameShare struct {
	Namespace, Name string
	// Before is true when the other asset held the name before this one, false when after.
	Before bool
	// The earlier holder stopped holding the name at Until; the later one took it at From.
	Until, From time.Time
	// The other asset: its ID, kind, status and latest name; when and by whom it was created
	// (the actor of its creation in the audit log: a token whose OpenLineage events named it,
	// the catalog sync, a person).
	Other          uuid.UUID
	OtherKind      Kind
	OtherStatus    Status
	OtherNamespace string
	OtherName      string
	OtherCreatedAt time.Time
	OtherCreatedBy string
}

// NameShares lists the names of asset id that other assets held before or after it, oldest
// first (in two queries and one per other asset; names are rarely taken again).
func (c *Catalog) NameShares(ctx context.Context, id uuid.UUID) ([]NameShare, error) {
	client := c.client(ctx)
	own, err := client.AssetName.Query().Where(assetname.AssetID(id)).Order(ent.Asc(assetname.FieldValidFrom), ent.Asc(assetname.FieldID)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: name shares of %s: %w", id, err)
	}
	var out []NameShare
	others := map[uuid.UUID]bool{}
	for _, n := range own {
		rows, err := client.AssetName.Query().Where(assetname.SpaceEQ(n.Space), assetname.Namespace(n.Namespace),
			assetname.Name(n.Name), assetname.AssetIDNEQ(id)).Order(ent.Asc(assetname.FieldValidFrom)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("catalog: name shares of %s: %w", id, err)
		}
		for _, r := range rows {
			s := NameShare{Namespace: n.Namespace, Name: n.Name, Other: r.AssetID, Before: r.ValidFrom.Before(n.ValidFrom)}
			earlier, later := n, r
			if s.Before {
				earlier, later = r, n
			}
			if earlier.ValidTo == nil {
				continue // cannot be: one holder at a time
			}
			s.Until, s.From = earlier.ValidTo.UTC(), later.ValidFrom.UTC()
			others[r.AssetID] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	sums, err := c.Summaries(ctx, slices.Collect(maps.Keys(others)))
	if err != nil {
		return nil, err
	}
	created := map[uuid.UUID]*ent.AuditEvent{}
	for other := range others {
		ev, err := client.AuditEvent.Query().Where(auditevent.AssetID(other), auditevent.Action(ActionCreate)).First(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return nil, fmt.Errorf("catalog: name shares of %s: creation of %s: %w", id, other, err)
		}
		created[other] = ev
	}
	for i := range out {
		s := &out[i]
		sum := sums[s.Other]
		s.OtherKind, s.OtherStatus, s.OtherNamespace, s.OtherName, s.OtherCreatedAt = sum.Kind, sum.Status, sum.Namespace, sum.Name, sum.CreatedAt
		if ev := created[s.Other]; ev != nil {
			s.OtherCreatedBy = ev.Actor
		}
	}
	return out, nil
}
