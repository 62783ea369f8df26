package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/cleanupobservation"
	"github.com/tidemark/tidemark/ent/cleanupscan"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/ent/proposalstep"
	"github.com/tidemark/tidemark/internal/loop"
	"github.com/tidemark/tidemark/tables"
)

// Execution steps journaled for an unused asset.
const (
	stepMetadata = "retire_metadata"  // asset marked deleted, table dropped from its catalog (no purge)
	stepFiles    = "delete_files"     // after the grace period: the journaled files deleted
	stepExpire   = "expire_snapshots" // the approved snapshots removed in one metadata commit
	stepPlan     = "plan_files"       // the retired table's files journaled for deletion
	stepStopped  = "stopped"          // re-verification found the world changed since approval
)

// ExecuteReport says what one executor run did.
type ExecuteReport struct {
	Proposals int   `json:"proposals"` // proposals worked on
	Executed  int   `json:"executed"`  // finished
	Waiting   int   `json:"waiting"`   // in their grace period, or until the tables around them can be read
	Deleted   int64 `json:"files_deleted"`
	Bytes     int64 `json:"bytes_deleted"`
	Skipped   int64 `json:"files_skipped"`
	Failed    int   `json:"failed"`
	Stopped   int   `json:"stopped"` // re-verified and found changed since approval
	Busy      int   `json:"busy"`    // being executed by another worker
	Lost      int   `json:"lost"`    // left to another worker after this one lost its lease
}

// OrphanOutcome is what executing an orphan-files proposal did.
type OrphanOutcome struct {
	Deleted int64          `json:"deleted"`
	Bytes   int64          `json:"bytes"`
	Gone    int64          `json:"already_gone"`
	Skipped map[string]int `json:"skipped,omitempty"` // reason -> files
}

// Execute runs approved proposals (one, or all when id is uuid.Nil) and continues executing
// ones a crash interrupted or whose grace period has passed. Every step is idempotent and
// journaled, so running it again after a crash finishes the job and does nothing twice.
func (s *Service) Execute(ctx context.Context, id uuid.UUID, progress func(string)) (ExecuteReport, error) {
	var rep ExecuteReport
	q := s.db.Proposal.Query().Where(proposal.StateIn(proposal.StateApproved, proposal.StateExecuting)).Order(ent.Asc(proposal.FieldID))
	if id != uuid.Nil {
		p, err := s.row(ctx, id)
		if err != nil {
			return rep, err
		}
		if p.State != proposal.StateApproved && p.State != proposal.StateExecuting {
			return rep, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is %s: only approved proposals are executed", id, p.State)}
		}
		q.Where(proposal.ID(id))
	}
	ps, err := q.All(ctx)
	if err != nil {
		return rep, fmt.Errorf("read the proposals to execute: %w", err)
	}
	for _, p := range ps {
		if p.State == proposal.StateExecuting && p.DueAt != nil && s.clock().Before(*p.DueAt) {
			rep.Waiting++
			continue
		}
		if err := s.executeOne(ctx, p, &rep, progress); err != nil {
			return rep, fmt.Errorf("execute proposal %s (%s of asset %s): %w", p.ID, p.Kind, p.AssetID, err)
		}
	}
	return rep, nil
}

// executeOne runs one proposal under its execution lease: one worker at a time, renewed while
// it runs, its fencing token checked on every journal write. A proposal another live worker is
// executing is left to it.
func (s *Service) executeOne(ctx context.Context, p *ent.Proposal, rep *ExecuteReport, progress func(string)) error {
	held, err := s.claim(ctx, p.AssetID, "execute:"+p.ID.String(), s.leaseTTL)
	if err != nil {
		return err
	}
	if held == nil {
		rep.Busy++
		return nil
	}
	defer s.release(ctx, held)
	// Read it again under the lease: another worker may have finished it meanwhile.
	if p, err = s.db.Proposal.Get(ctx, p.ID); err != nil {
		return fmt.Errorf("read proposal %s: %w", p.ID, err)
	}
	if p.State != proposal.StateApproved && p.State != proposal.StateExecuting {
		return nil
	}
	rep.Proposals++
	if progress != nil {
		progress(fmt.Sprintf("executing %s proposal %s", p.Kind, p.ID))
	}
	ctx = catalog.WithActor(ctx, BotActor+" for "+p.DecidedBy)
	if p.State == proposal.StateApproved {
		n, err := s.db.Proposal.Update().Where(proposal.ID(p.ID), proposal.Version(p.Version)).SetState(proposal.StateExecuting).
			SetUpdatedAt(s.clock()).AddVersion(1).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // changed meanwhile
		}
		p.State, p.Version = proposal.StateExecuting, p.Version+1
	}
	lctx, cancel := context.WithCancelCause(ctx)
	stopRenewing := s.keepRenewing(lctx, held, s.leaseTTL, cancel)
	var done bool
	switch p.Kind {
	case proposal.KindOrphanFiles:
		done, err = s.executeOrphans(lctx, p, held, rep, progress)
	case proposal.KindUnusedAsset:
		done, err = s.executeUnused(lctx, p, held, rep, progress)
	case proposal.KindExpireSnapshots:
		done, err = s.executeExpiry(lctx, p, held, rep, progress)
	default:
		err = fmt.Errorf("%s proposals are never executed", p.Kind)
	}
	stopRenewing()
	lost := errors.Is(context.Cause(lctx), errLeaseLost) || errors.Is(err, errLeaseLost)
	cancel(nil)
	if !lost && ctx.Err() == nil {
		// Whatever happened, only the lease's holder writes the outcome: a worker paused past
		// its lease leaves the proposal to the one that took over.
		if rerr := s.renew(ctx, held, s.leaseTTL); errors.Is(rerr, errLeaseLost) {
			lost = true
		}
	}
	var fault *faultError
	var stopped *stopError
	switch {
	case errors.As(err, &fault) || ctx.Err() != nil:
		return err // a crash: the journal lets the next run resume
	case lost:
		// Paused past the lease: another worker may be running it now. Stop, write nothing more.
		rep.Lost++
		s.log.Warn("cleanup proposal left to another worker: this one lost its execution lease", "proposal_id", p.ID)
	case errors.As(err, &stopped):
		rep.Stopped++
		if err := s.stopProposal(ctx, p, stopped.reason); err != nil {
			return err
		}
		s.log.Warn("cleanup proposal stopped: the world changed since approval", "proposal_id", p.ID, "reason", stopped.reason)
	case errors.As(err, new(*retryError)) && (p.DecidedAt == nil || s.clock().Sub(*p.DecidedAt) < s.policy.OpenFor):
		// The world could not be read this time (a catalog behind, a table renamed and not
		// synced yet): nothing was deleted; the next run tries again.
		rep.Waiting++
		s.log.Warn("cleanup proposal waits: the tables around it could not be read", "proposal_id", p.ID, "err", err)
	case err != nil:
		rep.Failed++
		if uerr := s.db.Proposal.UpdateOneID(p.ID).SetState(proposal.StateFailed).SetReason(err.Error()).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx); uerr != nil {
			return uerr
		}
		s.log.Warn("cleanup proposal failed", "proposal_id", p.ID, "err", err)
	case done:
		rep.Executed++
		now := s.clock()
		if err := s.db.Proposal.UpdateOneID(p.ID).SetState(proposal.StateExecuted).SetExecutedAt(now).SetUpdatedAt(now).AddVersion(1).Exec(ctx); err != nil {
			return fmt.Errorf("update proposal %s: %w", p.ID, err)
		}
	default:
		rep.Waiting++
	}
	return nil
}

type faultError struct{ point string }

func (e *faultError) Error() string { return "injected crash at " + e.point }

func (s *Service) crash(point string) error {
	if s.fault != nil {
		if err := s.fault(point); err != nil {
			return &faultError{point: point + ": " + err.Error()}
		}
	}
	return nil
}

// stopError ends an execution that re-verified the world and found it no longer matches what
// was approved: the proposal is stopped, with the reason journaled.
type stopError struct{ reason string }

func (e *stopError) Error() string { return e.reason }

func stop(format string, args ...any) error { return &stopError{reason: fmt.Sprintf(format, args...)} }

// retryError is a failure to re-read the world before deleting: nothing was deleted, and the
// proposal is tried again on the next run, until --proposal-expiry after its approval.
type retryError struct{ err error }

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// guard re-reads the world right before a batch of deletions: the references that must be
// kept (every table overlapping the location, and any foreign tenant stops it all), and the IO
// to delete through. It returns a stopError when the approval no longer holds.
type guard func(ctx context.Context) (keep *refSet, fsys icebergio.IO, err error)

// executeOrphans deletes the proposal's pending files (exactly those listed when it was
// approved) in batches. Before each batch it re-reads every table sharing the location and
// looks for foreign tenants; each file is deleted only if no table references it, it is still
// there, the same size, and still older than the threshold the proposal states.
func (s *Service) executeOrphans(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("read the evidence of proposal %s: %w", p.ID, err)
	}
	threshold, err := time.ParseDuration(ev.AgeThreshold)
	if err != nil {
		threshold = DefaultAgeThreshold
	}
	g := func(ctx context.Context) (*refSet, icebergio.IO, error) {
		live, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return nil, nil, err
		}
		w, err := s.readWorld(ctx, p.AssetID, live.Refs.Location, live)
		if err != nil {
			return nil, nil, err
		}
		if err := s.noTenants(ctx, live.IO, live.Refs.Location, w); err != nil {
			var stopped *stopError
			if errors.As(err, &stopped) {
				// What was observed here proves nothing while a stranger lives here: the bot
				// must not propose the same files again before scans confirm them anew.
				if ferr := s.forgetObservations(ctx, p.AssetID); ferr != nil {
					return nil, nil, ferr
				}
			}
			return nil, nil, err
		}
		return w.refs, live.IO, nil
	}
	return s.deletePending(ctx, p, held, rep, progress, threshold, g)
}

// noTenants stops an execution when a table nobody told Tidemark about lives at loc.
func (s *Service) noTenants(ctx context.Context, fsys icebergio.IO, loc string, w *world) error {
	foreign, _, _, err := s.probeTenants(ctx, fsys, loc, w, nil, true)
	if err != nil {
		return err
	}
	if len(foreign) > 0 {
		return stop("another table lives in %s: %s; nothing there is deleted while it does", loc, foreignText(foreign))
	}
	return nil
}

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
		keep, fsys, err := g(ctx)
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
			out, err := s.deleteOrphan(fsys, keep, f, threshold)
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
					return false, fmt.Errorf("forget the observation of a file of proposal %s: %w", p.ID, err)
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

// deleteOrphan re-verifies and deletes one file.
func (s *Service) deleteOrphan(fsys icebergio.IO, keep *refSet, f *ent.ProposalFile, threshold time.Duration) (fileOutcome, error) {
	skipped := func(why string) (fileOutcome, error) {
		return fileOutcome{state: proposalfile.StateSkipped, detail: why}, nil
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
		return fileOutcome{}, fmt.Errorf("delete %s: %w", f.Path, err)
	}
	return fileOutcome{state: proposalfile.StateDeleted, detail: "deleted"}, nil
}

// stat looks a file up by key: a HEAD on object stores (their IO has Stat), else open and stat.
func stat(io icebergio.IO, p string) (fs.FileInfo, error) {
	if st, ok := io.(interface {
		Stat(string) (fs.FileInfo, error)
	}); ok {
		return st.Stat(p)
	}
	f, err := io.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
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
	b, _ := json.Marshal(out)
	return s.db.Proposal.UpdateOneID(p.ID).SetOutcome(string(b)).Exec(ctx)
}

// stopProposal ends an execution whose approval no longer holds, journaling why.
func (s *Service) stopProposal(ctx context.Context, p *ent.Proposal, reason string) error {
	detail, _ := json.Marshal(map[string]any{"reason": reason})
	return s.tx(ctx, func(tx *ent.Tx) error {
		// Look first: on PostgreSQL a failed insert would abort this transaction.
		found, err := tx.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID), proposalstep.Step(stepStopped)).Exist(ctx)
		if err != nil {
			return err
		}
		if !found {
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepStopped).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("record a step of proposal %s: %w", p.ID, err)
			}
		}
		if err := tx.Proposal.UpdateOneID(p.ID).SetState(proposal.StateStopped).SetReason(reason).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx); err != nil {
			return fmt.Errorf("update proposal %s: %w", p.ID, err)
		}
		return s.cat.RecordAudit(ctx, tx, "proposal.stopped", p.AssetID, nil, map[string]any{"proposal_id": p.ID, "kind": p.Kind, "reason": reason})
	})
}

// executeUnused retires an asset metadata first: it marks the asset deleted and drops the
// table from its Iceberg catalog (no purge), journals that, and only after the grace period
// deletes the files. Both steps first re-verify what was approved: the asset is still unused
// (no read under any name since the evidence window began, late arrivals included), not
// exempt, and its table is the one approved (same table-uuid and metadata location, not
// restored or re-registered). The file step deletes only what the retired table's last
// metadata referenced and its confirmed orphans, never a file another table references or one
// younger than the threshold, journaled file by file like an orphan proposal. A crash between
// the steps leaves files no metadata points to (orphans), never metadata pointing to missing
// files.
func (s *Service) executeUnused(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("read the evidence of proposal %s: %w", p.ID, err)
	}
	if ev.TableUUID == "" || ev.MetadataLocation == "" || ev.From == nil {
		return false, stop("the proposal does not record which table (table-uuid and metadata location) was approved; it was opened by an older version: let the bot propose it again")
	}
	steps, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(p.ID)).All(ctx)
	if err != nil {
		return false, err
	}
	done := map[string]*ent.ProposalStep{}
	for _, st := range steps {
		done[st.Step] = st
	}
	if done[stepMetadata] == nil {
		if err := s.verifyUnused(ctx, p, ev, false); err != nil {
			return false, err
		}
		live, err := s.tables.Open(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if got := live.Table.Metadata().TableUUID().String(); got != ev.TableUUID {
			return false, stop("the table now has table-uuid %s, not the approved %s", got, ev.TableUUID)
		}
		if live.Refs.MetadataLocation != ev.MetadataLocation {
			return false, stop("the table was written since the proposal: its metadata is now %s, not the approved %s", live.Refs.MetadataLocation, ev.MetadataLocation)
		}
		a, err := s.cat.Get(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if a.Status != catalog.StatusDeleted {
			if _, err := s.cat.Delete(ctx, p.AssetID, catalog.AnyVersion); err != nil {
				return false, err
			}
		}
		dropped, err := s.tables.Drop(ctx, p.AssetID)
		if err != nil {
			return false, err
		}
		if err := s.crash("after_metadata"); err != nil {
			return false, err
		}
		due := s.clock().Add(s.policy.Grace)
		detail, _ := json.Marshal(map[string]any{"location": dropped.Location, "metadata_location": ev.MetadataLocation, "files_due_at": due})
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepMetadata).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("record a step of proposal %s: %w", p.ID, err)
			}
			if err := tx.Proposal.UpdateOneID(p.ID).SetDueAt(due).SetUpdatedAt(s.clock()).Exec(ctx); err != nil {
				return fmt.Errorf("update proposal %s: %w", p.ID, err)
			}
			return s.cat.RecordAudit(ctx, tx, "cleanup.retire_asset", p.AssetID, nil, map[string]any{"proposal_id": p.ID,
				"approved_by": p.DecidedBy, "dropped_from_catalog": true, "location": dropped.Location, "files_due_at": due})
		})
		if err != nil {
			return false, err
		}
		p.DueAt = &due
		return false, nil // the files wait for the grace period
	}
	if p.DueAt != nil && s.clock().Before(*p.DueAt) {
		return false, nil
	}
	var meta struct {
		Location string `json:"location"`
	}
	if err := json.Unmarshal([]byte(done[stepMetadata].Detail), &meta); err != nil || meta.Location == "" {
		return false, fmt.Errorf("the journal of proposal %s lost the table location", p.ID)
	}
	if err := s.verifyUnused(ctx, p, ev, true); err != nil {
		return false, err
	}
	if done[stepPlan] == nil {
		if err := s.planRetirement(ctx, p, meta.Location); err != nil {
			return false, err
		}
	}
	g := func(ctx context.Context) (*refSet, icebergio.IO, error) {
		if err := s.verifyUnused(ctx, p, ev, true); err != nil {
			return nil, nil, err
		}
		dropped, err := s.tables.Drop(ctx, p.AssetID) // already dropped: where and how to reach it
		if err != nil {
			return nil, nil, err
		}
		fsys, err := tables.IO(ctx, meta.Location, dropped.Props)
		if err != nil {
			return nil, nil, err
		}
		w, err := s.readWorld(ctx, p.AssetID, meta.Location, nil) // every other table there
		if err != nil {
			return nil, nil, err
		}
		w.uuids[ev.TableUUID] = true // the retired table's own older metadata is not a tenant
		if err := s.noTenants(ctx, fsys, meta.Location, w); err != nil {
			return nil, nil, err
		}
		return w.refs, fsys, nil
	}
	finished, err := s.deletePending(ctx, p, held, rep, progress, s.threshold(ctx, p.AssetID), g)
	if err != nil || !finished {
		return false, err
	}
	err = s.db.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepFiles).SetDoneAt(s.clock()).SetDetail("{}").Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) {
		return false, err
	}
	return true, nil
}

// verifyUnused re-checks an unused-asset approval: still unused since the evidence window
// began, not exempt, the same table; after the metadata step, still dropped and deleted.
func (s *Service) verifyUnused(ctx context.Context, p *ent.Proposal, ev Evidence, retired bool) error {
	now := s.clock()
	if s.usage != nil {
		real, err := s.usage.Real(ctx, p.AssetID, *ev.From, now, s.downstream)
		if err != nil {
			return err
		}
		if real.Reads > 0 {
			return stop("the asset was read %d times since %s (last at %s), after the evidence was gathered: it is in use", real.Reads, ev.From.Format(time.RFC3339), real.LastRead.Format(time.RFC3339))
		}
		if real.DownstreamRead {
			return stop("%d assets downstream of it were read since %s: it is in use", len(real.ReadDownstream), ev.From.Format(time.RFC3339))
		}
	}
	if ok, err := s.exempt(ctx, p.AssetID, KindUnusedAsset); err != nil || ok {
		if err == nil {
			err = stop("the asset was exempted from cleanup after the approval")
		}
		return err
	}
	if s.migrations != nil {
		ok, _, why, err := s.migrations(ctx, p.AssetID)
		if err != nil {
			return err
		}
		if !ok {
			return stop("%s", why)
		}
	}
	t, err := s.tables.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if t.TableUUID != ev.TableUUID {
		return stop("the asset is now bound to table-uuid %s, not the approved %s", t.TableUUID, ev.TableUUID)
	}
	if !retired {
		return nil
	}
	if t.GoneAt == nil {
		return stop("the table was restored or registered again during the grace period (it is live in its catalog): its files stay")
	}
	if t.MetadataLocation != ev.MetadataLocation {
		return stop("the table's metadata is now %s, not the approved %s: it was re-registered or written during the grace period", t.MetadataLocation, ev.MetadataLocation)
	}
	a, err := s.cat.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	if a.Status != catalog.StatusDeleted {
		return stop("the asset was restored during the grace period: its files stay")
	}
	return nil
}

// threshold is the age threshold of the table's last finished scan, else the default.
// A database error falls back to the default, which is never below an override.
func (s *Service) threshold(ctx context.Context, asset uuid.UUID) time.Duration {
	last, err := s.lastFinishedScan(ctx, asset)
	if err != nil || last == nil || last.AgeThresholdSeconds <= 0 {
		return DefaultAgeThreshold
	}
	return max(time.Duration(last.AgeThresholdSeconds)*time.Second, MinAgeThreshold)
}

// lastFinishedScan is the table's newest finished scan, or nil.
func (s *Service) lastFinishedScan(ctx context.Context, asset uuid.UUID) (*ent.CleanupScan, error) {
	last, err := s.db.CleanupScan.Query().Where(cleanupscan.AssetID(asset), cleanupscan.StateEQ(cleanupscan.StateFinished)).
		Order(ent.Desc(cleanupscan.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	return last, err
}

// planRetirement journals the files the retirement may delete, metadata first: what the
// retired table's last metadata referenced and its confirmed orphans, as listed under its
// location now. Everything else there stays.
func (s *Service) planRetirement(ctx context.Context, p *ent.Proposal, loc string) error {
	live, err := s.tables.Open(ctx, p.AssetID) // a dropped table loads from its last metadata
	if err != nil {
		return fmt.Errorf("read the retired table's last metadata: %w", err)
	}
	rank := map[string]int{}
	_, err = s.tables.WalkReferences(ctx, live, func(path string, kind tables.RefKind) error {
		k, _ := normalize(path)
		r := 3
		switch kind {
		case tables.RefMetadata, tables.RefVersionHint, tables.RefStatistics:
			r = 0
		case tables.RefManifestList:
			r = 1
		case tables.RefManifest:
			r = 2
		}
		if old, ok := rank[k]; !ok || r < old {
			rank[k] = r
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the retired table's last metadata: %w", err)
	}
	obs, err := s.db.CleanupObservation.Query().Where(cleanupobservation.AssetID(p.AssetID), cleanupobservation.StreakGTE(2)).All(ctx)
	if err != nil {
		return err
	}
	for _, o := range obs {
		if _, ok := rank[o.Path]; !ok {
			rank[o.Path] = 4
		}
	}
	lister, ok := live.IO.(icebergio.ListableIO)
	if !ok {
		return fmt.Errorf("the storage of %s cannot be listed", loc)
	}
	type planned struct {
		journalFile
		rank int
	}
	var plan []planned
	inPage := 0
	err = lister.WalkDir(strings.TrimRight(loc, "/"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		// Paced like a scan's walk: a LIST a directory and one for each further page.
		if d.IsDir() {
			inPage = 0
			return s.wait(ctx, s.lists)
		}
		if inPage++; inPage > s.pageSize {
			inPage = 1
			if err := s.wait(ctx, s.lists); err != nil {
				return err
			}
		}
		k, _ := normalize(path)
		r, ok := rank[k]
		if !ok {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		plan = append(plan, planned{journalFile{path: k, size: info.Size()}, r})
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", loc, err)
	}
	slices.SortStableFunc(plan, func(a, b planned) int { return a.rank - b.rank })
	detail, _ := json.Marshal(map[string]any{"files": len(plan)})
	journal := make([]journalFile, len(plan))
	for i, f := range plan {
		journal[i] = f.journalFile
	}
	return s.tx(ctx, func(tx *ent.Tx) error {
		if err := journalFiles(ctx, tx, p.ID, journal); err != nil {
			return err
		}
		return tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepPlan).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx)
	})
}

// executeExpiry removes exactly the approved snapshots (re-checked: not current, not the head
// of a branch or tag) in one metadata commit, then journals the files only they referenced and
// deletes them like orphans: never one another snapshot or another table references.
func (s *Service) executeExpiry(ctx context.Context, p *ent.Proposal, held *lease, rep *ExecuteReport, progress func(string)) (bool, error) {
	var ev Evidence
	if err := json.Unmarshal([]byte(p.Evidence), &ev); err != nil {
		return false, fmt.Errorf("read the evidence of proposal %s: %w", p.ID, err)
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
				journal = append(journal, journalFile{path: f, size: info.Size()})
			}
		}
		detail, _ := json.Marshal(map[string]any{"snapshots_removed": removed, "metadata_location": newLoc, "files_planned": len(journal)})
		err = s.tx(ctx, func(tx *ent.Tx) error {
			if err := journalFiles(ctx, tx, p.ID, journal); err != nil {
				return err
			}
			if err := tx.ProposalStep.Create().SetProposalID(p.ID).SetStep(stepExpire).SetDoneAt(s.clock()).SetDetail(string(detail)).Exec(ctx); err != nil {
				return fmt.Errorf("record a step of proposal %s: %w", p.ID, err)
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
