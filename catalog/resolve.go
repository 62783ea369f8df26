package catalog

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/assetname"
)

// Resolution is the answer to "which asset is this name?".
type Resolution struct {
	Asset   Asset
	Matched Name // the name row that matched
	// Former is true when the name is not the asset's current name: the asset was renamed (or
	// deleted) since. Asset.Namespace and Asset.Name then hold its latest name.
	Former bool
}

// Resolve finds the asset a name refers to now: its current holder, or failing that the asset
// that held it most recently (flagged Former). An empty namespace searches every namespace and
// is ambiguous when the name is found in more than one.
func (c *Catalog) Resolve(ctx context.Context, namespace, name string) (Resolution, error) {
	return c.resolve(ctx, namespace, name, nil)
}

// ResolveAt finds the asset that held the name at time at (for events that arrive late: a query
// on "orders" last month counts for whichever asset was "orders" then).
func (c *Catalog) ResolveAt(ctx context.Context, namespace, name string, at time.Time) (Resolution, error) {
	at = at.UTC()
	return c.resolve(ctx, namespace, name, &at)
}

func (c *Catalog) resolve(ctx context.Context, namespace, name string, at *time.Time) (Resolution, error) {
	if namespace != "" {
		if err := ValidateName(namespace, name); err != nil {
			return Resolution{}, err
		}
	} else if err := validateText("name", name, MaxNameBytes); err != nil {
		return Resolution{}, err
	}
	q := c.db.AssetName.Query().Where(assetname.Name(name))
	if namespace != "" {
		q = q.Where(assetname.Namespace(namespace))
	}
	if at != nil {
		q = q.Where(assetname.ValidFromLTE(*at), assetname.Or(assetname.ValidToIsNil(), assetname.ValidToGT(*at)))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return Resolution{}, fmt.Errorf("catalog: resolve %s.%s: %w", namespace, name, err)
	}
	if len(rows) == 0 {
		if namespace == "" {
			return Resolution{}, notFound("no asset has or had the name %q in any namespace", name)
		}
		return Resolution{}, notFound("no asset has or had the name %s.%s", namespace, name)
	}
	if namespace == "" {
		spaces := map[string]bool{}
		for _, r := range rows {
			spaces[r.Namespace] = true
		}
		if len(spaces) > 1 {
			list := make([]string, 0, len(spaces))
			for s := range spaces {
				list = append(list, s)
			}
			sort.Strings(list)
			return Resolution{}, &Error{Kind: ErrConflict, Field: "namespace", Message: fmt.Sprintf(
				"name %q exists in %d namespaces (%s); say which with namespace=", name, len(list), strings.Join(list, ", "))}
		}
	}
	best := pickHolder(rows)
	a, err := c.Get(ctx, best.AssetID)
	if err != nil {
		return Resolution{}, err
	}
	// Former means "not what the asset is called now": a closed row, or (for ResolveAt) a row
	// that was current then but has since been closed.
	return Resolution{Asset: a, Matched: toName(best), Former: best.ValidTo != nil}, nil
}

// pickHolder prefers the current holder, then the row closed most recently.
func pickHolder(rows []*ent.AssetName) *ent.AssetName {
	best := rows[0]
	for _, r := range rows[1:] {
		switch {
		case best.ValidTo == nil:
		case r.ValidTo == nil, r.ValidTo.After(*best.ValidTo):
			best = r
		case r.ValidTo.Equal(*best.ValidTo) && r.ID > best.ID:
			best = r
		}
	}
	return best
}

// currentHolder returns the asset currently holding (namespace, name).
func currentHolder(ctx context.Context, client *ent.Client, namespace, name string) (uuid.UUID, bool, error) {
	row, err := client.AssetName.Query().
		Where(assetname.Namespace(namespace), assetname.Name(name), assetname.ValidToIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("catalog: look up name holder: %w", err)
	}
	return row.AssetID, true, nil
}
