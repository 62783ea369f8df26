package handlers_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestOpenAPIRedocly: the served OpenAPI document lints clean under @redocly/cli's
// recommended rules: no error and no warning. It needs node and
// `npm ci --prefix handlers/testdata/redocly` (.ci/run does both); it skips without them only
// outside CI.
func TestOpenAPIRedocly(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "redocly"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	cli := filepath.Join(dir, "node_modules", "@redocly", "cli", "bin", "cli.js")
	if _, serr := os.Stat(cli); err != nil || serr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs node and @redocly/cli: install node and run npm ci --prefix handlers/testdata/redocly (node: %v, module: %v)", err, serr)
		}
		t.Skip("node or @redocly/cli is missing: run npm ci --prefix handlers/testdata/redocly to run this test")
	}
	s := startServer(t, storagetest.Open(t, storagetest.Backends[0]), nil)
	b, err := json.MarshalIndent(s.API.OpenAPI(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, cli, "lint", "--extends=recommended", "--format=stylish", "--max-problems=1000",
		"--skip-rule=info-license", doc) // the project states no license yet: the document cannot name one
	cmd.Dir = t.TempDir() // no redocly.yaml of anyone's but the flags
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	t.Logf("redocly lint:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("valid")) || bytes.Contains(out, []byte(" warning ")) {
		t.Fatalf("@redocly/cli lint found errors in the OpenAPI document (above): %v", err)
	}
}
