package cleanup

// Executing expire_snapshots proposals: snapshots removed in one commit, then their files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
		pre, post, removed, kept, err := s.expireRetrying(ctx, p, ev)
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
		if len(kept) > 0 {
			facts["snapshots_kept"] = kept
		}
		var journal []journalFile
		var skip, skipKept []uuid.UUID
		if ev.FileList {
			// The approval covers exactly the listed files: none is added, and one the table
			// references again, or a snapshot kept at the last moment references, is kept. A
			// file only the removed snapshots referenced that the list lacks is left for the
			// orphan scans.
			var keptRefs *refSet
			if len(kept) > 0 {
				ids := keptIDs(kept)
				keptRefs = &refSet{}
				if err := s.tables.WalkSnapshotReferences(ctx, pre, func(id int64) bool { return ids[id] }, func(path string, _ tables.RefKind) error {
					keptRefs.add(path)
					return nil
				}); err != nil {
					return false, err
				}
				keptRefs.seal()
			}
			var unlisted int
			if skip, skipKept, unlisted, err = s.approvedFiles(ctx, p.ID, after, keptRefs, files); err != nil {
				return false, err
			}
			facts["files_skipped"], facts["files_not_listed"] = len(skip)+len(skipKept), unlisted
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
			for _, sk := range []struct {
				ids    []uuid.UUID
				detail string
			}{{skip, referencedAgain}, {skipKept, keptAtExecution}} {
				if err := chunk.Each(sk.ids, func(ids []uuid.UUID) error {
					return tx.ProposalFile.Update().Where(proposalfile.IDIn(ids...), proposalfile.StateEQ(proposalfile.StatePending)).
						SetState(proposalfile.StateSkipped).SetDetail(sk.detail).SetDoneAt(s.clock()).Exec(ctx)
				}); err != nil {
					return fmt.Errorf("cleanup: journal the files of proposal %s the table still references: %w", p.ID, err)
				}
			}
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepExpire).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("cleanup: record a step of proposal %s: %w", p.ID, err)
			}
			audit := map[string]any{"proposal_id": p.ID, "approved_by": p.DecidedBy, "snapshots_expired": removed}
			if len(kept) > 0 {
				audit["snapshots_kept"] = kept
			}
			return s.cat.RecordAudit(ctx, tx, "cleanup.expire_snapshots", p.AssetID, nil, audit)
		})
		if err != nil {
			return false, err
		}
	}
	return s.executeOrphans(ctx, p, held, rep, progress)
}

// referencedAgain is the journal's reason for keeping a listed file the table references again.
const referencedAgain = "referenced again since the approval: the table's metadata after the expiry references it"

// keptAtExecution is the journal's reason for keeping a listed file of a snapshot the executor
// kept (the proposal's outcome says which and why).
const keptAtExecution = "referenced by an approved snapshot kept at execution because it is still needed (see snapshots_kept in the outcome)"

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
// pending files a snapshot kept at execution references (kept: nil for none), the other
// pending files it references again (both to skip), and how many of files (those only the
// removed snapshots referenced) the list lacks.
func (s *Service) approvedFiles(ctx context.Context, id uuid.UUID, after, kept *refSet, files []string) (skip, skipKept []uuid.UUID, unlisted int, err error) {
	listed := map[string]bool{}
	for cursor := uuid.Nil; ; {
		page, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(id), proposalfile.IDGT(cursor)).
			Order(ent.Asc(proposalfile.FieldID)).Limit(1000).All(ctx)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("cleanup: read the file list of proposal %s: %w", id, err)
		}
		if len(page) == 0 {
			break
		}
		for _, f := range page {
			key, pathOnly := normalize(f.Path)
			listed[key] = true
			switch {
			case f.State != proposalfile.StatePending:
			case kept != nil && (kept.has(key) || kept.hasPath(pathOnly)):
				skipKept = append(skipKept, f.ID)
			case after.has(key) || after.hasPath(pathOnly):
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
	return skip, skipKept, unlisted, nil
}

// ExpiryAttempts bounds how often an approved expiry re-reads the table and commits again after
// losing the race for the table's pointer to a writer (a streaming job committing every second
// would otherwise fail it, and need a new approval, forever).
const ExpiryAttempts = 8

// expireRetrying commits an approved expiry, re-reading the table and revalidating the approval
// (the same table, the snapshots still expirable: none became current or a ref's head) before
// each attempt. Only a change of the approved facts stops it; a lost race is retried. Right
// before each commit it asks which approved snapshots are still needed (stillNeeded): it keeps
// those (returned, with why) and removes the others; it stops only when it would keep every
// approved snapshot the table still has. It returns the table before and after the commit and
// the snapshots removed.
func (s *Service) expireRetrying(ctx context.Context, p *ent.Proposal, ev Evidence) (*tables.Live, *tables.Live, []int64, []KeptSnapshot, error) {
	var kept []KeptSnapshot
	for attempt := 1; ; attempt++ {
		pre, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if ev.TableUUID != "" && pre.Table.Metadata().TableUUID().String() != ev.TableUUID {
			return nil, nil, nil, nil, stop("the table now has table-uuid %s, not the approved %s", pre.Table.Metadata().TableUUID(), ev.TableUUID)
		}
		if err := s.crash("before_expire_commit"); err != nil {
			return nil, nil, nil, nil, err
		}
		// Only the approved snapshots the table still has: one removed already (an attempt
		// before a crash, another writer) is neither kept nor removed again.
		held := keptIDs(kept)
		var there, ask []int64
		for _, id := range ev.Snapshots {
			if pre.Table.Metadata().SnapshotByID(id) != nil {
				there = append(there, id)
				if !held[id] {
					ask = append(ask, id)
				}
			}
		}
		needed, err := s.stillNeeded(ctx, p, ask)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		kept = append(kept, needed...)
		held = keptIDs(kept)
		remove := slices.DeleteFunc(slices.Clone(ev.Snapshots), func(id int64) bool { return held[id] })
		if len(there) > 0 && !slices.ContainsFunc(there, func(id int64) bool { return !held[id] }) {
			return nil, nil, nil, nil, stop("every approved snapshot the table still has is still needed, so none is expired: %s", keptText(kept))
		}
		post, removed, err := s.tables.RemoveSnapshots(ctx, p.AssetID, pre, remove)
		if err == nil {
			if attempt > 1 {
				s.log.Info("cleanup: expiry committed after losing races to writers", "proposal_id", p.ID, "attempts", attempt)
			}
			if len(kept) > 0 {
				s.log.Info("cleanup: expiry kept approved snapshots still needed", "proposal_id", p.ID, "kept", keptText(kept))
			}
			return pre, post, removed, kept, nil
		}
		var keep *tables.KeepError
		if errors.As(err, &keep) {
			return nil, nil, nil, nil, stop("%s", keep.Error())
		}
		if !tables.IsCommitConflict(err) {
			return nil, nil, nil, nil, err
		}
		if attempt == ExpiryAttempts {
			return nil, nil, nil, nil, fmt.Errorf("cleanup: expire snapshots of %s: lost the race for the table's pointer %d times in a row: %w", p.AssetID, attempt, err)
		}
		s.log.Info("cleanup: expiry lost a race with a writer; re-reading the table", "proposal_id", p.ID, "attempt", attempt, "err", err)
		if err := loop.Sleep(ctx, min(50*time.Millisecond<<(attempt-1), 2*time.Second)); err != nil {
			return nil, nil, nil, nil, err
		}
	}
}

// stillNeeded re-reads, right before an approved expiry's commit, which of the snapshots are
// still needed, as late reads stop a retirement: read by time travel within the unused window
// up to now (a read after the approval, or one that arrived late), an input version a
// downstream now keeps, or read at all since the proposal opened. A failure to read it waits
// for the next run: nothing was removed.
func (s *Service) stillNeeded(ctx context.Context, p *ent.Proposal, snapshots []int64) ([]KeptSnapshot, error) {
	if s.versions == nil || len(snapshots) == 0 {
		return nil, nil
	}
	ks, err := s.versions.Keeps(ctx, p.AssetID, s.clock().Add(-s.policy.UnusedWindow))
	if err != nil {
		return nil, &retryError{fmt.Errorf("cleanup: read which approved snapshots are still needed: %w", err)}
	}
	kept := keptSnapshots(ks, snapshots, "")
	held := keptIDs(kept)
	rest := slices.DeleteFunc(slices.Clone(snapshots), func(id int64) bool { return held[id] })
	rs, err := s.versions.ReadsSince(ctx, p.AssetID, rest, p.CreatedAt)
	if err != nil {
		return nil, &retryError{fmt.Errorf("cleanup: read the reads of the approved snapshots: %w", err)}
	}
	return append(kept, keptSnapshots(rs, rest, keptReadSinceOpened)...), nil
}
