package cleanup

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/outboxmessage"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/ent/proposalfile"
	"github.com/tidemark/tidemark/ent/proposalstep"
)

// Proposal is a proposal as the API and UI show it.
type Proposal struct {
	ID         uuid.UUID       `json:"id"`
	Kind       string          `json:"kind"`
	AssetID    uuid.UUID       `json:"asset_id"`
	State      string          `json:"state"`
	Severity   string          `json:"severity"`
	Executable bool            `json:"executable"`
	Evidence   Evidence        `json:"evidence"`
	Reason     string          `json:"reason,omitempty"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	ExecutedAt *time.Time      `json:"executed_at,omitempty"`
	DueAt      *time.Time      `json:"due_at,omitempty"`
	Outcome    json.RawMessage `json:"outcome,omitempty"`
	Version    int64           `json:"version"`
	Files      map[string]int  `json:"files,omitempty"` // file journal: count by state
	// FileCount and FileBytes total the proposal's file list (what approving a proposal that
	// ConfirmsFiles must confirm).
	FileCount     int64      `json:"file_count,omitempty"`
	FileBytes     int64      `json:"file_bytes,omitempty"`
	Steps         []Step     `json:"steps,omitempty"`
	Notifications []Delivery `json:"notifications,omitempty"`
}

// Step is a journaled execution step.
type Step struct {
	Step   string          `json:"step"`
	DoneAt time.Time       `json:"done_at"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Delivery is a notification's delivery state.
type Delivery struct {
	ID          uuid.UUID  `json:"id"`
	Event       string     `json:"event"`
	Recipient   string     `json:"recipient"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"last_error,omitempty"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// ProposalFilter selects proposals, newest first.
type ProposalFilter struct {
	State, Kind string
	AssetID     uuid.UUID
	Before      uuid.UUID
	Limit       int
}

// Proposals lists proposals (without their journals).
func (s *Service) Proposals(ctx context.Context, f ProposalFilter) ([]Proposal, error) {
	q := s.db.Proposal.Query().Order(ent.Desc(proposal.FieldID)).Limit(f.Limit)
	if f.State != "" {
		if err := proposal.StateValidator(proposal.State(f.State)); err != nil {
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "state", Message: fmt.Sprintf("state %q is not one of open, approved, executing, executed, failed, stopped, rejected, withdrawn, expired, cancelled", f.State)}
		}
		q.Where(proposal.StateEQ(proposal.State(f.State)))
	}
	if f.Kind != "" {
		if err := proposal.KindValidator(proposal.Kind(f.Kind)); err != nil {
			return nil, &catalog.Error{Kind: catalog.ErrInvalid, Field: "kind", Message: fmt.Sprintf("kind %q is not one of orphan_files, unused_asset, expire_snapshots, purge, dangling_reference, shared_location", f.Kind)}
		}
		q.Where(proposal.KindEQ(proposal.Kind(f.Kind)))
	}
	if f.AssetID != uuid.Nil {
		q.Where(proposal.AssetID(f.AssetID))
	}
	if f.Before != uuid.Nil {
		q.Where(proposal.IDLT(f.Before))
	}
	rows, err := q.All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Proposal, 0, len(rows))
	for _, r := range rows {
		p, err := toProposal(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// GetProposal returns a proposal with its file journal counts, steps and notifications.
func (s *Service) GetProposal(ctx context.Context, id uuid.UUID) (Proposal, error) {
	r, err := s.row(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	p, err := toProposal(r)
	if err != nil {
		return p, err
	}
	files, err := s.db.ProposalFile.Query().Where(proposalfile.ProposalID(id)).All(ctx)
	if err != nil {
		return p, err
	}
	if len(files) > 0 {
		p.Files = map[string]int{}
		for _, f := range files {
			p.Files[string(f.State)]++
			p.FileCount++
			p.FileBytes += f.Size
		}
	}
	steps, err := s.db.ProposalStep.Query().Where(proposalstep.ProposalID(id)).Order(ent.Asc(proposalstep.FieldID)).All(ctx)
	if err != nil {
		return p, err
	}
	for _, st := range steps {
		p.Steps = append(p.Steps, Step{Step: st.Step, DoneAt: st.DoneAt, Detail: json.RawMessage(st.Detail)})
	}
	msgs, err := s.db.OutboxMessage.Query().Where(outboxmessage.ProposalID(id)).Order(ent.Asc(outboxmessage.FieldID)).All(ctx)
	if err != nil {
		return p, err
	}
	for _, m := range msgs {
		p.Notifications = append(p.Notifications, Delivery{ID: m.ID, Event: m.Event, Recipient: m.Recipient, State: string(m.State),
			Attempts: m.Attempts, LastError: m.LastError, DeliveredAt: m.DeliveredAt})
	}
	return p, nil
}

func (s *Service) row(ctx context.Context, id uuid.UUID) (*ent.Proposal, error) {
	r, err := s.db.Proposal.Get(ctx, id)
	if ent.IsNotFound(err) {
		return nil, &catalog.Error{Kind: catalog.ErrNotFound, Message: fmt.Sprintf("no proposal %s", id)}
	}
	return r, err
}

func toProposal(r *ent.Proposal) (Proposal, error) {
	p := Proposal{ID: r.ID, Kind: string(r.Kind), AssetID: r.AssetID, State: string(r.State), Severity: string(r.Severity),
		Executable: r.Kind != proposal.KindDanglingReference && r.Kind != proposal.KindSharedLocation, Reason: r.Reason, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ExecutedAt: r.ExecutedAt, DueAt: r.DueAt, Version: r.Version}
	if r.Outcome != "" {
		p.Outcome = json.RawMessage(r.Outcome)
	}
	if err := json.Unmarshal([]byte(r.Evidence), &p.Evidence); err != nil {
		return p, fmt.Errorf("cleanup: proposal %s: evidence: %w", r.ID, err)
	}
	return p, nil
}

// Approve records a person's approval of an open proposal. The approver is the actor on ctx
// (the API token's name); the bot may never approve, and a dangling-reference proposal cannot
// be executed, so it cannot be approved either. It checks no confirmation: the API and the UI
// approve through ApproveConfirmed. The approval waits the stop window before execution.
func (s *Service) Approve(ctx context.Context, id uuid.UUID, note string) (Proposal, error) {
	return s.decide(ctx, id, proposal.StateApproved, note)
}

// Reject records a person's rejection of an open proposal, with the reason (required).
func (s *Service) Reject(ctx context.Context, id uuid.UUID, reason string) (Proposal, error) {
	if strings.TrimSpace(reason) == "" {
		return Proposal{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "reason", Message: "a rejection needs a reason: say why, so the bot's owners can tune it"}
	}
	return s.decide(ctx, id, proposal.StateRejected, reason)
}

func (s *Service) decide(ctx context.Context, id uuid.UUID, to proposal.State, reason string) (Proposal, error) {
	actor := catalog.ActorFrom(ctx)
	if actor == "" || actor == "system" || actor == BotActor || actor == "anonymous" {
		return Proposal{}, &catalog.Error{Kind: catalog.ErrInvalid, Message: "a decision needs a person: sign in with an API token that has the admin scope"}
	}
	r, err := s.row(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	if r.State != proposal.StateOpen {
		return Proposal{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("proposal %s is %s, not open: it can no longer be decided", id, r.State)}
	}
	if to == proposal.StateApproved && (r.Kind == proposal.KindDanglingReference || r.Kind == proposal.KindSharedLocation) {
		return Proposal{}, &catalog.Error{Kind: catalog.ErrConflict, Message: fmt.Sprintf("a %s proposal is never executed by Tidemark: apply one of its remedies, then scan again (the bot withdraws it)", r.Kind)}
	}
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		u := tx.Proposal.Update().Where(proposal.ID(id), proposal.Version(r.Version), proposal.StateEQ(proposal.StateOpen)).
			SetState(to).SetDecidedBy(actor).SetDecidedAt(now).SetReason(reason).SetUpdatedAt(now).AddVersion(1)
		if w := s.StopWindow(); to == proposal.StateApproved && w > 0 {
			u.SetDueAt(now.Add(w)) // the executor leaves it alone until then; a person may cancel it
		}
		n, err := u.Save(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			return errConcurrent
		}
		action := "proposal.approve"
		if to == proposal.StateRejected {
			action = "proposal.reject"
		}
		return s.cat.RecordAudit(ctx, tx, action, r.AssetID, map[string]any{"state": r.State},
			map[string]any{"proposal_id": id, "kind": r.Kind, "state": to, "by": actor, "reason": reason})
	})
	if err != nil {
		return Proposal{}, err
	}
	return s.GetProposal(ctx, id)
}
