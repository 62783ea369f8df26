package cleanup

// Shared-location findings: another table lives in the location, so nothing there is proposed
// for deletion.

import (
	"context"
	"fmt"
	"slices"

	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/tables"
)

// proposeShared opens a non-executable shared_location proposal when the table's latest
// finished scan found another table living in its location, and withdraws it once a later
// scan finds none.
func (s *Service) proposeShared(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	last, err := s.lastFinishedScan(ctx, t.AssetID)
	if err != nil || last == nil {
		return err
	}
	latest, err := toReport(last)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindSharedLocation)
	if err != nil {
		return err
	}
	if cur != nil {
		if len(latest.Foreign) == 0 && latest.StartedAt.After(cur.CreatedAt) {
			rep.Withdrawn++
			return s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("scan %s found no other table in the location", latest.ScanID))
		}
		rep.Kept++
		return nil
	}
	if len(latest.Foreign) == 0 {
		return nil
	}
	if rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindSharedLocation); err != nil || (rej != nil && sameTenants(rejEv.Foreign, latest.Foreign)) {
		return err
	}
	id := latest.ScanID
	ev := Evidence{ScanID: &id, Foreign: latest.Foreign, Location: t.Location, TableUUID: t.TableUUID,
		Remedies: []string{
			"register the other table in Tidemark (POST /api/v1/tables with its metadata location, or sync the catalog that holds it): its files then count as referenced and cleanup of this location resumes",
			"or move one of the tables to a location of its own",
			"if the metadata file is a leftover of a table that no longer exists anywhere, remove it by hand after checking every catalog",
		},
		Summary: fmt.Sprintf("Another table lives in %s: %s. Until every table there is known, no file in the location is proposed for deletion.", t.Location, foreignText(latest.Foreign))}
	return s.open(ctx, t.AssetID, proposal.KindSharedLocation, proposal.SeverityHigh, ev, nil, rep)
}

func sameTenants(a, b []ForeignTenant) bool {
	ids := func(fs []ForeignTenant) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.TableUUID+"|"+f.Error)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(ids(a), ids(b))
}
