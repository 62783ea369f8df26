package web

// The asset page's subscribe part: a signed-in person subscribes their principal (their token's
// name, as the API's rule has it) to the asset's changes, and is told whether that principal has
// a webhook to be told through.

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/internal/words"
	"github.com/tidemark/tidemark/notify"
)

func init() {
	flashes["subscribed"] = "Subscribed to this asset's changes"
	flashes["unsubscribed"] = "Unsubscribed: you will not hear of this asset's changes"
}

// subscriptionView is what the page shows the person about their subscription.
type subscriptionView struct {
	AssetID    uuid.UUID
	Principal  string // empty: not signed in
	Subscribed bool
	HasWebhook bool
	Others     int  // other subscribers
	CanChange  bool // signed in with the write scope
	CSRF       string
}

// subscriptionParts reads the signed-in person's subscription and webhook for the asset page.
func (u *UI) subscriptionParts(g *errgroup.Group, r *http.Request, d *assetData, miss func(string, error) bool) {
	if u.cfg.Notify == nil {
		return
	}
	v := &subscriptionView{AssetID: d.Asset.ID}
	d.Sub = v
	s := u.sessions.get(r)
	if s == nil {
		return
	}
	v.Principal, v.CanChange, v.CSRF = s.Name, s.Write, s.CSRF
	g.Go(func() error {
		subs, err := u.cfg.Notify.Subscriptions(r.Context(), d.Asset.ID)
		if miss("your subscription", err) {
			d.Sub = nil
			return nil
		}
		for _, sub := range subs {
			if sub.Principal == v.Principal {
				v.Subscribed = true
			} else {
				v.Others++
			}
		}
		v.HasWebhook, err = u.cfg.Notify.HasWebhook(r.Context(), v.Principal)
		if miss("your subscription", err) {
			d.Sub = nil
		}
		return nil
	})
}

// subscription serves the Subscribe and Unsubscribe buttons: the signed-in person (write
// scope, the page's CSRF token) for their own principal only.
func (u *UI) subscription(w http.ResponseWriter, r *http.Request) {
	s := u.editor(w, r)
	if s == nil {
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID"})
		return
	}
	flash := "subscribed"
	switch r.PostFormValue("action") {
	case "subscribe":
		_, _, err = u.cfg.Notify.Subscribe(r.Context(), id, s.Name)
	case "unsubscribe":
		flash = "unsubscribed"
		_, err = u.cfg.Notify.Unsubscribe(r.Context(), id, s.Name)
	default:
		err = &catalog.Error{Kind: catalog.ErrInvalid, Message: "the form says neither subscribe nor unsubscribe; reload the page"}
	}
	if err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/assets/"+id.String()+"?flash="+flash+"#subscription", http.StatusSeeOther)
}

// mySubscriptionsShown bounds the subscriptions page.
const mySubscriptionsShown = 500

// mySubscriptionsData is the subscriptions page: the signed-in person's subscriptions.
type mySubscriptionsData struct {
	Principal  string
	Items      []notify.Subscribed
	Summary    string
	HasWebhook bool
	CanChange  bool
}

// mySubscriptions lists the assets the signed-in person is subscribed to.
func (u *UI) mySubscriptions(w http.ResponseWriter, r *http.Request) {
	s := u.signedIn(w, r)
	if s == nil {
		return
	}
	items, err := u.cfg.Notify.SubscriptionsOf(r.Context(), s.Name, mySubscriptionsShown)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	hook, err := u.cfg.Notify.HasWebhook(r.Context(), s.Name)
	if err != nil {
		u.fail(w, r, err)
		return
	}
	d := mySubscriptionsData{Principal: s.Name, Items: items, HasWebhook: hook, CanChange: s.Write,
		Summary: fmt.Sprintf("You (%s) are subscribed to %s.", s.Name, words.Count(int64(len(items)), "asset"))}
	if len(items) == mySubscriptionsShown {
		d.Summary = fmt.Sprintf("You (%s) are subscribed to more assets than shown; the newest %d are here.", s.Name, len(items))
	}
	u.render(w, r, http.StatusOK, "subscriptions", "My subscriptions", d)
}

// endSubscription serves the subscriptions page's Unsubscribe buttons (write scope, CSRF), for
// the person's own principal only.
func (u *UI) endSubscription(w http.ResponseWriter, r *http.Request) {
	s := u.editor(w, r)
	if s == nil {
		return
	}
	id, err := uuid.Parse(r.PostFormValue("asset"))
	if err != nil {
		u.fail(w, r, &catalog.Error{Kind: catalog.ErrInvalid, Message: "that is not an asset ID; reload the page"})
		return
	}
	if _, err := u.cfg.Notify.Unsubscribe(r.Context(), id, s.Name); err != nil {
		u.fail(w, r, err)
		return
	}
	http.Redirect(w, r, "/subscriptions?flash=subscription-ended", http.StatusSeeOther)
}
