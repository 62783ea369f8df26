package usage

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// Impact analysis lives here, beside "real usage": both weigh what lies downstream of an asset
// by how much it is read. Lineage comes in as a function (as for the cleanup bot), so usage
// still depends on the catalog alone.

// DownstreamWalk lists the assets within depth lineage hops downstream of id, each with its
// depth (1 for a direct consumer), and whether the walk stopped at its node limit.
// lineage.(*Service).DownstreamDepths is one.
type DownstreamWalk func(ctx context.Context, id uuid.UUID, depth int) (ids []uuid.UUID, depths []int, truncated bool, err error)

// Limits of an impact analysis: deep enough for a warehouse's layers, and a window of reads
// that covers a monthly report.
const (
	DefaultImpactDepth  = 6
	MaxImpactDepth      = 20
	DefaultImpactWindow = 30 * 24 * time.Hour
	MaxImpactWindow     = 365 * 24 * time.Hour
	// ImpactReaders is how many readers each impacted asset lists (the most active).
	ImpactReaders = 5
)

// Impact is what a rename, drop or schema change of an asset reaches: every asset downstream
// (jobs and datasets) with its owners and its readers in the window, most read first, and the
// owners to tell, weighted by the reads of what they own. A rename breaks consumers that use
// the name, a drop breaks all of them, a schema change those that use the changed columns
// (column lineage on the asset page narrows that down); all three start from this list.
type Impact struct {
	AssetID   uuid.UUID
	Depth     int
	From, To  time.Time // the whole UTC days whose reads count
	Truncated bool      // the walk stopped at its node limit: more may be reached
	Assets    []ImpactedAsset
	Notify    []OwnerImpact
}

// ImpactedAsset is one asset a change would reach.
type ImpactedAsset struct {
	ID              uuid.UUID
	Kind            catalog.Kind
	Status          catalog.Status
	Namespace, Name string
	Depth           int
	Owners          []string
	Reads, Writes   int64
	Readers         []ActorCount // the most active readers, most reads first
}

// OwnerImpact is an owner to notify: the impacted assets they own and those assets' reads.
type OwnerImpact struct {
	Principal string
	Assets    int
	Reads     int64
}

// Impact analyses what a change of asset id would reach within depth hops downstream, with
// reads over the window ending now. walk may be nil (no lineage: nothing downstream).
func (s *Service) Impact(ctx context.Context, id uuid.UUID, walk DownstreamWalk, depth int, window time.Duration) (Impact, error) {
	if depth < 1 || depth > MaxImpactDepth {
		return Impact{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "depth", Message: fmt.Sprintf("depth must be from 1 to %d, not %d", MaxImpactDepth, depth)}
	}
	if window < 24*time.Hour || window > MaxImpactWindow {
		return Impact{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "window", Message: fmt.Sprintf("window must be from 1 day to %d days, not %s", int(MaxImpactWindow.Hours()/24), window)}
	}
	if _, err := s.cat.Get(ctx, id); err != nil {
		return Impact{}, err
	}
	now := s.now().UTC()
	out := Impact{AssetID: id, Depth: depth, From: now.Add(-window + 24*time.Hour).Truncate(24 * time.Hour), To: now, Assets: []ImpactedAsset{}, Notify: []OwnerImpact{}}
	if walk == nil {
		return out, nil
	}
	ids, depths, truncated, err := walk(ctx, id, depth)
	if err != nil {
		return Impact{}, fmt.Errorf("usage: impact of %s: %w", id, err)
	}
	out.Truncated = truncated
	assets, err := s.cat.GetMany(ctx, ids)
	if err != nil {
		return Impact{}, err
	}
	byID := make(map[uuid.UUID]catalog.Asset, len(assets))
	for _, a := range assets {
		byID[a.ID] = a
	}
	notify := map[string]*OwnerImpact{}
	for i, aid := range ids {
		a, ok := byID[aid]
		if !ok {
			continue // deleted meanwhile
		}
		totals, err := s.actorTotals(ctx, aid, out.From, out.To)
		if err != nil {
			return Impact{}, err
		}
		ia := ImpactedAsset{ID: aid, Kind: a.Kind, Status: a.Status, Namespace: a.Namespace, Name: a.Name, Depth: depths[i],
			Owners: []string{}, Readers: []ActorCount{}}
		for _, t := range totals {
			ia.Reads += t.Reads
			ia.Writes += t.Writes
			if t.Reads > 0 {
				ia.Readers = append(ia.Readers, ActorCount(t))
			}
		}
		slices.SortFunc(ia.Readers, func(x, y ActorCount) int { return cmp.Or(cmp.Compare(y.Reads, x.Reads), cmp.Compare(x.Actor, y.Actor)) })
		ia.Readers = ia.Readers[:min(len(ia.Readers), ImpactReaders)]
		for _, o := range a.Owners {
			ia.Owners = append(ia.Owners, o.Principal)
			n := notify[o.Principal]
			if n == nil {
				n = &OwnerImpact{Principal: o.Principal}
				notify[o.Principal] = n
			}
			n.Assets++
			n.Reads += ia.Reads
		}
		out.Assets = append(out.Assets, ia)
	}
	// Most read first: what a change breaks for the most people leads; nearer first on a tie.
	slices.SortFunc(out.Assets, func(x, y ImpactedAsset) int {
		return cmp.Or(cmp.Compare(y.Reads, x.Reads), cmp.Compare(x.Depth, y.Depth), cmp.Compare(x.Name, y.Name))
	})
	for _, n := range notify {
		out.Notify = append(out.Notify, *n)
	}
	slices.SortFunc(out.Notify, func(x, y OwnerImpact) int {
		return cmp.Or(cmp.Compare(y.Reads, x.Reads), cmp.Compare(y.Assets, x.Assets), cmp.Compare(x.Principal, y.Principal))
	})
	return out, nil
}
