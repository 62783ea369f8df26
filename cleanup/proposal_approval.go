package cleanup

// Approvals a person can trust: the approval names what it deletes, waits a stop window in which
// a person can still cancel it, and only then is executed.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
)

// DefaultStopWindow is how long `serve` holds an approved proposal before executing it: long
// enough to notice a wrong click and cancel, short enough that an approval still means "now".
const DefaultStopWindow = 5 * time.Minute

// WithStopWindow holds every approved proposal for d before the executor may start it; until
// then a person can cancel it. Without it (or with 0) an approval may run at once, as the tests
// of the executor need; `serve` sets --cleanup-stop-window (DefaultStopWindow).
func WithStopWindow(d time.Duration) Option {
	return func(s *Service) { s.stopWindow = max(d, 0) }
}

// StopWindow is how long an approval waits before execution.
func (s *Service) StopWindow() time.Duration { return s.stopWindow }

// Approval is a person's approval with what they confirmed having seen.
type Approval struct {
	Note string
	// Files and Bytes are the count and total size of the files the person was shown. A
	// proposal whose file list is what it deletes (orphan_files, purge, and expire_snapshots that
	// list their files) is approved only when both are given and match its list exactly.
	Files, Bytes *int64
}

// ApproveConfirmed approves an open proposal as Approve does, after checking the confirmation:
// for a proposal that lists the files it deletes (ConfirmsFiles) the approver must name its
// exact file count and bytes. The approved proposal waits the stop window (its due_at) before
// the executor may start it.
func (s *Service) ApproveConfirmed(ctx context.Context, id uuid.UUID, a Approval) (Proposal, error) {
	r, err := s.row(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	p, err := toProposal(r)
	if err != nil {
		return Proposal{}, err
	}
	if p.ConfirmsFiles() {
		files, bytes, err := s.fileTotals(ctx, id)
		if err != nil {
			return Proposal{}, err
		}
		want := fmt.Sprintf("confirm_files %d and confirm_bytes %d", files, bytes)
		switch {
		case a.Files == nil || a.Bytes == nil:
			return Proposal{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "confirm_files", Message: fmt.Sprintf(
				"approving deletes %d files (%s): review the file list, then approve with %s", files, BytesText(bytes), want)}
		case *a.Files != files || *a.Bytes != bytes:
			return Proposal{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "confirm_files", Message: fmt.Sprintf(
				"you confirmed %d files and %d bytes, but the proposal deletes %d files (%d bytes): review the file list again, then approve with %s",
				*a.Files, *a.Bytes, files, bytes, want)}
		}
	}
	return s.decide(ctx, id, proposal.StateApproved, a.Note)
}

// ConfirmsFiles says whether approving the proposal needs its file count and bytes confirmed:
// its file list is exactly what it deletes (orphan_files, purge, and expire_snapshots that list
// their files; an expiry opened before lists existed finds its files at execution).
func (p Proposal) ConfirmsFiles() bool {
	return p.Kind == KindOrphanFiles || p.Kind == KindPurge || (p.Kind == KindExpireSnapshots && p.Evidence.FileList)
}

// fileTotals counts a proposal's listed files and their bytes.
func (s *Service) fileTotals(ctx context.Context, id uuid.UUID) (files, bytes int64, err error) {
	q := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(id))
	n, err := q.Clone().Count(ctx)
	if err != nil || n == 0 {
		return 0, 0, err
	}
	sum, err := q.Aggregate(ent.Sum(proposalfile.FieldSize)).Int(ctx)
	return int64(n), int64(sum), err
}

// Cancel takes back an approval before its execution starts (within the stop window, or later
// while the executor has not picked it up yet). Nothing of it is executed; the proposal is
// closed as cancelled. If its evidence still holds the bot proposes it again, as a new open
// proposal that needs a new approval (reject that one to keep it quiet).
func (s *Service) Cancel(ctx context.Context, id uuid.UUID, reason string) (Proposal, error) {
	actor := catalog.ActorFrom(ctx)
	if actor == "" || actor == "system" || actor == BotActor || actor == "anonymous" {
		return Proposal{}, &catalog.Error{Kind: catalog.ErrInvalid, Message: "a cancellation needs a person: sign in with an API token that has the admin scope"}
	}
	r, err := s.row(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	switch r.State {
	case proposal.StateApproved:
	case proposal.StateExecuting, proposal.StateExecuted, proposal.StateFailed, proposal.StateStopped:
		return Proposal{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is %s: its execution has started, so it can no longer be cancelled", id, r.State)}
	case proposal.StateOpen:
		return Proposal{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is open, not approved: reject it instead (with a reason)", id)}
	default:
		return Proposal{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is %s: there is nothing to cancel", id, r.State)}
	}
	reason = strings.TrimSpace(reason)
	why := "cancelled by " + actor + " before execution"
	if reason != "" {
		why += ": " + reason
	}
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		// The executor moves approved to executing under the same version check, so exactly one
		// of the two wins.
		n, err := tx.Proposal.Update().Where(proposal.ID(id), proposal.Version(r.Version), proposal.StateEQ(proposal.StateApproved)).
			SetState(proposal.StateCancelled).SetReason(why).SetUpdatedAt(now).AddVersion(1).Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s changed meanwhile (its execution may have started): read it again", id)}
		}
		return s.cat.RecordAudit(ctx, tx, "proposal.cancel", r.AssetID, map[string]any{"state": r.State},
			map[string]any{"proposal_id": id, "kind": r.Kind, "state": proposal.StateCancelled, "by": actor, "reason": reason})
	})
	if err != nil {
		return Proposal{}, err
	}
	return s.GetProposal(ctx, id)
}

// ProposalFile is one file of a proposal's list and its journal entry: what the approval covers
// (path, size, modification time) and, once executed, what happened to it and when.
type ProposalFile struct {
	ID         uuid.UUID  `json:"id"`
	Path       string     `json:"path"`
	Size       int64      `json:"size"`
	ModifiedAt *time.Time `json:"modified_at,omitempty"`
	State      string     `json:"state"` // pending, deleted, gone, skipped
	Detail     string     `json:"detail,omitempty"`
	DoneAt     *time.Time `json:"done_at,omitempty"`
}

// FileFilter pages through a proposal's files in journal order.
type FileFilter struct {
	After uuid.UUID // a cursor: files after this one
	State string    // pending, deleted, gone or skipped; empty for all
	Limit int
}

// ProposalFiles lists a proposal's files (the exact list an orphan_files or expire_snapshots
// approval covers, or the files an executing retirement, or an expiry opened before lists
// existed, planned), with their journal outcome.
func (s *Service) ProposalFiles(ctx context.Context, id uuid.UUID, f FileFilter) ([]ProposalFile, error) {
	p, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	q := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(id)).Order(ent.Asc(proposalfile.FieldID))
	if f.Limit > 0 {
		q.Limit(f.Limit)
	}
	if f.After != uuid.Nil {
		q.Where(proposalfile.IDGT(f.After))
	}
	if f.State != "" {
		if err := proposalfile.StateValidator(proposalfile.State(f.State)); err != nil {
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "state", Message: fmt.Sprintf("state %q is not one of pending, deleted, gone, skipped", f.State)}
		}
		q.Where(proposalfile.StateEQ(proposalfile.State(f.State)))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, err
	}
	// A proposal closed without execution left its journal pending: those files will never be
	// deleted by it, and say so.
	closed := map[proposal.State]string{proposal.StateCancelled: "approval cancelled", proposal.StateRejected: "rejected",
		proposal.StateWithdrawn: "withdrawn", proposal.StateExpired: "expired undecided"}[p.State]
	out := make([]ProposalFile, len(rows))
	for i, r := range rows {
		out[i] = ProposalFile{ID: r.ID, Path: r.Path, Size: r.Size, ModifiedAt: r.ModifiedAt, State: string(r.State), Detail: r.Detail, DoneAt: r.DoneAt}
		if closed != "" && r.State == proposalfile.StatePending {
			out[i].State, out[i].Detail = FileNotDeleted, "not deleted ("+closed+")"
		}
	}
	return out, nil
}

// FileNotDeleted is the state of a file of a proposal closed without execution (rejected,
// withdrawn, expired, its approval cancelled): its journal stayed pending, and it never will be.
const FileNotDeleted = "not_deleted"
