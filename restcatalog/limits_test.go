package restcatalog_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/labstack/echo/v4"
	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/restcatalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestFailedAuthenticationSpendsTheAddressBudget: with --rate-limit-anonymous, requests that
// carry no token that verifies (made-up bearer tokens, any other Authorization header, OAuth
// guesses) are charged to the client address on every face: past the budget they get 429,
// never an endless stream of 401s to guess against. Verified tokens are not the address's.
func TestFailedAuthenticationSpendsTheAddressBudget(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServerWith(t, db, func(_ *app.Config, shell *server.Config) {
			// One request a 100 s for an address: the second within the test is over budget.
			shell.AnonymousRateLimit, shell.RateLimit = 0.01, 100
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

// TestMadeUpTokensAreThrottledAlikeOnEveryFace: with --rate-limit-anonymous 1 (a burst of 2),
// twenty requests with a made-up bearer token meet the same budget on the JSON API and on the
// Iceberg face: two 401s, then 429s with Retry-After. On /iceberg both answers are the Iceberg
// error model, so iceberg-go's REST client shows their message (not only a problem type), and
// on /api both are problem+json. The shell verifies the token once and charges the address.
func TestMadeUpTokensAreThrottledAlikeOnEveryFace(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		clock := &shiftClock{}
		s := newServerWith(t, db, func(_ *app.Config, shell *server.Config) {
			shell.AnonymousRateLimit, shell.Now = 1, clock.Now
		})
		want := []int{401, 401}
		for range 18 {
			want = append(want, 429)
		}
		for _, face := range []struct{ name, path, body, contentType string }{
			{"api", "/api/v1/lineage", `{}`, "application/problem+json"},
			{"iceberg", "/iceberg/v1/main/namespaces", `{"namespace":["x"]}`, "application/json"},
		} {
			t.Run(face.name, func(t *testing.T) {
				clock.Add(time.Hour) // a full bucket: the faces share the address's budget
				var got []int
				for i := range 20 {
					req, err := http.NewRequest("POST", s.URL+face.path, strings.NewReader(face.body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer tdm_madeup")
					req.Header.Set("Content-Type", "application/json")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					got = append(got, resp.StatusCode)
					if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, face.contentType) {
						t.Errorf("request %d: Content-Type %q, want %s: %s", i+1, ct, face.contentType, body)
					}
					if resp.StatusCode == 429 {
						if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 1 {
							t.Errorf("request %d: 429 with Retry-After %q, want whole seconds >= 1", i+1, resp.Header.Get("Retry-After"))
						}
					}
					if face.name != "iceberg" {
						continue
					}
					var model struct {
						Error struct {
							Message string `json:"message"`
							Type    string `json:"type"`
							Code    int    `json:"code"`
						} `json:"error"`
					}
					if err := json.Unmarshal(body, &model); err != nil || model.Error.Code != resp.StatusCode || model.Error.Message == "" || model.Error.Type == "" {
						t.Errorf("request %d: %d %s is not the Iceberg error model", i+1, resp.StatusCode, body)
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("statuses %v, want %v", got, want)
				}
			})
		}
		t.Run("iceberg-go", func(t *testing.T) {
			clock.Add(time.Hour)
			var msgs []string
			for range 3 {
				_, err := icecat.Load(context.Background(), "tidemark", iceberg.Properties{
					"type": "rest", "uri": s.URL + "/iceberg", "token": "tdm_madeup", "warehouse": "main"})
				if err == nil {
					t.Fatal("iceberg-go loaded the catalog with a made-up token")
				}
				msgs = append(msgs, err.Error())
			}
			if !strings.Contains(msgs[0], "NotAuthorizedException: the bearer token is not recognised") {
				t.Errorf("first load: %q, want the 401's message", msgs[0])
			}
			if !strings.Contains(msgs[2], "TooManyRequestsException: address 127.0.0.1 sent more requests than its rate limit allows") {
				t.Errorf("third load: %q, want the 429's message", msgs[2])
			}
		})
	})
}

// TestShellAnswersInEachFacesErrorModel: what the shell answers itself (an unknown path, a wrong
// method, a missing token, an oversized body, a handler's panic) is in the Iceberg error model on /iceberg
// and in problem+json on /api.
func TestShellAnswersInEachFacesErrorModel(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		for _, p := range []string{"/iceberg/v1/test/panic", "/api/v1/test/panic"} {
			s.Shell.Echo().GET(p, func(echo.Context) error { panic("injected fault") })
		}
		huge := strings.Repeat("x", restcatalog.DefaultBodyLimit+1)
		for _, tc := range []struct {
			name, method, path, body string
			status                   int
			icebergType              string // "" for /api
		}{
			{"IcebergUnknownPath", "GET", "/iceberg/nope", "", 404, "NoSuchEndpointException"},
			{"IcebergNoToken", "POST", "/iceberg/v1/main/namespaces", `{"namespace":["x"]}`, 401, "NotAuthorizedException"},
			{"IcebergTooLarge", "POST", "/iceberg/v1/main/namespaces", huge, 413, "BadRequestException"},
			{"IcebergPanic", "GET", "/iceberg/v1/test/panic", "", 500, "ServiceFailureException"},
			{"APIUnknownPath", "GET", "/api/nope", "", 404, ""},
			{"APIWrongMethod", "DELETE", "/api/v1/lineage", "", 405, ""}, // served for POST: not a 404, and not the UI's page
			{"APINoToken", "POST", "/api/v1/lineage", `{}`, 401, ""},
			{"APIPanic", "GET", "/api/v1/test/panic", "", 500, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.status {
					t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, resp.StatusCode, body, tc.status)
				}
				if tc.icebergType == "" {
					var p struct {
						Type   string `json:"type"`
						Status int    `json:"status"`
					}
					if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" || json.Unmarshal(body, &p) != nil || p.Status != tc.status || !strings.HasPrefix(p.Type, "urn:tidemark:problem:") {
						t.Fatalf("%s %s = %s %s, want problem+json", tc.method, tc.path, ct, body)
					}
					return
				}
				var m struct {
					Error struct {
						Message string `json:"message"`
						Type    string `json:"type"`
						Code    int    `json:"code"`
					} `json:"error"`
				}
				if err := json.Unmarshal(body, &m); err != nil || m.Error.Code != tc.status || m.Error.Type != tc.icebergType || m.Error.Message == "" {
					t.Fatalf("%s %s = %s, want the Iceberg error model with %s", tc.method, tc.path, body, tc.icebergType)
				}
			})
		}
	})
}
