package cleanup

// Dangling-reference findings: files retained snapshots reference that storage does not have.

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/tables"
)

// proposeDangling opens a high-severity finding from the newest reference check that ran both
// checks, and withdraws the open one when a later complete check found no dangling reference.
func (s *Service) proposeDangling(ctx context.Context, t tables.Table, rep *ProposeReport) error {
	latest, err := s.lastRefCheck(ctx, t.AssetID)
	if err != nil {
		return err
	}
	cur, err := s.current(ctx, t.AssetID, proposal.KindDanglingReference)
	if err != nil || latest == nil {
		return err
	}
	if cur != nil {
		if latest.DanglingCount == 0 && latest.State == "complete" && latest.StartedAt.After(cur.CreatedAt) {
			if err := s.close(ctx, cur, proposal.StateWithdrawn, fmt.Sprintf("reference check %s found no dangling reference", latest.CheckID)); err != nil {
				return err
			}
			rep.Withdrawn++
			return nil
		}
		rep.Kept++
		return nil
	}
	if latest.DanglingCount == 0 {
		return nil
	}
	if rej, rejEv, err := s.rejection(ctx, t.AssetID, proposal.KindDanglingReference); err != nil || (rej != nil && rejEv.DanglingCount == latest.DanglingCount) {
		return err
	}
	id := latest.CheckID
	ev := Evidence{RefCheckID: &id, Dangling: latest.Dangling, DanglingCount: latest.DanglingCount,
		Remedies: []string{
			"restore the missing files from a backup or object versioning (the paths are listed), then run the reference check again (tidemark cleanup check-refs)",
			"or roll the table back to a snapshot that does not reference them (rollback to snapshot); for files only a tag or an old snapshot references, drop the tag or expire the snapshot",
			"or remove the references: rewrite or delete the affected data files' rows so that no retained snapshot names the missing files, accepting the data loss (orphan-file removal does not help: it deletes unreferenced files, and these are referenced)",
		},
		Summary: fmt.Sprintf("Retained snapshots reference %d files that storage did not have on two checks (reference check %s): queries reading them fail. Tidemark never repairs this itself.", latest.DanglingCount, latest.CheckID)}
	return s.open(ctx, t.AssetID, proposal.KindDanglingReference, proposal.SeverityHigh, ev, nil, rep)
}
