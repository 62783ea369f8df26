package cleanup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalstep"
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
		return rep, fmt.Errorf("cleanup: read the proposals to execute: %w", err)
	}
	for _, p := range ps {
		// An approved proposal waits its stop window (a person may still cancel it), an
		// executing one its grace period.
		if p.DueAt != nil && s.clock().Before(*p.DueAt) {
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
	id := p.ID
	if p, err = s.db.Proposal.Get(ctx, id); err != nil {
		return fmt.Errorf("cleanup: read proposal %s: %w", id, err) // p is nil now
	}
	if p.State != proposal.StateApproved && p.State != proposal.StateExecuting {
		return nil // cancelled, or finished by another worker
	}
	if p.DueAt != nil && s.clock().Before(*p.DueAt) {
		rep.Waiting++
		return nil
	}
	rep.Proposals++
	if progress != nil {
		progress(fmt.Sprintf("executing %s proposal %s", p.Kind, p.ID))
	}
	ctx = catalog.WithActor(ctx, BotActor+" for "+p.DecidedBy)
	if p.State == proposal.StateApproved {
		// Under the version read: a cancellation since then wins, and nothing runs.
		n, err := s.db.Proposal.Update().Where(proposal.ID(p.ID), proposal.Version(p.Version), proposal.StateEQ(proposal.StateApproved)).
			SetState(proposal.StateExecuting).ClearDueAt().SetUpdatedAt(s.clock()).AddVersion(1).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil // changed meanwhile
		}
		p.State, p.Version, p.DueAt = proposal.StateExecuting, p.Version+1, nil
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
	case proposal.KindPurge:
		done, err = s.executePurge(lctx, p, held, rep, progress)
	default:
		err = fmt.Errorf("cleanup: %s proposals are never executed", p.Kind)
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
			return fmt.Errorf("cleanup: update proposal %s: %w", p.ID, err)
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
				return fmt.Errorf("cleanup: record a step of proposal %s: %w", p.ID, err)
			}
		}
		if err := tx.Proposal.UpdateOneID(p.ID).SetState(proposal.StateStopped).SetReason(reason).SetUpdatedAt(s.clock()).AddVersion(1).Exec(ctx); err != nil {
			return fmt.Errorf("cleanup: update proposal %s: %w", p.ID, err)
		}
		return s.cat.RecordAudit(ctx, tx, "proposal.stopped", p.AssetID, nil, map[string]any{"proposal_id": p.ID, "kind": p.Kind, "reason": reason})
	})
}
