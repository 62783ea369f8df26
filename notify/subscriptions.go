package notify

// Subscriptions: a principal asks to hear of every change to an asset, through the webhook it
// set for its notifications. They live here, not in catalog, because the outbox and the
// webhooks do: catalog sits below notify and cannot write outbox messages, while notify may
// read catalog's audit log. The notifier (notifier.go) turns audit events into outbox messages.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/auditevent"
	"github.com/tidemark/tidemark/ent/notifycursor"
	"github.com/tidemark/tidemark/ent/subscription"
	"github.com/tidemark/tidemark/ent/webhook"
)

// Subscription is one principal subscribed to one asset.
type Subscription struct {
	AssetID   uuid.UUID
	Principal string
	CreatedAt time.Time
	// HasWebhook says whether the principal has somewhere to be told (PUT
	// /api/v1/webhooks/{principal}); without one, changes are not sent, nor kept for later.
	HasWebhook bool
}

// notifyCursorID names the notifier's cursor over the audit log.
const notifyCursorID = "subscriptions"

func checkPrincipal(principal string) error {
	switch {
	case strings.TrimSpace(principal) == "":
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "principal", Message: "principal is empty: name who subscribes"}
	case principal != strings.TrimSpace(principal):
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "principal", Message: "principal has spaces at its start or end; remove them"}
	case len(principal) > catalog.MaxPrincipalBytes:
		return &catalog.Error{Kind: catalog.ErrInvalid, Field: "principal", Message: fmt.Sprintf(
			"principal is %d bytes long; the limit is %d", len(principal), catalog.MaxPrincipalBytes)}
	}
	return nil
}

// Subscribe subscribes principal to the asset's changes from now on; subscribing again changes
// nothing. created says whether this call made the subscription.
func (s *Service) Subscribe(ctx context.Context, assetID uuid.UUID, principal string) (sub Subscription, created bool, err error) {
	if err := checkPrincipal(principal); err != nil {
		return Subscription{}, false, err
	}
	if _, err := s.cat.Get(ctx, assetID); err != nil {
		return Subscription{}, false, err
	}
	// The cursor first, at the end of the log: the first subscription ever does not replay the
	// history before it.
	if err := s.startCursor(ctx); err != nil {
		return Subscription{}, false, err
	}
	err = s.db.Subscription.Create().SetAssetID(assetID).SetPrincipal(principal).SetCreatedAt(s.clock()).Exec(ctx)
	created = err == nil
	if err != nil && !ent.IsConstraintError(err) { // a constraint error: already subscribed
		return Subscription{}, false, fmt.Errorf("notify: subscribe %s to %s: %w", principal, assetID, err)
	}
	subs, err := s.subscriptions(ctx, assetID, principal)
	if err != nil {
		return Subscription{}, false, err
	}
	if len(subs) == 0 {
		return Subscription{}, false, fmt.Errorf("notify: the subscription of %s to %s is not there after it was written", principal, assetID)
	}
	return subs[0], created, nil
}

// startCursor creates the notifier's cursor at the newest audit event, unless it exists.
func (s *Service) startCursor(ctx context.Context) error {
	n, err := s.db.NotifyCursor.Query().Where(notifycursor.ID(notifyCursorID)).Count(ctx)
	if err != nil || n > 0 {
		return err
	}
	after := uuid.Nil
	last, err := s.db.AuditEvent.Query().Order(ent.Desc(auditevent.FieldID)).First(ctx)
	switch {
	case err == nil:
		after = last.ID
	case !ent.IsNotFound(err):
		return fmt.Errorf("notify: start the notification cursor: %w", err)
	}
	err = s.db.NotifyCursor.Create().SetID(notifyCursorID).SetAfter(after).SetUpdatedAt(s.clock()).Exec(ctx)
	if err != nil && !ent.IsConstraintError(err) { // a constraint error: another call started it
		return fmt.Errorf("notify: start the notification cursor: %w", err)
	}
	return nil
}

// Unsubscribe ends principal's subscription to the asset; removed is false when there was none.
func (s *Service) Unsubscribe(ctx context.Context, assetID uuid.UUID, principal string) (removed bool, err error) {
	if err := checkPrincipal(principal); err != nil {
		return false, err
	}
	if _, err := s.cat.Get(ctx, assetID); err != nil {
		return false, err
	}
	n, err := s.db.Subscription.Delete().Where(subscription.AssetID(assetID), subscription.Principal(principal)).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("notify: unsubscribe %s from %s: %w", principal, assetID, err)
	}
	return n > 0, nil
}

// Subscriptions lists who is subscribed to the asset, by principal.
func (s *Service) Subscriptions(ctx context.Context, assetID uuid.UUID) ([]Subscription, error) {
	if _, err := s.cat.Get(ctx, assetID); err != nil {
		return nil, err
	}
	return s.subscriptions(ctx, assetID, "")
}

// subscriptions reads the asset's subscriptions (only principal's, unless empty).
func (s *Service) subscriptions(ctx context.Context, assetID uuid.UUID, principal string) ([]Subscription, error) {
	q := s.db.Subscription.Query().Where(subscription.AssetID(assetID))
	if principal != "" {
		q = q.Where(subscription.Principal(principal))
	}
	rows, err := q.Order(ent.Asc(subscription.FieldPrincipal)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: subscriptions of %s: %w", assetID, err)
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Principal
	}
	hooks, err := s.db.Webhook.Query().Where(webhook.PrincipalIn(names...)).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: webhooks of the subscribers of %s: %w", assetID, err)
	}
	has := map[string]bool{}
	for _, h := range hooks {
		has[h.Principal] = true
	}
	out := make([]Subscription, len(rows))
	for i, r := range rows {
		out[i] = Subscription{AssetID: r.AssetID, Principal: r.Principal, CreatedAt: r.CreatedAt.UTC(), HasWebhook: has[r.Principal]}
	}
	return out, nil
}

// HasWebhook says whether principal has a webhook set.
func (s *Service) HasWebhook(ctx context.Context, principal string) (bool, error) {
	n, err := s.db.Webhook.Query().Where(webhook.Principal(principal)).Count(ctx)
	if err != nil {
		return false, fmt.Errorf("notify: webhook of %s: %w", principal, err)
	}
	return n > 0, nil
}
