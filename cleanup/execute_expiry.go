package cleanup

// Executing expire_snapshots proposals: snapshots removed in one commit, then their files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/tables"
)

// executeExpiry removes exactly the approved snapshots (re-checked: not current, not the head
// of a branch or tag) in one metadata commit, then journals the files only they referenced and
// deletes them like orphans: never one another snapshot or another table references.
func (s *Service) executeExpiry(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("cleanup: read the evidence of proposal %s: %w", p.ID, err)
	}
	done, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID), proposalstep.Step(stepExpire)).Exist(ctx)
	if err != nil {
		return false, err
	}
	if !done {
		if ok, err := s.exempt(ctx, p.AssetID, KindExpireSnapshots); err != nil || ok {
			if err == nil {
				err = stop("the table was exempted from snapshot expiry after the approval")
			}
			return false, err
		}
		pre, post, removed, err := s.expireRetrying(ctx, p, ev)
		if err != nil {
			return false, err
		}
		if err := s.crash("after_expire_commit"); err != nil {
			return false, err
		}
		// The files only the removed snapshots referenced, as the metadata before the commit says.
		after := &refSet{}
		if post != nil {
			if _, err := s.tables.WalkReferences(ctx, post, func(path string, _ tables.RefKind) error { after.add(path); return nil }); err != nil {
				return false, err
			}
		}
		after.seal()
		var files []string
		if len(removed) > 0 {
			gone := map[int64]bool{}
			for _, id := range removed {
				gone[id] = true
			}
			seen := map[string]bool{}
			err = s.tables.WalkSnapshotReferences(ctx, pre, func(id int64) bool { return gone[id] }, func(path string, _ tables.RefKind) error {
				k, _ := normalize(path)
				if !after.has(k) && !seen[k] {
					seen[k] = true
					files = append(files, path)
				}
				return nil
			})
			if err != nil {
				return false, err
			}
		}
		newLoc := ""
		if post != nil {
			newLoc = post.Refs.MetadataLocation
		}
		var journal []journalFile
		for _, f := range files {
			if info, err := stat(pre.IO, f); err == nil { // gone already, or unreadable: not planned
				journal = append(journal, journalFile{path: f, size: info.Size(), modified: info.ModTime()})
			}
		}
		detail, _ := json.Marshal(map[string]any{"snapshots_removed": removed, "metadata_location": newLoc, "files_planned": len(journal)})
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := journalFiles(ctx, tx, p.ID, journal); err != nil {
				return err
			}
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepExpire).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("cleanup: record a step of proposal %s: %w", p.ID, err)
			}
			return s.cat.RecordAudit(ctx, tx, "cleanup.expire_snapshots", p.AssetID, nil, map[string]any{"proposal_id": p.ID,
				"approved_by": p.DecidedBy, "snapshots_expired": removed})
		})
		if err != nil {
			return false, err
		}
	}
	return s.executeOrphans(ctx, p, held, rep, progress)
}

// ExpiryAttempts bounds how often an approved expiry re-reads the table and commits again after
// losing the race for the table's pointer to a writer (a streaming job committing every second
// would otherwise fail it, and need a new approval, forever).
const ExpiryAttempts = 8

// expireRetrying commits an approved expiry, re-reading the table and revalidating the approval
// (the same table, the snapshots still expirable: none became current or a ref's head) before
// each attempt. Only a change of the approved facts stops it; a lost race is retried.
func (s *Service) expireRetrying(ctx context.Context, p *ent.Proposal, ev Evidence) (*tables.Live, *tables.Live, []int64, error) {
	for attempt := 1; ; attempt++ {
		pre, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return nil, nil, nil, err
		}
		if ev.TableUUID != "" && pre.Table.Metadata().TableUUID().String() != ev.TableUUID {
			return nil, nil, nil, stop("the table now has table-uuid %s, not the approved %s", pre.Table.Metadata().TableUUID(), ev.TableUUID)
		}
		if err := s.crash("before_expire_commit"); err != nil {
			return nil, nil, nil, err
		}
		post, removed, err := s.tables.RemoveSnapshots(ctx, p.AssetID, pre, ev.Snapshots)
		if err == nil {
			if attempt > 1 {
				s.log.Info("cleanup: expiry committed after losing races to writers", "proposal_id", p.ID, "attempts", attempt)
			}
			return pre, post, removed, nil
		}
		var keep *tables.KeepError
		if errors.As(err, &keep) {
			return nil, nil, nil, stop("%s", keep.Error())
		}
		if !tables.IsCommitConflict(err) {
			return nil, nil, nil, err
		}
		if attempt == ExpiryAttempts {
			return nil, nil, nil, fmt.Errorf("cleanup: expire snapshots of %s: lost the race for the table's pointer %d times in a row: %w", p.AssetID, attempt, err)
		}
		s.log.Info("cleanup: expiry lost a race with a writer; re-reading the table", "proposal_id", p.ID, "attempt", attempt, "err", err)
		if err := loop.Sleep(ctx, min(50*time.Millisecond<<(attempt-1), 2*time.Second)); err != nil {
			return nil, nil, nil, err
		}
	}
}
