package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/tidemark/tidemark/handlers"
)

func init() {
	openapi3filter.RegisterBodyDecoder("application/problem+json", openapi3filter.JSONBodyDecoder)
}

// openAPIRouter loads the document the API serves, once per API.
type openAPIRouter struct {
	once   sync.Once
	router routers.Router
	err    error
}

func (o *openAPIRouter) get(api *handlers.API) (routers.Router, error) {
	o.once.Do(func() {
		b, err := json.Marshal(api.OpenAPI())
		if err != nil {
			o.err = err
			return
		}
		doc, err := openapi3.NewLoader().LoadFromData(b)
		if err != nil {
			o.err = err
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			o.err = err
			return
		}
		o.router, o.err = legacy.NewRouter(doc)
	})
	return o.router, o.err
}

// checkResponse validates one answer of the API against its served OpenAPI document (status,
// headers, body), so the document cannot drift from what the handlers send. Requests the
// document does not describe (the web pages, unknown paths) are skipped.
func (s *testServer) checkResponse(t testing.TB, req *http.Request, res *http.Response, body []byte) {
	t.Helper()
	if req.Method == http.MethodHead || !strings.HasPrefix(req.URL.Path, "/api/") {
		return
	}
	router, err := s.openapi.get(s.API)
	if err != nil {
		t.Fatalf("the served OpenAPI document does not load: %v", err)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: res.StatusCode, Header: res.Header, Body: io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s answered %d, which the OpenAPI document does not allow: %v\nbody: %.600s", req.Method, req.URL.Path, res.StatusCode, err, body)
	}
}
