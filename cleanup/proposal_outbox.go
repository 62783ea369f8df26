package cleanup

// A proposal's message to its asset's owners: written to the transactional outbox in the
// transaction that opens or withdraws the proposal, so it is sent exactly when the change is
// kept. Delivering it (webhooks, retries) is notify's; cleanup only enqueues.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/webhook"
)

// Notification is what an owner's webhook receives. ID is also sent as the Idempotency-Key
// header: a receiver that sees it twice (delivery is at least once) drops the repeat.
type Notification struct {
	ID        uuid.UUID       `json:"id"`
	Event     string          `json:"event"` // proposal.opened, proposal.withdrawn
	Recipient string          `json:"recipient"`
	At        time.Time       `json:"at"`
	Proposal  ProposalSummary `json:"proposal"`
}

// ProposalSummary is the part of a proposal a notification carries.
type ProposalSummary struct {
	ID      uuid.UUID `json:"id"`
	Kind    string    `json:"kind"`
	AssetID uuid.UUID `json:"asset_id"`
	State   string    `json:"state"`
	Reason  string    `json:"reason,omitempty"`
	Summary string    `json:"summary"`
}

// notify writes one outbox message per owner of the proposal's asset who has a webhook, in the
// caller's transaction.
func (s *Service) notify(ctx context.Context, tx *ent.Tx, p *ent.Proposal, event string) error {
	a, err := s.cat.Get(ctx, p.AssetID)
	if err != nil {
		return err
	}
	var ev Evidence
	_ = json.Unmarshal([]byte(p.Evidence), &ev)
	now := s.clock()
	for _, o := range a.Owners {
		hook, err := tx.Webhook.Query().Where(webhook.Principal(o.Principal)).Only(ctx)
		if ent.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		id := uuid.Must(uuid.NewV7())
		n := Notification{ID: id, Event: event, Recipient: o.Principal, At: now, Proposal: ProposalSummary{ID: p.ID, Kind: string(p.Kind),
			AssetID: p.AssetID, State: string(p.State), Reason: p.Reason, Summary: ev.Summary}}
		body, err := json.Marshal(n)
		if err != nil {
			return err
		}
		if err := tx.OutboxMessage.Create().SetID(id).SetEvent(event).SetProposalID(p.ID).SetRecipient(o.Principal).SetURL(hook.URL).
			SetPayload(string(body)).SetNextAttemptAt(now).SetCreatedAt(now).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}
