package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/notify"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// receiver is a real webhook endpoint on 127.0.0.1 that keeps what it was sent.
type receiver struct {
	mu   sync.Mutex
	got  []notify.AssetNotification
	keys []string
}

func newReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n notify.AssetNotification
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("receiver: %v in %s", err, body)
		}
		rc.mu.Lock()
		rc.got = append(rc.got, n)
		rc.keys = append(rc.keys, r.Header.Get("Idempotency-Key"))
		rc.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *receiver) messages() []notify.AssetNotification {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]notify.AssetNotification(nil), rc.got...)
}

// TestSubscriberHearsOfRename: a subscriber with a webhook gets one message for a rename made
// after it subscribed, naming the asset, old -> new and the actor; running the notifier again
// sends nothing more; a subscriber without a webhook, a rename before subscribing and an asset
// nobody subscribed to send nothing; after unsubscribing, nothing more comes.
func TestSubscriberHearsOfRename(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clk := &clock{t: time.Now().UTC()}
		cat := mustCatalog(t, db, catalog.WithClock(clk.Now))
		svc := newService(t, db, cat, notify.WithClock(clk.Now), notify.WithPrivateWebhooks(true))
		rc, url := newReceiver(t)
		create := func(name string) uuid.UUID {
			res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: name})
			must(t, err)
			return res.Asset.ID
		}
		ci := catalog.WithActor(ctx, "token:ci")
		rename := func(id uuid.UUID, name string) {
			_, err := cat.Rename(ci, id, catalog.AnyVersion, "", name)
			must(t, err)
		}
		run := func() (notify.Report, int) {
			rep, err := svc.Notify(ctx)
			must(t, err)
			d, f, err := svc.Dispatch(ctx)
			must(t, err)
			if f != 0 {
				t.Fatalf("%d deliveries failed", f)
			}
			return rep, d
		}

		id, other := create("orders_v0"), create("payments")
		rename(id, "orders") // before anyone subscribed: nobody hears of it
		must(t, svc.SetWebhook(ctx, "alice", url))
		_, created, err := svc.Subscribe(ctx, id, "alice")
		if err != nil || !created {
			t.Fatalf("subscribe: created %v, %v", created, err)
		}
		_, created, err = svc.Subscribe(ctx, id, "alice")
		if err != nil || created {
			t.Fatalf("subscribe again: created %v, %v", created, err)
		}
		_, _, err = svc.Subscribe(ctx, id, "bob") // no webhook
		must(t, err)
		clk.Add(time.Second)
		rename(id, "orders_v2")
		rename(other, "payments_v2")

		if rep, d := run(); rep.Events != 0 || d != 0 {
			t.Fatalf("before the settle time: read %d events, delivered %d; want none", rep.Events, d)
		}
		clk.Add(time.Minute)
		rep, d := run()
		if rep.Events != 2 || rep.Messages != 1 || d != 1 {
			t.Fatalf("notify: %+v, delivered %d; want 2 events read, 1 message, 1 delivered", rep, d)
		}
		got := rc.messages()
		if len(got) != 1 {
			t.Fatalf("received %d messages, want 1: %+v", len(got), got)
		}
		n := got[0]
		if n.Asset.ID != id || n.Asset.Name != "orders_v2" || n.Recipient != "alice" || n.Event != notify.EventAssetChanged {
			t.Errorf("message names %+v to %s (%s)", n.Asset, n.Recipient, n.Event)
		}
		if c := n.Change; c.Action != catalog.ActionRename || c.Actor != "token:ci" || c.Summary != "renamed orders -> orders_v2" {
			t.Errorf("change: %+v", c)
		}
		if rc.keys[0] != n.ID.String() {
			t.Errorf("Idempotency-Key %q, message ID %s", rc.keys[0], n.ID)
		}

		if rep, d := run(); rep.Messages != 0 || d != 0 || len(rc.messages()) != 1 {
			t.Fatalf("second run: %+v, delivered %d, received %d; want nothing more", rep, d, len(rc.messages()))
		}

		removed, err := svc.Unsubscribe(ctx, id, "alice")
		if err != nil || !removed {
			t.Fatalf("unsubscribe: %v %v", removed, err)
		}
		rename(id, "orders_v3")
		clk.Add(time.Minute)
		if rep, d := run(); rep.Events != 1 || rep.Messages != 0 || d != 0 || len(rc.messages()) != 1 {
			t.Fatalf("after unsubscribing: %+v, delivered %d, received %d; want the event read and nothing sent", rep, d, len(rc.messages()))
		}
		subs, err := svc.Subscriptions(ctx, id)
		if err != nil || len(subs) != 1 || subs[0].Principal != "bob" || subs[0].HasWebhook {
			t.Fatalf("subscriptions: %+v %v; want bob, without a webhook", subs, err)
		}
	})
}

// TestSubscribeRefuses: bad input is refused with the catalog's error kinds, and writes nothing.
func TestSubscribeRefuses(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		cat := mustCatalog(t, db)
		svc := newService(t, db, cat)
		res, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "warehouse", Name: "orders"})
		must(t, err)
		long := string(make([]byte, catalog.MaxPrincipalBytes+1))
		for _, tc := range []struct {
			name      string
			asset     uuid.UUID
			principal string
			want      error
		}{
			{"EmptyPrincipal", res.Asset.ID, "", catalog.ErrInvalid},
			{"PaddedPrincipal", res.Asset.ID, " alice", catalog.ErrInvalid},
			{"LongPrincipal", res.Asset.ID, long, catalog.ErrInvalid},
			{"UnknownAsset", uuid.Must(uuid.NewV7()), "alice", catalog.ErrNotFound},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if _, _, err := svc.Subscribe(ctx, tc.asset, tc.principal); !errors.Is(err, tc.want) {
					t.Fatalf("subscribe: %v, want %v", err, tc.want)
				}
				if _, err := svc.Unsubscribe(ctx, tc.asset, tc.principal); !errors.Is(err, tc.want) {
					t.Fatalf("unsubscribe: %v, want %v", err, tc.want)
				}
			})
		}
		subs, err := svc.Subscriptions(ctx, res.Asset.ID)
		if err != nil || len(subs) != 0 {
			t.Fatalf("subscriptions after refusals: %+v %v", subs, err)
		}
	})
}
