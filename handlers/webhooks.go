package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
)

type webhookRequest struct {
	URL string `json:"url"`
}

type webhookResponse struct {
	Principal string `json:"principal"`
	URL       string `json:"url,omitempty"`
}

func (a notifications) mountWebhooks() {
	a.handle(operation{
		Method:    http.MethodPut,
		Path:      "/api/v1/webhooks/:principal",
		Summary:   "Where an owner's cleanup notifications go (an empty url removes it)",
		Tag:       "cleanup",
		Scope:     auth.ScopeAdmin,
		Params:    []param{{Name: "principal", In: "path", Required: true}},
		Body:      webhookRequest{},
		Responses: map[int]any{200: webhookResponse{}},
	}, a.setWebhook)
}

func (a notifications) setWebhook(c echo.Context) error {
	principal, err := pathParam(c, "principal")
	if err != nil {
		return err
	}
	var req webhookRequest
	if err := bind(c, &req); err != nil {
		return err
	}
	if len(principal) > catalog.MaxPrincipalBytes {
		return badRequest("principal", "principal is %d bytes long; the limit is %d", len(principal), catalog.MaxPrincipalBytes)
	}
	if err := a.notify.SetWebhook(c.Request().Context(), principal, req.URL); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookResponse{Principal: principal, URL: req.URL})
}
