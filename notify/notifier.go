package notify

// The notifier: reads catalog's audit log from a stored cursor and writes one outbox message per
// change to a subscribed asset and subscriber with a webhook. The messages and the cursor's move
// commit together, so a crash loses no change and a retry writes none twice (the message ID is
// derived from the audit event and the principal as well).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/auditevent"
	"github.com/tidemark/tidemark/ent/notifycursor"
	"github.com/tidemark/tidemark/ent/subscription"
	"github.com/tidemark/tidemark/ent/webhook"
	"github.com/tidemark/tidemark/internal/clip"
	"github.com/tidemark/tidemark/internal/loop"
)

// EventAssetChanged is the event of a subscriber's notification.
const EventAssetChanged = "asset.changed"

// Settle is how old an audit event must be before the notifier reads it. Audit event IDs
// are taken inside their transaction, so one can commit after a later one: the cursor must not
// pass it first. 30 s is longer than any catalog transaction we run; an event whose transaction
// took longer than that to commit can be passed over.
const Settle = 30 * time.Second

// notifyBatch is how many audit events one transaction reads.
const notifyBatch = 200

// notifyActions are the changes subscribers hear of (asset.update covers description and
// deprecation).
var notifyActions = []string{catalog.ActionRename, catalog.ActionUpdate, catalog.ActionDelete, catalog.ActionRestore,
	catalog.ActionOwnerSet, catalog.ActionOwnerRemove, catalog.ActionSchemaChange, catalog.ActionColumnDescribe,
	catalog.ActionLabelAdd, catalog.ActionLabelRemove}

// AssetNotification is what a subscriber's webhook receives. ID is also the Idempotency-Key
// header, and the same for the same change and subscriber however often it is written.
type AssetNotification struct {
	ID        uuid.UUID   `json:"id"`
	Event     string      `json:"event"` // asset.changed
	Recipient string      `json:"recipient"`
	At        time.Time   `json:"at"` // when the notification was written
	Asset     AssetRef    `json:"asset"`
	Change    AssetChange `json:"change"`
}

// AssetRef names the asset a notification is about, as it is when the notification is written.
type AssetRef struct {
	ID        uuid.UUID `json:"id"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Status    string    `json:"status"`
}

// AssetChange is the audit event a notification announces.
type AssetChange struct {
	AuditEventID uuid.UUID             `json:"audit_event_id"`
	Action       string                `json:"action"`
	Actor        string                `json:"actor"`
	At           time.Time             `json:"at"`
	Summary      string                `json:"summary"`
	Fields       []catalog.AuditChange `json:"fields,omitempty"`
}

// Report says what one Notify call read and wrote.
type Report struct {
	Events   int // audit events read
	Messages int // outbox messages written
}

// Notify reads the audit events past the cursor (at least Settle old) and writes the
// subscribers' outbox messages; the dispatcher delivers them.
func (s *Service) Notify(ctx context.Context) (Report, error) {
	var rep Report
	for {
		n, m, more, err := s.notifyBatch(ctx)
		rep.Events += n
		rep.Messages += m
		if err != nil || !more {
			return rep, err
		}
	}
}

func (s *Service) notifyBatch(ctx context.Context) (events, messages int, more bool, err error) {
	now := s.clock()
	err = s.tx(ctx, func(tx *ent.Tx) error {
		q := tx.NotifyCursor.Query().Where(notifycursor.ID(notifyCursorID))
		if !s.sqlite { // one notifier at a time across replicas
			q = q.ForUpdate()
		}
		cur, err := q.Only(ctx)
		if ent.IsNotFound(err) {
			return nil // nobody ever subscribed
		}
		if err != nil {
			return err
		}
		rows, err := tx.AuditEvent.Query().Where(auditevent.IDGT(cur.After)).Order(ent.Asc(auditevent.FieldID)).Limit(notifyBatch).All(ctx)
		if err != nil || len(rows) == 0 {
			return err
		}
		// Stop at the first event too recent to read: one before it may not have committed yet.
		settled := slices.IndexFunc(rows, func(r *ent.AuditEvent) bool { return r.At.After(now.Add(-Settle)) })
		more = settled < 0 && len(rows) == notifyBatch
		if settled >= 0 {
			rows = rows[:settled]
		}
		if len(rows) == 0 {
			return nil
		}
		events = len(rows)
		if messages, err = s.notifyEvents(ctx, tx, rows, now); err != nil {
			return err
		}
		return tx.NotifyCursor.UpdateOne(cur).SetAfter(rows[len(rows)-1].ID).SetUpdatedAt(now).Exec(ctx)
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("notify: write subscribers' notifications: %w", err)
	}
	return events, messages, more, nil
}

// notifyEvents writes the messages for rows in tx: per event, one to each subscriber of its
// asset who subscribed before it and has a webhook.
func (s *Service) notifyEvents(ctx context.Context, tx *ent.Tx, rows []*ent.AuditEvent, now time.Time) (int, error) {
	var ids []uuid.UUID
	for _, r := range rows {
		if r.AssetID != nil && slices.Contains(notifyActions, r.Action) {
			ids = append(ids, *r.AssetID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	subs, err := tx.Subscription.Query().Where(subscription.AssetIDIn(ids...)).Order(ent.Asc(subscription.FieldPrincipal)).All(ctx)
	if err != nil || len(subs) == 0 {
		return 0, err
	}
	var principals []string
	for _, sub := range subs {
		principals = append(principals, sub.Principal)
	}
	hooks, err := tx.Webhook.Query().Where(webhook.PrincipalIn(principals...)).All(ctx)
	if err != nil {
		return 0, err
	}
	urls := map[string]string{}
	for _, h := range hooks {
		urls[h.Principal] = h.URL
	}
	refs := map[uuid.UUID]AssetRef{}
	for _, sub := range subs {
		if _, ok := refs[sub.AssetID]; ok {
			continue
		}
		a, err := s.cat.Get(ent.NewTxContext(ctx, tx), sub.AssetID) // in tx; the asset as it is now
		if err != nil {
			return 0, err
		}
		refs[a.ID] = AssetRef{ID: a.ID, Namespace: a.Namespace, Name: a.Name, Status: string(a.Status)}
	}
	n := 0
	for _, r := range rows {
		if r.AssetID == nil || !slices.Contains(notifyActions, r.Action) {
			continue
		}
		for _, sub := range subs {
			url, ok := urls[sub.Principal]
			if sub.AssetID != *r.AssetID || sub.CreatedAt.After(r.At) || !ok {
				continue
			}
			if err := s.writeAssetNotification(ctx, tx, r, refs[*r.AssetID], sub.Principal, url, now); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

func (s *Service) writeAssetNotification(ctx context.Context, tx *ent.Tx, r *ent.AuditEvent, ref AssetRef, principal, url string, now time.Time) error {
	ev := catalog.AuditEvent{ID: r.ID, At: r.At.UTC(), Actor: r.Actor, Action: r.Action, AssetID: r.AssetID, Before: r.Before, After: r.After}
	fields := slices.DeleteFunc(ev.Changes(), func(c catalog.AuditChange) bool {
		return c.Field == "version" || c.Field == "updated_at" // every change moves them
	})
	id := notificationID(r.ID, principal)
	n := AssetNotification{ID: id, Event: EventAssetChanged, Recipient: principal, At: now, Asset: ref,
		Change: AssetChange{AuditEventID: r.ID, Action: r.Action, Actor: r.Actor, At: r.At.UTC(), Summary: changeSummary(r.Action, fields), Fields: fields}}
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return tx.OutboxMessage.Create().SetID(id).SetEvent(EventAssetChanged).SetRecipient(principal).SetURL(url).
		SetPayload(string(body)).SetNextAttemptAt(now).SetCreatedAt(now).Exec(ctx)
}

// notificationID is the same for the same audit event and principal: its first 8 bytes are the
// event's (a UUIDv7's time, so messages sort by the change's time), the rest a hash of both.
func notificationID(event uuid.UUID, principal string) uuid.UUID {
	h := sha256.Sum256(append(event[:], principal...))
	var id uuid.UUID
	copy(id[:8], event[:8])
	copy(id[8:], h[:8])
	id[8] = id[8]&0x3f | 0x80 // the RFC 9562 variant
	return id
}

// changeSummary says a change in one line: "renamed db.a -> db.b", "updated status: active ->
// deprecated".
func changeSummary(action string, fields []catalog.AuditChange) string {
	get := func(field string) (before, after string) {
		for _, f := range fields {
			if f.Field == field {
				return f.Before, f.After
			}
		}
		return "", ""
	}
	if action == catalog.ActionRename {
		nb, na := get("name")
		sb, sa := get("namespace")
		if sb == "" && sa == "" {
			return fmt.Sprintf("renamed %s -> %s", nb, na)
		}
		return fmt.Sprintf("renamed %s/%s -> %s/%s", sb, nb, sa, na)
	}
	verb := map[string]string{catalog.ActionDelete: "deleted", catalog.ActionRestore: "restored", catalog.ActionUpdate: "updated",
		catalog.ActionOwnerSet: "owner set", catalog.ActionOwnerRemove: "owner removed", catalog.ActionSchemaChange: "schema changed",
		catalog.ActionColumnDescribe: "column description changed", catalog.ActionLabelAdd: "label added", catalog.ActionLabelRemove: "label removed"}[action]
	if action == catalog.ActionDelete || action == catalog.ActionRestore {
		return verb
	}
	var parts []string
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s: %s -> %s", f.Field, clip.String(f.Before, 60), clip.String(f.After, 60)))
	}
	return clip.String(verb+" "+strings.Join(parts, "; "), 500)
}

// NotifierJob writes subscribers' notifications (audit log -> outbox) every interval
// (WithInterval), at start too.
func (s *Service) NotifierJob() *loop.Job {
	return &loop.Job{Name: "notify: writing subscribers' notifications", Interval: s.interval, AtStart: true, Log: s.log,
		Step: func(ctx context.Context) error { _, err := s.Notify(ctx); return err }}
}
