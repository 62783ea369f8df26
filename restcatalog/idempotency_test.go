package restcatalog_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/ent/icebergcommit"
	"github.com/tidemark/tidemark/restcatalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/warehouse"
)

// TestConcurrentRetriesApplyOnce: three identical commits sent at once with one Idempotency-Key
// (a client retrying while its first attempt is in flight) apply once: one commit row, and every
// answer, and a replay afterwards, is 200 with the same metadata location. The commits carry no
// requirements, so a second application would land as a second commit. 100 rounds on
// PostgreSQL, 20 on SQLite.
func TestConcurrentRetriesApplyOnce(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		s := newServer(t, db)
		s.append(t, create(t, s.client(t), "k", "t"), 0, 2)
		rounds := 20
		if db.Dialect == "postgres" {
			rounds = 100
		}
		path := "/iceberg/v1/main/namespaces/k/tables/t"
		for round := range rounds {
			key := uuid.NewString()
			body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"round":"%d"}}]}`, round)
			var wg sync.WaitGroup
			codes := make([]int, 3)
			locs := make([]string, 3)
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var out struct {
						Location string `json:"metadata-location"`
					}
					codes[i], _ = s.doWith(t, "POST", path, s.Writer, body, map[string]string{"Idempotency-Key": key}, &out)
					locs[i] = out.Location
				}()
			}
			wg.Wait()
			var replay struct {
				Location string `json:"metadata-location"`
			}
			code, text := s.doWith(t, "POST", path, s.Writer, body, map[string]string{"Idempotency-Key": key}, &replay)
			n, err := db.Client.IcebergCommit.Query().Where(icebergcommit.IdempotencyKey(key)).Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if codes[i] != 200 || locs[i] != locs[0] || locs[i] == "" {
					t.Fatalf("round %d: answers %v, locations %v: one key must be one application, every answer its outcome", round, codes, locs)
				}
			}
			if n != 1 || code != 200 || replay.Location != locs[0] {
				t.Fatalf("round %d: %d commit rows for one key (want 1); the replay answered %d %s: %s", round, n, code, replay.Location, text)
			}
		}
	})
}

// TestIdempotencyKeyReuse: a key answers only the request it was first used for. Reused for
// another table, operation, body or token it answers 422 and does nothing; a first answer of
// 409 replays as 409; an unprintable key is a 400 on both stores; a key older than the
// advertised lifetime is new again.
func TestIdempotencyKeyReuse(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		clock := &shiftClock{}
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Tables = append(c.Tables, tables.WithClock(clock.Now))
			c.Warehouse = append(c.Warehouse, warehouse.WithClock(clock.Now))
		})
		cat := s.client(t)
		create(t, cat, "k", "a")
		create(t, cat, "k", "b")
		pa, pb := "/iceberg/v1/main/namespaces/k/tables/a", "/iceberg/v1/main/namespaces/k/tables/b"
		props := func(v string) string {
			return fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"v":%q}}]}`, v)
		}
		send := func(method, path, token, body, key string) (int, string) {
			t.Helper()
			return s.doWith(t, method, path, token, body, map[string]string{"Idempotency-Key": key}, nil)
		}
		if code, body := send("POST", pa, s.Writer, props("1"), "K"); code != 200 {
			t.Fatalf("first use: %d %s", code, body)
		}
		cases := []struct {
			name, method, path, token, body string
		}{
			{"AnotherTable", "POST", pb, s.Writer, props("1")},
			{"AnotherBody", "POST", pa, s.Writer, props("2")},
			{"AnotherToken", "POST", pa, s.Token, props("1")},
			{"ADrop", "DELETE", pb, s.Writer, ""},
		}
		for _, c := range cases {
			if code, body := send(c.method, c.path, c.token, c.body, "K"); code != 422 || !strings.Contains(body, "different request") {
				t.Fatalf("%s: %d %s, want 422 saying the key was used for a different request", c.name, code, body)
			}
		}
		if _, err := cat.LoadTable(ctx, table.Identifier{"k", "b"}); err != nil {
			t.Fatalf("a refused drop dropped the table: %v", err)
		}
		if got := loadProps(t, s, pa)["v"]; got != "1" {
			t.Fatalf("a refused reuse changed table a: v=%q", got)
		}

		// A first answer of 409 replays as 409, even once the requirement would hold.
		conflict := `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}],"updates":[{"action":"set-properties","updates":{"w":"x"}}]}`
		for range 2 {
			if code, body := send("POST", pa, s.Writer, conflict, "C"); code != 409 || !strings.Contains(body, "CommitFailedException") {
				t.Fatalf("a conflict and its replay: %d %s", code, body)
			}
		}

		// Unprintable keys are refused before anything is read, on both stores.
		for _, key := range []string{"\xff\xfe", "a\tb", "caf\xe9"} {
			if code, body := send("POST", pa, s.Writer, props("3"), key); code != 400 || !strings.Contains(body, "Idempotency-Key") {
				t.Fatalf("key %q: %d %s", key, code, body)
			}
		}

		// Past the advertised lifetime the key is new again.
		if life, _ := time.ParseDuration(strings.ToLower(strings.TrimPrefix(restcatalog.IdempotencyLifetime, "PT"))); life != warehouse.KeyLifetime {
			t.Fatalf("the config advertises %s, the catalog honours keys for %s", restcatalog.IdempotencyLifetime, warehouse.KeyLifetime)
		}
		clock.Add(warehouse.KeyLifetime + time.Minute)
		if code, body := send("POST", pa, s.Writer, props("4"), "K"); code != 200 {
			t.Fatalf("an expired key reused: %d %s", code, body)
		}
		if got := loadProps(t, s, pa)["v"]; got != "4" {
			t.Fatalf("after the key expired the new request was not applied: v=%q", got)
		}
	})
}

func loadProps(t *testing.T, s *testServer, path string) map[string]string {
	t.Helper()
	var out struct {
		Metadata struct {
			Properties map[string]string `json:"properties"`
		} `json:"metadata"`
	}
	if code, body := s.do(t, "GET", path, s.Token, "", &out); code != 200 {
		t.Fatalf("load %s: %d %s", path, code, body)
	}
	return out.Metadata.Properties
}
