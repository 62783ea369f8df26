package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/asset"
	"github.com/tidemark/tidemark/ent/assetname"
	"github.com/tidemark/tidemark/ent/externalid"
	"github.com/tidemark/tidemark/internal/chunk"
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
	return c.resolve(ctx, "", namespace, name, nil)
}

// ResolveIn is Resolve within one name space ("" for either): a job and a dataset may share a
// name.
func (c *Catalog) ResolveIn(ctx context.Context, space Space, namespace, name string) (Resolution, error) {
	return c.resolve(ctx, space, namespace, name, nil)
}

// ResolveAt finds the asset that held the name at time at (for events that arrive late: a query
// on "orders" last month counts for whichever asset was "orders" then).
func (c *Catalog) ResolveAt(ctx context.Context, space Space, namespace, name string, at time.Time) (Resolution, error) {
	at = at.UTC()
	return c.resolve(ctx, space, namespace, name, &at)
}

func (c *Catalog) resolve(ctx context.Context, space Space, namespace, name string, at *time.Time) (Resolution, error) {
	// A lookup checks the text, not the stricter rules new names pass (CheckVisible): a name
	// stored before those rules must still resolve.
	if namespace != "" {
		if err := validateText("namespace", namespace, MaxNamespaceBytes); err != nil {
			return Resolution{}, err
		}
	}
	if err := validateText("name", name, MaxNameBytes); err != nil {
		return Resolution{}, err
	}
	q := c.client(ctx).AssetName.Query().Where(assetname.Name(name))
	if space != "" {
		q = q.Where(assetname.SpaceEQ(assetname.Space(space)))
	}
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
	spaces, namespaces := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		spaces[string(r.Space)], namespaces[r.Namespace] = true, true
	}
	if len(namespaces) > 1 {
		list := make([]string, 0, len(namespaces))
		for s := range namespaces {
			list = append(list, s)
		}
		slices.Sort(list)
		return Resolution{}, &Error{Kind: ErrConflict, Field: "namespace", Message: fmt.Sprintf(
			"name %q exists in %d namespaces (%s); say which with namespace=", name, len(list), strings.Join(list, ", "))}
	}
	if len(spaces) > 1 {
		return Resolution{}, &Error{Kind: ErrConflict, Field: "space", Message: fmt.Sprintf(
			"a job and a dataset are both named %s.%s; say which with space=job or space=dataset", namespace, name)}
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

// currentHolder returns the asset currently holding (namespace, name) in a name space.
func currentHolder(ctx context.Context, client *ent.Client, space Space, namespace, name string) (uuid.UUID, bool, error) {
	row, err := client.AssetName.Query().
		Where(assetname.SpaceEQ(assetname.Space(space)), assetname.Namespace(namespace), assetname.Name(name), assetname.ValidToIsNil()).Only(ctx)
	if ent.IsNotFound(err) {
		return uuid.Nil, false, nil
	}
	if err != nil {
		return uuid.Nil, false, fmt.Errorf("catalog: look up name holder: %w", err)
	}
	return row.AssetID, true, nil
}

// Ref is an asset found by name, without what hangs off it: the cheap answer for ingest paths.
type Ref struct {
	ID      uuid.UUID
	Deleted bool       // a current holder never is: deletion releases the name
	Former  bool       // the name is not the asset's current one
	Until   *time.Time // for a former name, when the asset stopped holding it
}

// Lookup finds the asset holding (namespace, name) now, or failing that the asset that held it
// most recently (Former). ok is false when no asset ever had the name.
func (c *Catalog) Lookup(ctx context.Context, space Space, namespace, name string) (ref Ref, ok bool, err error) {
	client := c.client(ctx)
	inSpace := assetname.SpaceEQ(assetname.Space(space))
	row, err := client.AssetName.Query().
		Where(inSpace, assetname.Namespace(namespace), assetname.Name(name), assetname.ValidToIsNil()).Only(ctx)
	if err == nil {
		return Ref{ID: row.AssetID}, true, nil
	}
	if !ent.IsNotFound(err) {
		return Ref{}, false, fmt.Errorf("catalog: look up %s.%s: %w", namespace, name, err)
	}
	row, err = client.AssetName.Query().
		Where(inSpace, assetname.Namespace(namespace), assetname.Name(name)).
		Order(ent.Desc(assetname.FieldValidTo), ent.Desc(assetname.FieldID)).WithAsset().First(ctx)
	if ent.IsNotFound(err) {
		return Ref{}, false, nil
	}
	if err != nil {
		return Ref{}, false, fmt.Errorf("catalog: look up former %s.%s: %w", namespace, name, err)
	}
	return Ref{ID: row.AssetID, Deleted: row.Edges.Asset.Status == asset.StatusDeleted, Former: true, Until: utcPtr(row.ValidTo)}, true, nil
}

// LookupExternal finds the asset an external ID is bound to.
func (c *Catalog) LookupExternal(ctx context.Context, system, value string) (Ref, bool, error) {
	row, err := c.client(ctx).ExternalID.Query().
		Where(externalid.System(system), externalid.Value(value)).WithAsset().Only(ctx)
	if ent.IsNotFound(err) {
		return Ref{}, false, nil
	}
	if err != nil {
		return Ref{}, false, fmt.Errorf("catalog: look up external id: %w", err)
	}
	return Ref{ID: row.AssetID, Deleted: row.Edges.Asset.Status == asset.StatusDeleted}, true, nil
}

// Summary is what a graph node shows of an asset.
type Summary struct {
	ID        uuid.UUID
	Kind      Kind
	Status    Status
	Namespace string // latest name (released if deleted)
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Summaries returns a summary of each existing asset among ids, in two or three queries per
// chunk.Size IDs.
func (c *Catalog) Summaries(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]Summary, error) {
	out := make(map[uuid.UUID]Summary, len(ids))
	err := chunk.Each(ids, func(part []uuid.UUID) error {
		rows, err := c.client(ctx).Asset.Query().Where(asset.IDIn(part...)).All(ctx)
		if err != nil {
			return fmt.Errorf("catalog: summaries: %w", err)
		}
		names, err := latestNames(ctx, c.client(ctx), part)
		if err != nil {
			return err
		}
		for _, r := range rows {
			s := Summary{ID: r.ID, Kind: Kind(r.Kind), Status: Status(r.Status), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
			if n := names[r.ID]; n != nil {
				s.Namespace, s.Name = n.Namespace, n.Name
			}
			out[r.ID] = s
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SummaryPage returns summaries of up to limit assets with IDs above after, in ID order, in two
// queries: for loading every asset into memory a page at a time. Deleted assets come with an
// empty name (they hold none); Summaries gives the name they last held.
func (c *Catalog) SummaryPage(ctx context.Context, after uuid.UUID, limit int) ([]Summary, error) {
	rows, err := c.client(ctx).Asset.Query().Where(asset.IDGT(after)).Order(ent.Asc(asset.FieldID)).Limit(limit).
		WithNames(func(q *ent.AssetNameQuery) { q.Where(assetname.ValidToIsNil()) }).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: page assets: %w", err)
	}
	out := make([]Summary, len(rows))
	for i, r := range rows {
		out[i] = Summary{ID: r.ID, Kind: Kind(r.Kind), Status: Status(r.Status), CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
		if len(r.Edges.Names) > 0 {
			out[i].Namespace, out[i].Name = r.Edges.Names[0].Namespace, r.Edges.Names[0].Name
		}
	}
	return out, nil
}
