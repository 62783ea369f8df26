package handlers_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestOpenAPILint: the document passes the checks @redocly/cli's recommended rules found failing:
// nullable always has a type beside it, public operations say security: [], servers is set, and
// the OpenLineage body is described.
func TestOpenAPILint(t *testing.T) {
	s := startServer(t, storagetest.Open(t, storagetest.Backends[0]), nil)
	b, err := json.Marshal(s.API.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []map[string]any                     `json:"servers"`
		Paths   map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) == 0 {
		t.Error("no servers")
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["nullable"] == true && x["type"] == nil {
				t.Errorf("%s: nullable without type", path)
			}
			for k, c := range x {
				walk(path+"/"+k, c)
			}
		case []any:
			for _, c := range x {
				walk(path+"[]", c)
			}
		}
	}
	var all any
	_ = json.Unmarshal(b, &all)
	walk("#", all)
	for _, tc := range []struct{ path, method string }{{"/healthz", "get"}, {"/api/openapi.json", "get"}, {"/metrics", "get"}} {
		op := doc.Paths[tc.path][tc.method]
		if sec, ok := op["security"].([]any); !ok || len(sec) != 0 {
			t.Errorf("%s %s: security %v, want []", tc.method, tc.path, op["security"])
		}
	}
	body, _ := json.Marshal(doc.Paths["/api/v1/lineage"]["post"]["requestBody"])
	if !strings.Contains(string(body), `"eventTime"`) || !strings.Contains(string(body), `"runId"`) {
		t.Errorf("the lineage body is not described: %s", body)
	}
}
