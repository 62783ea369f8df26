package cleanup

// The deletion every executable kind ends with (orphan files, expired snapshots' files, a retired
// table's files): the proposal's pending files in batches, the world re-read before each batch,
// each file re-verified and deleted on its table's ground only, its outcome journaled under the
// execution lease.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/tables"
)

// OrphanOutcome is what executing an orphan-files proposal did.
type OrphanOutcome struct {
	Deleted int64          `json:"deleted"`
	Bytes   int64          `json:"bytes"`
	Gone    int64          `json:"already_gone"`
	Skipped map[string]int `json:"skipped,omitempty"` // reason -> files
	// SnapshotsKept (expire_snapshots): approved snapshots the executor kept because they were
	// found still needed right before the expiry's commit, with why.
	SnapshotsKept []KeptSnapshot `json:"snapshots_kept,omitempty"`
}

// guard re-reads the world right before a batch of deletions: the references that must be
// kept (every table overlapping the location, and any foreign tenant stops it all), and the IO
// to delete through. It returns a stopError when the approval no longer holds.
type guard func(ctx context.Context) (keep *refSet, fsys icebergio.IO, own string, err error)

// deletePending works through the proposal's pending file journal in batches, re-reading the
// world through g before each batch, paced like the scans' HEAD requests.
func (s *Service) deletePending(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string), threshold time.Duration, g guard) (bool, error) {
	for {
		pending, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(p.ID), proposalfile.StateEQ(proposalfile.StatePending)).
			Order(ent.Asc(proposalfile.FieldID)).Limit(500).All(ctx)
		if err != nil || len(pending) == 0 {
			if err == nil {
				err = s.orphanOutcome(ctx, p)
			}
			return err == nil, err
		}
		keep, fsys, own, err := g(ctx)
		if err != nil {
			if !errors.As(err, new(*stopError)) && ctx.Err() == nil {
				err = &retryError{err}
			}
			return false, err
		}
		var deleted []string
		var bytes int64
		for _, f := range pending {
			if err := s.crash("orphan_file"); err != nil {
				s.auditDeletion(ctx, p, deleted, bytes)
				return false, err
			}
			if s.heads != nil { // stat and delete requests share the HEAD pacing
				if err := s.heads.Wait(ctx); err != nil {
					s.auditDeletion(ctx, p, deleted, bytes)
					return false, err
				}
			}
			// Fenced: a worker paused past its lease must not delete what the next one is
			// journaling. (Storage takes no token; this narrows the window to one request.)
			if err := s.renew(ctx, held, s.leaseTTL); err != nil {
				s.auditDeletion(ctx, p, deleted, bytes)
				return false, err
			}
			out, err := s.deleteOrphan(fsys, keep, own, f, threshold)
			if err != nil {
				s.auditDeletion(ctx, p, deleted, bytes)
				return false, err
			}
			state := out.state
			moved, err := s.journal(ctx, held, f, state, out.detail)
			if err != nil {
				s.auditDeletion(ctx, p, deleted, bytes)
				return false, err
			}
			if !moved {
				continue // another worker journaled it first: its outcome is the one that counts
			}
			if !out.unchecked {
				// Deleted, gone, referenced again or rewritten: the observation no longer holds,
				// and the next proposal must not list the file again before a scan confirms it anew.
				if _, err := s.db.CleanupObservation.Delete().Where(cleanupobservation.AssetID(p.AssetID), cleanupobservation.Path(f.Path)).Exec(ctx); err != nil {
					return false, fmt.Errorf("cleanup: forget the observation of a file of proposal %s: %w", p.ID, err)
				}
			}
			switch state {
			case proposalfile.StateDeleted:
				deleted = append(deleted, f.Path)
				bytes += f.Size
				rep.Deleted++
				rep.Bytes += f.Size
			case proposalfile.StateSkipped:
				rep.Skipped++
			}
		}
		s.auditDeletion(ctx, p, deleted, bytes)
		if progress != nil {
			progress(fmt.Sprintf("proposal %s: %d files deleted so far", p.ID, rep.Deleted))
		}
	}
}

// journal moves a file's journal entry out of pending, once, and only while this worker still
// holds the proposal's execution lease with the same fencing token (checked in the same
// statement). It reports whether it moved the entry; errLeaseLost when the lease is gone.
func (s *Service) journal(ctx context.Context, held *lease, f *ent.ProposalFile, state proposalfile.State, detail string) (bool, error) {
	now := s.clock()
	res, err := s.db.ExecContext(ctx, `UPDATE proposal_files SET state = $1, detail = $2, done_at = $3 WHERE id = $4 AND state = 'pending'
AND EXISTS (SELECT 1 FROM cleanup_leases WHERE asset_id = $5 AND shard = $6 AND holder = $7 AND token = $8 AND expires_at >= $3)`,
		string(state), detail, now, f.ID, held.asset, held.shard, s.holder, held.token)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	pending, err := s.db.ProposalFile.Query().Where(proposalfile.ID(f.ID), proposalfile.StateEQ(proposalfile.StatePending)).Exist(ctx)
	if err == nil && pending {
		err = errLeaseLost
	}
	return false, err
}

// fileOutcome is what happened to one file of an orphan proposal.
type fileOutcome struct {
	state  proposalfile.State // deleted, gone or skipped
	detail string             // why, for the journal
	// unchecked: it could not be looked at (storage failed), so what the scans observed of it
	// still stands; every other outcome ends the observation.
	unchecked bool
}

// deleteOrphan re-verifies and deletes one file: only on the table's own ground (under own,
// its location as read right now, in the one reading of a path), never one a known table
// references.
func (s *Service) deleteOrphan(fsys icebergio.IO, keep *refSet, own string, f *ent.ProposalFile, threshold time.Duration) (fileOutcome, error) {
	skipped := func(why string) (fileOutcome, error) {
		return fileOutcome{state: proposalfile.StateSkipped, detail: why}, nil
	}
	if err := tables.Owns(own, f.Path); err != nil {
		s.log.Warn("cleanup: a file off its table's ground was not deleted", "proposal_id", f.ProposalID, "path", f.Path, "err", err)
		return skipped("not on the table's own ground: Tidemark deletes only files under the table's location " + own + ", read one way")
	}
	key, pathOnly := normalize(f.Path)
	if keep.has(key) {
		return skipped("referenced by a table's current metadata (this table's or one sharing its location)")
	}
	if keep.hasPath(pathOnly) {
		return skipped("a table references the same path under another scheme or authority")
	}
	info, err := stat(fsys, f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileOutcome{state: proposalfile.StateGone, detail: "already gone"}, nil
	}
	if err != nil {
		return fileOutcome{state: proposalfile.StateSkipped, detail: "could not check it: " + err.Error(), unchecked: true}, nil
	}
	if age := s.clock().Sub(info.ModTime()); age < threshold {
		return skipped(fmt.Sprintf("modified %s ago, younger than the %s threshold (rewritten since it was confirmed)", age.Round(time.Second), threshold))
	}
	if info.Size() != f.Size {
		return skipped(fmt.Sprintf("its size changed from %d to %d bytes since it was confirmed", f.Size, info.Size()))
	}
	if err := fsys.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fileOutcome{}, fmt.Errorf("cleanup: delete %s: %w", f.Path, err)
	}
	return fileOutcome{state: proposalfile.StateDeleted, detail: "deleted"}, nil
}

func (s *Service) auditDeletion(ctx context.Context, p *ent.Proposal, files []string, bytes int64) {
	if len(files) == 0 {
		return
	}
	if err := s.cat.RecordAudit(context.WithoutCancel(ctx), nil, "cleanup.delete_files", p.AssetID, nil,
		map[string]any{"proposal_id": p.ID, "kind": p.Kind, "approved_by": p.DecidedBy, "files": files, "count": len(files), "bytes": bytes}); err != nil {
		s.log.Error("could not audit a deletion", "proposal_id", p.ID, "err", err)
	}
}

func (s *Service) orphanOutcome(ctx context.Context, p *ent.Proposal) error {
	files, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(p.ID)).All(ctx)
	if err != nil {
		return err
	}
	out := OrphanOutcome{Skipped: map[string]int{}}
	for _, f := range files {
		switch f.State {
		case proposalfile.StateDeleted:
			out.Deleted++
			out.Bytes += f.Size
		case proposalfile.StateGone:
			out.Gone++
		case proposalfile.StateSkipped:
			out.Skipped[f.Detail]++
		}
	}
	if p.Kind == proposal.KindExpireSnapshots {
		st, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID), proposalstep.Step(stepExpire)).Only(ctx)
		if err != nil && !ent.IsNotFound(err) {
			return err
		}
		if st != nil {
			var facts struct {
				Kept []KeptSnapshot `json:"snapshots_kept"`
			}
			if err := json.Unmarshal([]byte(st.Detail), &facts); err != nil {
				return fmt.Errorf("cleanup: read the expiry step of proposal %s: %w", p.ID, err)
			}
			out.SnapshotsKept = facts.Kept
		}
	}
	b, _ := json.Marshal(out)
	return s.db.Proposal.UpdateOneID(p.ID).SetOutcome(string(b)).Exec(ctx)
}
