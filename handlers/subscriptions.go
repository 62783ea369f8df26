package handlers

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/notify"
)

type subscriptionResponse struct {
	AssetID    uuid.UUID `json:"asset_id"`
	Principal  string    `json:"principal"`
	CreatedAt  time.Time `json:"created_at"`
	HasWebhook bool      `json:"has_webhook"`
	// Note says what to do when the principal has no webhook (nothing is sent without one).
	Note string `json:"note,omitempty"`
}

type subscriptionListResponse struct {
	AssetID uuid.UUID              `json:"asset_id"`
	Items   []subscriptionResponse `json:"items"`
}

type unsubscribeResponse struct {
	AssetID   uuid.UUID `json:"asset_id"`
	Principal string    `json:"principal"`
	Removed   bool      `json:"removed"` // false: there was no subscription
}

// notifications serves the routes of the notify service: subscriptions to assets' changes and
// the webhooks every notification is sent to.
type notifications struct {
	*API
	notify *notify.Service
}

// subscriptionRoutes adds the routes of the notify service (nil adds none): subscriptions to
// assets' changes and the webhooks notifications go to.
func (a *API) subscriptionRoutes() {
	if a.cfg.Notify == nil {
		return
	}
	api := notifications{API: a, notify: a.cfg.Notify}
	api.mountSubscriptions()
	api.mountWebhooks()
}

func (a notifications) mountSubscriptions() {
	const base = "/api/v1"
	who := []param{{Name: "principal", In: "path", Required: true, Description: "who is told; a token may name only itself (its name) unless it has the admin scope"}}
	a.handle(operation{
		Method:  http.MethodPut,
		Path:    base + "/assets/:id/subscriptions/:principal",
		Summary: "Subscribe a principal to an asset's changes (renames, deletion, restore, description and status, owners, schema, labels)",
		Description: "Each change is sent to the principal's webhook (PUT /api/v1/webhooks/{principal}) within about a minute, at least once, " +
			"with an Idempotency-Key the same for the same change; without a webhook nothing is sent. 201 when subscribed now, 200 when already subscribed.",
		Tag:       "subscriptions",
		Params:    who,
		Responses: map[int]any{200: subscriptionResponse{}, 201: subscriptionResponse{}},
	}, a.subscribe)
	a.handle(operation{
		Method:    http.MethodDelete,
		Path:      base + "/assets/:id/subscriptions/:principal",
		Summary:   "Unsubscribe a principal from an asset's changes",
		Tag:       "subscriptions",
		Params:    who,
		Responses: map[int]any{200: unsubscribeResponse{}},
	}, a.unsubscribe)
	a.handle(operation{
		Method:    http.MethodGet,
		Path:      base + "/assets/:id/subscriptions",
		Summary:   "Who is subscribed to an asset's changes, and whether each has a webhook",
		Tag:       "subscriptions",
		Responses: map[int]any{200: subscriptionListResponse{}},
	}, a.listSubscriptions)
}

// subscriber reads the asset and principal of a subscription request and checks the token may
// act for that principal: its own name, or anyone with the admin scope.
func (a *API) subscriber(c echo.Context) (uuid.UUID, string, error) {
	id, err := assetID(c)
	if err != nil {
		return uuid.Nil, "", err
	}
	principal, err := pathParam(c, "principal")
	if err != nil {
		return uuid.Nil, "", err
	}
	if tok, ok := c.Get(tokenKey).(auth.Token); ok && tok.Name != principal && !tok.Allows(auth.ScopeAdmin) {
		return uuid.Nil, "", newProblem(http.StatusForbidden, fmt.Sprintf(
			"token %q may subscribe only itself (principal %q); subscribing %q needs the admin scope", tok.Name, tok.Name, truncate(principal, 64)))
	}
	return id, principal, nil
}

func (a notifications) subscribe(c echo.Context) error {
	id, principal, err := a.subscriber(c)
	if err != nil {
		return err
	}
	sub, created, err := a.notify.Subscribe(c.Request().Context(), id, principal)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return c.JSON(status, toSubscriptionResponse(sub))
}

func (a notifications) unsubscribe(c echo.Context) error {
	id, principal, err := a.subscriber(c)
	if err != nil {
		return err
	}
	removed, err := a.notify.Unsubscribe(c.Request().Context(), id, principal)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, unsubscribeResponse{AssetID: id, Principal: principal, Removed: removed})
}

func (a notifications) listSubscriptions(c echo.Context) error {
	id, err := assetID(c)
	if err != nil {
		return err
	}
	subs, err := a.notify.Subscriptions(c.Request().Context(), id)
	if err != nil {
		return err
	}
	out := subscriptionListResponse{AssetID: id, Items: []subscriptionResponse{}}
	for _, s := range subs {
		out.Items = append(out.Items, toSubscriptionResponse(s))
	}
	return c.JSON(http.StatusOK, out)
}

func toSubscriptionResponse(s notify.Subscription) subscriptionResponse {
	r := subscriptionResponse{AssetID: s.AssetID, Principal: s.Principal, CreatedAt: s.CreatedAt, HasWebhook: s.HasWebhook}
	if !s.HasWebhook {
		r.Note = fmt.Sprintf("no webhook for %q: nothing is sent until an admin sets one with PUT /api/v1/webhooks/{principal}", s.Principal)
	}
	return r
}
