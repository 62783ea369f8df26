package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/outboxmessage"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestWebhookAdmin: a principal's webhook is read back, changed with an audit event that keeps
// no secret of the URL, tried with a test delivery (2xx, an error status, an internal address
// refused as real deliveries are), and cleared.
func TestWebhookAdmin(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := catalog.WithActor(context.Background(), "web:alice")
		cat := mustCatalog(t, db)
		svc := newService(t, db, cat, notify.WithPrivateWebhooks(true)) // the receivers listen on loopback
		var got struct {
			event string
			body  map[string]any
		}
		status := http.StatusNoContent
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.event = r.Header.Get("X-Tidemark-Event")
			_ = json.NewDecoder(r.Body).Decode(&got.body)
			w.WriteHeader(status)
		}))
		defer recv.Close()

		var invalid *catalog.Error
		if _, err := svc.TestDelivery(ctx, "alice"); !errors.As(err, &invalid) || !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("test delivery with no webhook: %v", err)
		}
		if err := svc.ChangeWebhook(ctx, "alice", "ftp://example.com"); !errors.Is(err, catalog.ErrInvalid) {
			t.Fatalf("ftp webhook: %v", err)
		}
		must(t, svc.ChangeWebhook(ctx, "alice", recv.URL+"/hook?key=s3cret"))
		w, ok, err := svc.Webhook(ctx, "alice")
		if err != nil || !ok || w.URL != recv.URL+"/hook?key=s3cret" {
			t.Fatalf("webhook = %+v %v %v", w, ok, err)
		}
		res, err := svc.TestDelivery(ctx, "alice")
		if err != nil || !res.OK() || res.Status != http.StatusNoContent || got.event != notify.TestEvent || got.body["principal"] != "alice" {
			t.Fatalf("test delivery = %+v %v; received %+v", res, err, got)
		}
		status = http.StatusTeapot
		if res, err := svc.TestDelivery(ctx, "alice"); err != nil || res.OK() || res.Status != http.StatusTeapot || !strings.Contains(res.Error, "418") {
			t.Fatalf("test delivery to a 418: %+v %v", res, err)
		}
		strict := newService(t, db, cat) // internal addresses refused, as in production
		if res, err := strict.TestDelivery(ctx, "alice"); err != nil || res.OK() || !strings.Contains(res.Error, "loopback, private or link-local") || strings.Contains(res.Error, "s3cret") {
			t.Fatalf("test delivery to loopback, refused: %+v %v", res, err)
		}
		must(t, svc.ChangeWebhook(ctx, "alice", ""))
		if _, ok, err := svc.Webhook(ctx, "alice"); ok || err != nil {
			t.Fatalf("cleared webhook still there: %v %v", ok, err)
		}
		evs, err := cat.AuditEvents(ctx, catalog.AuditFilter{Action: "webhook", Limit: 10})
		must(t, err)
		if len(evs) != 2 || evs[0].Action != notify.ActionWebhookClear || evs[1].Action != notify.ActionWebhookSet || evs[1].Actor != "web:alice" ||
			!strings.Contains(string(evs[1].After), "/hook") || strings.Contains(string(evs[1].After), "s3cret") {
			t.Fatalf("audit: %+v", evs)
		}
	})
}

// TestDeliveriesAndSubscriptionsOf: a principal's deliveries come newest first with a failed
// one's error and attempts, nobody else's; its subscriptions name their assets.
func TestDeliveriesAndSubscriptionsOf(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		c := &clock{t: time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)}
		cat := mustCatalog(t, db, catalog.WithClock(c.Now))
		svc := newService(t, db, cat, notify.WithClock(c.Now), notify.WithPrivateWebhooks(true))
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
		defer down.Close()
		for i, to := range []string{"alice", "bob", "alice"} {
			must(t, db.Client.OutboxMessage.Create().SetEvent("asset.changed").SetRecipient(to).SetURL(down.URL).SetPayload("{}").
				SetAttempts(notify.MaxAttempts-1).SetNextAttemptAt(c.Now()).SetCreatedAt(c.Now().Add(time.Duration(i)*time.Second)).Exec(ctx))
		}
		if _, failed, err := svc.Dispatch(ctx); err != nil || failed != 3 {
			t.Fatalf("dispatch: %d failed, %v", failed, err)
		}
		ds, err := svc.Deliveries(ctx, "alice", 50)
		must(t, err)
		if len(ds) != 2 || !ds[0].CreatedAt.After(ds[1].CreatedAt) || ds[0].State != string(outboxmessage.StateFailed) ||
			ds[0].Attempts != notify.MaxAttempts || !strings.Contains(ds[0].LastError, "502") || ds[0].DeliveredAt != nil {
			t.Fatalf("deliveries: %+v", ds)
		}

		var names []string
		for _, n := range []string{"orders", "customers"} {
			res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: n})
			must(t, err)
			_, _, err = svc.Subscribe(ctx, res.Asset.ID, "alice")
			must(t, err)
			names = append(names, n)
			c.Add(time.Minute)
		}
		subs, err := svc.SubscriptionsOf(ctx, "alice", 100)
		must(t, err)
		if len(subs) != 2 || subs[0].Name != "customers" || subs[1].Name != "orders" || subs[0].Namespace != "warehouse" || !subs[0].Since.After(subs[1].Since) {
			t.Fatalf("subscriptions of alice: %+v (made %v)", subs, names)
		}
		if subs, err := svc.SubscriptionsOf(ctx, "bob", 100); err != nil || len(subs) != 0 {
			t.Fatalf("subscriptions of bob: %+v %v", subs, err)
		}
	})
}
