package cli

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/tables/tablestest"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEConfigurationTable: the README's configuration table is the documentation of serve's
// flags. Every flag is in it with its environment variable and its default, and every flag it
// names exists.
func TestREADMEConfigurationTable(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var cfg serveConfig
	serveFlags(fs, &cfg)
	doc := readme(t)
	start := strings.Index(doc, "| flag | environment | default | meaning |")
	if start < 0 {
		t.Fatal("README has no configuration table")
	}
	code := regexp.MustCompile("`([^`]*)`")
	documented := map[string]bool{}
	for _, line := range strings.Split(doc[start:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Fatalf("malformed row: %s", line)
		}
		var flags []string
		for _, m := range code.FindAllStringSubmatch(cells[0], -1) {
			flags = append(flags, strings.TrimPrefix(m[1], "--"))
		}
		for i, name := range flags {
			f := fs.Lookup(name)
			if f == nil {
				t.Errorf("README documents --%s, which serve does not have", name)
				continue
			}
			documented[name] = true
			env := envInUsage.FindStringSubmatch(f.Usage)
			if env == nil {
				t.Errorf("--%s names no environment variable in its usage", name)
				continue
			}
			if !strings.Contains(cells[1], env[1]) && !strings.Contains(cells[1], "...") && !strings.Contains(cells[1], "_*") {
				t.Errorf("README row of --%s gives %s, not %s", name, cells[1], env[1])
			}
			// Defaults: the i-th code span of the default cell, or "empty".
			defs := code.FindAllStringSubmatch(cells[2], -1)
			var want string
			switch {
			case strings.HasPrefix(cells[2], "empty"):
				want = ""
			case i < len(defs):
				want = defs[i][1]
			case len(defs) == 1:
				want = defs[0][1]
			default:
				continue // described in words (e.g. "S3 Standard")
			}
			if !sameDefault(f.DefValue, want) {
				t.Errorf("README says --%s defaults to %q; it is %q", name, want, f.DefValue)
			}
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("--%s is not in the README's configuration table", f.Name)
		}
	})
}

func sameDefault(got, doc string) bool {
	if got == doc {
		return true
	}
	a, err1 := time.ParseDuration(got)
	b, err2 := time.ParseDuration(doc)
	return err1 == nil && err2 == nil && a == b
}

// readmeCommand is how the test runs a command line the README shows. The README's own text is
// the key: a line the README gains without a way to run it here fails the test.
var readmeCommands = map[string]func(e *readmeEnv) []string{
	"tidemark migrate [--dry-run]": func(e *readmeEnv) []string { return []string{"migrate", "--dry-run"} },
	"tidemark token create --name NAME --scopes write": func(e *readmeEnv) []string {
		return []string{"token", "create", "--name", "readme-writer", "--scopes", "write"}
	},
	"tidemark token list":               func(e *readmeEnv) []string { return []string{"token", "list"} },
	"tidemark token revoke --name NAME": func(e *readmeEnv) []string { return []string{"token", "revoke", "--name", "readme-writer"} },
	"go run . token create --name you --scopes admin": func(e *readmeEnv) []string {
		return []string{"token", "create", "--name", "you", "--scopes", "admin"}
	},
	"go run . token create --name quickstart --scopes write": func(e *readmeEnv) []string {
		return []string{"token", "create", "--name", "quickstart", "--scopes", "write"}
	},
	"tidemark tables register METADATA_LOCATION [--namespace NS --name NAME] [--force]": func(e *readmeEnv) []string {
		// Flags after the location, as written.
		return []string{"tables", "register", e.metadata, "--namespace", "warehouse", "--name", "orders", "--force", "--json"}
	},
	"tidemark tables sync":             func(e *readmeEnv) []string { return []string{"tables", "sync"} },
	"tidemark tables refresh ASSET_ID": func(e *readmeEnv) []string { return []string{"tables", "refresh", e.asset} },
	"tidemark tables list":             func(e *readmeEnv) []string { return []string{"tables", "list", "--json"} },
	"tidemark cleanup scan [--table ID|NAME] [--shard PREFIX,...] [--confirm-only] [--from-inventory] [--json]": func(e *readmeEnv) []string {
		return []string{"cleanup", "scan", "--table", e.asset, "--shard", "data/", "--json"}
	},
	"tidemark cleanup check-refs [--table ID|NAME] [--fresh] [--json]": func(e *readmeEnv) []string {
		return []string{"cleanup", "check-refs", "--table", e.asset, "--fresh", "--json"}
	},
	"tidemark cleanup check-refs":              func(e *readmeEnv) []string { return []string{"cleanup", "check-refs"} },
	"tidemark cleanup propose":                 func(e *readmeEnv) []string { return []string{"cleanup", "propose"} },
	"tidemark cleanup execute [--proposal ID]": func(e *readmeEnv) []string { return []string{"cleanup", "execute"} },
	"tidemark version":                         func(e *readmeEnv) []string { return []string{"version"} },
	"tidemark reconcile list":                  func(e *readmeEnv) []string { return []string{"reconcile", "list"} },
}

// Lines the end-to-end tests run as they are: serve does not return.
var readmeServed = map[string]string{
	"tidemark serve":        "TestServeEndToEnd",
	"go run . serve --demo": "TestBrowser",
	"go run . serve":        "TestServeEndToEnd",
}

type readmeEnv struct {
	metadata, asset string
}

// TestREADMECommandLines runs every command line the README shows (tidemark ... and go run .
// ...), in the order a reader meets them, against one data directory and a real Iceberg catalog.
func TestREADMECommandLines(t *testing.T) {
	doc := readme(t)
	span := regexp.MustCompile("`((?:tidemark|go run \\.) [^`]*)`|(?m)^(?:export [A-Z]+=\\$\\()?((?:tidemark|go run \\.) [^)\\n]*)")
	var lines []string
	seen := map[string]bool{}
	for _, m := range span.FindAllStringSubmatch(doc, -1) {
		line := strings.Join(strings.Fields(m[1]+m[2]), " ")
		if !seen[line] {
			seen[line] = true
			lines = append(lines, line)
		}
	}
	if len(lines) < 10 {
		t.Fatalf("found only %d command lines in the README: %q", len(lines), lines)
	}

	l := tablestest.NewLake(t)
	tbl := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 3, time.Now()))
	dir := t.TempDir()
	cfg := lakeConfig(t, l, dir)
	t.Setenv("TIDEMARK_DATA_DIR", dir)
	t.Setenv("TIDEMARK_ICEBERG_CATALOGS", cfg)
	t.Setenv("TIDEMARK_WAREHOUSE_ROOTS", l.Warehouse)
	e := &readmeEnv{metadata: tbl.MetadataLocation()}
	ran := 0
	for _, line := range lines {
		if _, ok := readmeServed[line]; ok {
			continue
		}
		mk, ok := readmeCommands[line]
		if !ok {
			t.Errorf("the README shows %q: add how to run it to readmeCommands", line)
			continue
		}
		args := mk(e)
		var out, errs strings.Builder
		if err := Run(context.Background(), args, &out, &errs, nil); err != nil {
			t.Fatalf("README %q as %q: %v\n%s%s", line, args, err, out.String(), errs.String())
		}
		ran++
		if args[0] == "tables" && args[1] == "register" {
			var reg struct {
				Table struct {
					AssetID string `json:"asset_id"`
				} `json:"table"`
			}
			if err := json.Unmarshal([]byte(out.String()), &reg); err != nil || reg.Table.AssetID == "" {
				t.Fatalf("register printed %v %s", err, out.String())
			}
			e.asset = reg.Table.AssetID
		}
		if args[0] == "tables" && args[1] == "list" {
			var list []struct {
				AssetID string `json:"asset_id"`
			}
			if err := json.Unmarshal([]byte(out.String()), &list); err != nil || len(list) != 1 || list[0].AssetID != e.asset {
				t.Fatalf("tables list: %v %s, want the registered table %s", err, out.String(), e.asset)
			}
		}
	}
	if ran == 0 {
		t.Fatal("ran no command")
	}
}
