package cleanup

// Executing expire_snapshots proposals: snapshots removed in one commit, then their files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/internal/chunk"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/tables"
)

// executeExpiry removes exactly the approved snapshots (re-checked: not current, not the head
// of a branch or tag) in one metadata commit, then deletes their files like orphans: never one
// another snapshot or another table references. A proposal that listed its files deletes only
// those (one the table references again after the commit is kept, journaled as skipped); one
// opened before proposals listed their files journals, after the commit, the files only the
// removed snapshots referenced.
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
		// The files only the removed snapshots referenced, as the metadata before the commit says,
		// against everything the metadata after it references (before it, when nothing was left
		// to remove: an earlier attempt, or another writer, removed the snapshots already).
		current := post
		if current == nil {
			current = pre
		}
		after, err := s.referencesOf(ctx, current, nil)
		if err != nil {
			return false, err
		}
		gone := map[int64]bool{}
		for _, id := range removed {
			gone[id] = true
		}
		files, err := s.onlyReferencedBy(ctx, pre, func(id int64) bool { return gone[id] }, after)
		if err != nil {
			return false, err
		}
		newLoc := ""
		if post != nil {
			newLoc = post.Refs.MetadataLocation
		}
		facts := map[string]any{"snapshots_removed": removed, "metadata_location": newLoc}
		var journal []journalFile
		var skip []uuid.UUID
		if ev.FileList {
			// The approval covers exactly the listed files: none is added, and one the table
			// references again is kept. A file only the removed snapshots referenced that the
			// list lacks is left for the orphan scans.
			var unlisted int
			if skip, unlisted, err = s.approvedFiles(ctx, p.ID, after, files); err != nil {
				return false, err
			}
			facts["files_skipped"], facts["files_not_listed"] = len(skip), unlisted
		} else {
			// Opened before proposals listed their files: the files are planned now.
			for _, f := range files {
				if info, err := stat(pre.IO, f); err == nil { // gone already, or unreadable: not planned
					journal = append(journal, journalFile{path: f, size: info.Size(), modified: info.ModTime()})
				}
			}
			facts["files_planned"] = len(journal)
		}
		detail, _ := json.Marshal(facts)
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := journalFiles(ctx, tx, p.ID, journal); err != nil {
				return err
			}
			if err := chunk.Each(skip, func(ids []uuid.UUID) error {
				return tx.ProposalFile.Update().Where(proposalfile.IDIn(ids...), proposalfile.StateEQ(proposalfile.StatePending)).
					SetState(proposalfile.StateSkipped).SetDetail(referencedAgain).SetDoneAt(s.clock()).Exec(ctx)
			}); err != nil {
				return fmt.Errorf("cleanup: journal the files of proposal %s referenced again: %w", p.ID, err)
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

// referencedAgain is the journal's reason for keeping a listed file the table references again.
const referencedAgain = "referenced again since the approval: the table's metadata after the expiry references it"

// referencesOf is every path l references (its metadata files, version hint and snapshots'
// files), except through the snapshots skip picks (nil skips none).
func (s *Service) referencesOf(ctx context.Context, l *tables.Live, skip func(int64) bool) (*refSet, error) {
	refs := &refSet{}
	add := func(path string, _ tables.RefKind) error { refs.add(path); return nil }
	if skip == nil {
		if _, err := s.tables.WalkReferences(ctx, l, add); err != nil {
			return nil, err
		}
		refs.seal()
		return refs, nil
	}
	// The metadata's own files from the whole walk, the snapshots' from the kept ones only.
	_, err := s.tables.WalkReferences(ctx, l, func(path string, kind tables.RefKind) error {
		if kind == tables.RefMetadata || kind == tables.RefVersionHint {
			refs.add(path)
		}
		return nil
	})
	if err == nil {
		err = s.tables.WalkSnapshotReferences(ctx, l, func(id int64) bool { return !skip(id) }, add)
	}
	if err != nil {
		return nil, err
	}
	refs.seal()
	return refs, nil
}

// onlyReferencedBy returns the files the snapshots gone picks reference in l that keep does not
// (in either of refSet's two readings): what removing those snapshots leaves unreferenced, each
// once, in walk order. A proposal lists them; an execution finds them again after its commit.
func (s *Service) onlyReferencedBy(ctx context.Context, l *tables.Live, gone func(int64) bool, keep *refSet) ([]string, error) {
	var files []string
	seen := map[string]bool{}
	err := s.tables.WalkSnapshotReferences(ctx, l, gone, func(path string, _ tables.RefKind) error {
		k, _ := normalize(path)
		if !keep.has(k) && !seen[k] {
			seen[k] = true
			files = append(files, path)
		}
		return nil
	})
	return files, err
}

// approvedFiles reads an expiry's approved file list against the table after the expiry: the
// pending files it references again (to skip), and how many of files (those only the removed
// snapshots referenced) the list lacks.
func (s *Service) approvedFiles(ctx context.Context, id uuid.UUID, after *refSet, files []string) (skip []uuid.UUID, unlisted int, err error) {
	listed := map[string]bool{}
	for cursor := uuid.Nil; ; {
		page, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(id), proposalfile.IDGT(cursor)).
			Order(ent.Asc(proposalfile.FieldID)).Limit(1000).All(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("cleanup: read the file list of proposal %s: %w", id, err)
		}
		if len(page) == 0 {
			break
		}
		for _, f := range page {
			key, pathOnly := normalize(f.Path)
			listed[key] = true
			if f.State == proposalfile.StatePending && (after.has(key) || after.hasPath(pathOnly)) {
				skip = append(skip, f.ID)
			}
		}
		cursor = page[len(page)-1].ID
	}
	for _, f := range files {
		if k, _ := normalize(f); !listed[k] {
			unlisted++
		}
	}
	return skip, unlisted, nil
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
