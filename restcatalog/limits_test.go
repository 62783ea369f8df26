package restcatalog_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestFailedAuthenticationSpendsTheAddressBudget: with --rate-limit-anonymous, requests that
// carry no token that verifies (made-up bearer tokens, any other Authorization header, OAuth
// guesses) are charged to the client address on every face: past the budget they get 429,
// never an endless stream of 401s to guess against. Verified tokens are not the address's.
func TestFailedAuthenticationSpendsTheAddressBudget(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServerWith(t, db, func(_ *app.Config, api *handlers.Config) {
			// One request a 100 s for an address: the second within the test is over budget.
			api.AnonymousRateLimit, api.RateLimit = 0.01, 100
		})
		send := func(method, path, authorization, contentType, body string) (int, string) {
			t.Helper()
			req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			if contentType != "" {
				req.Header.Set("Content-Type", contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := send("GET", "/healthz", "", "", ""); code != 200 { // the address's one request
			t.Fatalf("GET /healthz: %d %s", code, body)
		}
		form := "application/x-www-form-urlencoded"
		guess := url.Values{"grant_type": {"client_credentials"}, "client_id": {"engine"}, "client_secret": {"tdm_guess"}}.Encode()
		noScheme := url.Values{"grant_type": {"client_credentials"}}.Encode()
		for _, tc := range []struct {
			name, method, path, authorization, contentType, body string
		}{
			{"IcebergMadeUpBearer", "POST", "/iceberg/v1/main/namespaces", "Bearer tdm_madeup", "application/json", `{"namespace":["x"]}`},
			{"IcebergMadeUpBearerOnARead", "GET", "/iceberg/v1/main/namespaces", "Bearer tdm_madeup", "", ""},
			{"IcebergAnyText", "POST", "/iceberg/v1/main/namespaces", "x", "application/json", `{"namespace":["x"]}`},
			{"IcebergConfig", "GET", "/iceberg/v1/config", "Bearer tdm_madeup", "", ""},
			{"OAuthGuessInTheForm", "POST", "/iceberg/v1/oauth/tokens", "", form, guess},
			{"OAuthGuessAsBasic", "POST", "/iceberg/v1/oauth/tokens", "Basic ZW5naW5lOnRkbV9ndWVzcw==", form, noScheme},
			{"PageWithAnyText", "GET", "/", "x", "", ""},
			{"PageWithMadeUpBearer", "GET", "/", "Bearer tdm_madeup", "", ""},
			{"APIWithAnyText", "GET", "/api/v1/assets", "x", "", ""},
			{"APIWithMadeUpBearer", "POST", "/api/v1/assets", "Bearer tdm_madeup", "application/json", `{"kind":"table","namespace":"w","name":"x"}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for i := range 20 {
					if code, body := send(tc.method, tc.path, tc.authorization, tc.contentType, tc.body); code != http.StatusTooManyRequests || !strings.Contains(body, "address 127.0.0.1") {
						t.Fatalf("request %d: %s %s with Authorization %q = %d %s, want 429 charged to the address", i+1, tc.method, tc.path, tc.authorization, code, body)
					}
				}
			})
		}
		// A token that verifies is charged to itself, on every face.
		for _, r := range []struct{ method, path, contentType, body string }{
			{"POST", "/iceberg/v1/main/namespaces", "application/json", `{"namespace":["verified"]}`},
			{"GET", "/iceberg/v1/main/namespaces", "", ""},
			{"GET", "/", "", ""},
			{"GET", "/api/v1/assets", "", ""},
		} {
			if code, body := send(r.method, r.path, "Bearer "+s.Token, r.contentType, r.body); code != 200 {
				t.Fatalf("%s %s with a verified token = %d %s, want 200", r.method, r.path, code, body)
			}
		}
		if code, body := send("POST", "/iceberg/v1/oauth/tokens", "", form,
			url.Values{"grant_type": {"client_credentials"}, "client_id": {"engine"}, "client_secret": {s.Token}}.Encode()); code != http.StatusTooManyRequests {
			// The right secret in a form is still an anonymous request until it is verified: it
			// is charged to the address like the guesses.
			t.Fatalf("OAuth with the right secret in the form, past the address budget = %d %s, want 429", code, body)
		}
	})
}
