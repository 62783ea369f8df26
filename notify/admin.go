package notify

// What a principal manages of its own notifications: the webhook set for it (to see, change
// and try), the deliveries made to it, and the assets it is subscribed to.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/outboxmessage"
	"github.com/tidemark/tidemark/ent/subscription"
	"github.com/tidemark/tidemark/ent/webhook"
	"github.com/tidemark/tidemark/internal/words"
)

// Webhook is where a principal's notifications go.
type Webhook struct {
	Principal string
	URL       string
	UpdatedAt time.Time
}

// Webhook returns the webhook set for principal; ok is false when none is.
func (s *Service) Webhook(ctx context.Context, principal string) (w Webhook, ok bool, err error) {
	row, err := s.db.Webhook.Query().Where(webhook.Principal(principal)).Only(ctx)
	if ent.IsNotFound(err) {
		return Webhook{}, false, nil
	}
	if err != nil {
		return Webhook{}, false, fmt.Errorf("notify: webhook of %s: %w", principal, err)
	}
	return Webhook{Principal: row.Principal, URL: row.URL, UpdatedAt: row.UpdatedAt.UTC()}, true, nil
}

// Audit actions of webhooks.
const (
	ActionWebhookSet   = "webhook.set"
	ActionWebhookClear = "webhook.clear"
)

// ChangeWebhook sets (or with an empty URL clears) principal's webhook as SetWebhook does, and
// records the change in the audit log under the actor in ctx. The log keeps the URL without
// what may be a secret in it (user info, query, fragment).
func (s *Service) ChangeWebhook(ctx context.Context, principal, rawURL string) error {
	if err := checkPrincipal(principal); err != nil {
		return err
	}
	if err := s.SetWebhook(ctx, principal, rawURL); err != nil {
		return err
	}
	action, after := ActionWebhookClear, map[string]any{"principal": principal}
	if rawURL != "" {
		action, after["url"] = ActionWebhookSet, safeURL(rawURL)
	}
	return s.cat.RecordAudit(ctx, nil, action, uuid.Nil, nil, after)
}

// safeURL is a webhook URL without its user info, query and fragment.
func safeURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "[webhook URL]"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// TestEvent is the event of a test delivery.
const TestEvent = "webhook.test"

// TestResult is how a test delivery went: the status the webhook answered, or the error that
// kept it from answering (redacted as a delivery's last error is).
type TestResult struct {
	Status int    // 0: no answer
	Error  string // empty: it answered 2xx
}

// OK says whether the webhook took the test delivery.
func (r TestResult) OK() bool { return r.Error == "" }

// TestDelivery posts a small test notification to principal's webhook now, with the client and
// address rules real deliveries have, and says how it went. It writes nothing: a test is not a
// notification to deliver again.
func (s *Service) TestDelivery(ctx context.Context, principal string) (TestResult, error) {
	w, ok, err := s.Webhook(ctx, principal)
	if err != nil {
		return TestResult{}, err
	}
	if !ok {
		return TestResult{}, &catalog.Error{Kind: catalog.ErrInvalid, Field: "url",
			Message: fmt.Sprintf("no webhook is set for %s: set one first", principal)}
	}
	body, err := json.Marshal(map[string]any{"event": TestEvent, "principal": principal, "at": s.clock(),
		"message": "A test notification from Tidemark: this webhook is reachable."})
	if err != nil {
		return TestResult{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return TestResult{Error: redact(err.Error(), w.URL)}, nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	req.Header.Set("X-Tidemark-Event", TestEvent)
	res, err := s.client.Do(req)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return TestResult{}, err
		}
		return TestResult{Error: s.deliveryError(err, w.URL)}, nil
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return TestResult{Status: res.StatusCode, Error: "the webhook answered " + res.Status}, nil
	}
	return TestResult{Status: res.StatusCode}, nil
}

// deliveryError says in words why a delivery got no answer, without the URL's secrets.
func (s *Service) deliveryError(err error, rawURL string) string {
	var ue *url.Error
	switch {
	case errors.Is(err, errPrivateAddress):
		return "its address is a loopback, private or link-local one, where Tidemark does not send (an operator can allow them with --webhook-allow-private)"
	case errors.As(err, &ue) && ue.Timeout():
		return fmt.Sprintf("it did not answer within %s", words.Duration(s.client.Timeout))
	case errors.As(err, &ue):
		err = ue.Err // the method and URL are the page's already
	}
	return redact(err.Error(), rawURL)
}

// Delivery is one outbox message to a principal and how its delivery went.
type Delivery struct {
	ID          uuid.UUID
	Event       string
	CreatedAt   time.Time
	State       string // pending, delivered, failed
	Attempts    int
	LastError   string
	DeliveredAt *time.Time
}

// Deliveries lists the newest limit (at most 200) messages to principal, newest first.
func (s *Service) Deliveries(ctx context.Context, principal string, limit int) ([]Delivery, error) {
	limit = max(1, min(limit, 200))
	rows, err := s.db.OutboxMessage.Query().Where(outboxmessage.Recipient(principal)).
		Order(ent.Desc(outboxmessage.FieldID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: deliveries to %s: %w", principal, err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		d := Delivery{ID: r.ID, Event: r.Event, CreatedAt: r.CreatedAt.UTC(), State: string(r.State), Attempts: r.Attempts, LastError: r.LastError}
		if r.DeliveredAt != nil {
			at := r.DeliveredAt.UTC()
			d.DeliveredAt = &at
		}
		out[i] = d
	}
	return out, nil
}

// Subscribed is an asset a principal is subscribed to, named as it is now.
type Subscribed struct {
	AssetID   uuid.UUID
	Namespace string
	Name      string
	Deleted   bool
	Since     time.Time
}

// SubscriptionsOf lists the assets principal is subscribed to, newest subscription first, at
// most limit (at most 1000).
func (s *Service) SubscriptionsOf(ctx context.Context, principal string, limit int) ([]Subscribed, error) {
	if err := checkPrincipal(principal); err != nil {
		return nil, err
	}
	limit = max(1, min(limit, 1000))
	rows, err := s.db.Subscription.Query().Where(subscription.Principal(principal)).
		Order(ent.Desc(subscription.FieldCreatedAt), ent.Asc(subscription.FieldAssetID)).Limit(limit).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: subscriptions of %s: %w", principal, err)
	}
	ids := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		ids[i] = r.AssetID
	}
	assets, err := s.cat.GetMany(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]catalog.Asset, len(assets))
	for _, a := range assets {
		byID[a.ID] = a
	}
	out := make([]Subscribed, 0, len(rows))
	for _, r := range rows {
		a, ok := byID[r.AssetID]
		if !ok {
			continue // the asset is gone for good; its subscription with it
		}
		out = append(out, Subscribed{AssetID: a.ID, Namespace: a.Namespace, Name: a.Name, Deleted: a.DeletedAt != nil, Since: r.CreatedAt.UTC()})
	}
	return out, nil
}
