package cleanup

// Unused-asset proposals: retiring a table nobody read, under any of its names, in the window.

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/usage"
)

// unusedNoLonger says why an open retirement no longer holds ("" while it does): the asset was
// deleted, exempted, read or read downstream, or the migration gate (gate, when not "") shuts.
func (s *Service) unusedNoLonger(a catalog.Asset, exempt bool, real usage.RealUsage, gate string) string {
	switch {
	case a.Status == catalog.StatusDeleted:
		return "the asset was deleted"
	case exempt:
		return "the asset was exempted from cleanup"
	case real.Reads > 0:
		why := fmt.Sprintf("it was read %d times in the last %s, last at %s", real.Reads, days(s.policy.UnusedWindow), words.Time(*real.LastRead))
		for _, n := range real.NamesSeen {
			if n.LastAt.Equal(*real.LastRead) || n.LastAt.After(*real.LastRead) {
				why += fmt.Sprintf(" (as %s.%s)", n.Namespace, n.Name)
				break
			}
		}
		return why
	case real.DownstreamRead:
		return fmt.Sprintf("%d assets downstream of it were read in the last %s", len(real.ReadDownstream), days(s.policy.UnusedWindow))
	}
	return gate
}

// nameEvidence is each of the asset's names with when it was last used under it.
func nameEvidence(names []catalog.Name, seen []usage.NameSeen) []NameEvidence {
	var out []NameEvidence
	for _, n := range names {
		ne := NameEvidence{Namespace: n.Namespace, Name: n.Name, Current: n.Current()}
		for _, s := range seen {
			if s.Namespace == n.Namespace && s.Name == n.Name {
				at := s.LastAt
				ne.LastUsedAt = &at
			}
		}
		out = append(out, ne)
	}
	return out
}

func (s *Service) proposeUnused(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	if s.usage == nil || t.GoneAt != nil {
		return nil
	}
	a, err := s.cat.Get(ctx, t.AssetID)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindUnusedAsset)
	if err != nil {
		return err
	}
	now := s.clock()
	from := now.Add(-s.policy.UnusedWindow)
	real, err := s.usage.Real(ctx, t.AssetID, from, now, s.downstream)
	if err != nil {
		return err
	}
	exempt, err := s.exempt(ctx, t.AssetID, KindUnusedAsset)
	if err != nil {
		return err
	}
	young := now.Sub(a.CreatedAt) < s.policy.MinAssetAge
	used := real.Reads > 0 || real.DownstreamRead
	gateOK, finalRun, gateWhy := true, uuid.Nil, ""
	if s.migrations != nil {
		if gateOK, finalRun, gateWhy, err = s.migrations(ctx, t.AssetID); err != nil {
			return err
		}
	}
	if cur != nil {
		if cur.State != proposal.StateOpen {
			return nil
		}
		why := gateWhy
		if gateOK {
			why = ""
		}
		why = s.unusedNoLonger(a, exempt, real, why)
		if why == "" {
			rep.Kept++
			return nil
		}
		if err := s.close(ctx, cur, proposal.StateWithdrawn, why); err != nil {
			return err
		}
		rep.Withdrawn++
		return nil
	}
	if used || young || exempt || !gateOK || a.Status == catalog.StatusDeleted {
		return nil
	}
	// A person's rejection holds until a whole new window of no reads follows the rejected one,
	// or the quiet period ends.
	rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindUnusedAsset)
	if err != nil {
		return err
	}
	if rej != nil && (rejEv.To == nil || from.Before(*rejEv.To)) {
		return nil
	}
	// Evidence over the asset's whole life: its last read ever, under which names, by how many.
	life, err := s.usage.Real(ctx, t.AssetID, a.CreatedAt, now, nil)
	if err != nil {
		return err
	}
	var down []uuid.UUID
	if s.downstream != nil {
		if down, err = s.downstream(ctx, t.AssetID); err != nil {
			return err
		}
	}
	names, err := s.cat.Names(ctx, t.AssetID)
	if err != nil {
		return err
	}
	ev := Evidence{Window: days(s.policy.UnusedWindow), From: &from, To: &now, LastRead: life.LastRead, Readers: life.DistinctReaders,
		Downstream: down, AssetCreatedAt: &a.CreatedAt, Location: t.Location, TableUUID: t.TableUUID, MetadataLocation: t.MetadataLocation}
	if finalRun != uuid.Nil {
		ev.FinalReconciliation = &finalRun
	}
	if rej != nil {
		id := rej.ID
		ev.Reopens, ev.ReopensWhy = &id, fmt.Sprintf("a whole new %s window without reads followed the one %s", days(s.policy.UnusedWindow), declinedOn(rej))
	}
	ev.Names = nameEvidence(names, life.NamesSeen)
	for _, o := range a.Owners {
		ev.Owners = append(ev.Owners, o.Principal)
	}
	last := "never"
	if life.LastRead != nil {
		last = words.Time(*life.LastRead)
	}
	under := "its name"
	if len(names) > 1 {
		under = fmt.Sprintf("any of its %d names", len(names))
	}
	downstream := "nothing is downstream of it"
	switch len(down) {
	case 0:
	case 1:
		downstream = "its one downstream asset was not read either"
	default:
		downstream = fmt.Sprintf("none of its %d downstream assets was read either", len(down))
	}
	ev.Summary = fmt.Sprintf("No read of this asset under %s in the last %s (last read: %s), and %s; created %s. Retiring it drops the table from its catalog first and deletes its files %s later.",
		under, days(s.policy.UnusedWindow), last, downstream, words.Time(a.CreatedAt), days(s.policy.Grace))
	if finalRun != uuid.Nil {
		ev.Summary += fmt.Sprintf(" It was migrated and cut over; the final reconciliation after the cutover, run %s, was clean.", finalRun)
	}
	return s.open(ctx, t.AssetID, proposal.KindUnusedAsset, proposal.SeverityNormal, ev, nil, rep)
}
