package tables

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckPath(t *testing.T) {
	cases := []struct {
		path string
		data bool
		ok   bool
	}{
		{"file:///wh/t/data/a.parquet", false, true},
		{"/wh/t/data/a.parquet", false, true},
		{"file:/wh/t/data/a.parquet", false, true},
		{"s3://bucket/wh/t/data/a.parquet", false, true},
		{"s3://bucket/wh/t/", false, true},
		{"file:/wh/%2e%2e/%2e%2e/x", false, false},
		{"file:/wh/db/%56-abc", false, false},
		{"file:///wh/t/data/day=2024%2D01%2D01/a.parquet", true, true}, // a partition value, escaped
		{"file:///wh/t/data/x=%2F/a.parquet", true, false},             // decodes to a separator
		{"file:///wh/t/data/%2e%2e/a.parquet", true, false},
		{"file:///wh/t/data/%2/a.parquet", true, false},
		{"file:///wh/t/../u/a.parquet", false, false},
		{"file:///wh/t/./a.parquet", false, false},
		{"file:///wh//t/a.parquet", false, false},
		{"file:///wh/t/a?/../../x", false, false},
		{"file:///wh/t/a#/../../x", false, false},
		{`file:///wh/t\..\x`, false, false},
		{"file:///wh/t/a\x00b", false, false},
		{"relative/path", false, false},
		{"s3:///nobucket/x", false, false},
		{"", false, false},
		{"1s3://b/x", false, false},
	}
	for _, c := range cases {
		err := checkPath(c.path, c.data)
		if (err == nil) != c.ok {
			t.Errorf("checkPath(%q, data=%v) = %v, want ok=%v", c.path, c.data, err, c.ok)
		}
	}
}

func TestGround(t *testing.T) {
	own, _ := parseRoot("file:///wh/t")
	nested, _ := parseRoot("file:///wh/t/sub")
	g := &Ground{location: "file:///wh/t", own: own, others: []groundOther{{root: nested, ident: "ns.sub"}}}
	cases := []struct {
		path string
		ok   bool
	}{
		{"file:///wh/t/data/a.parquet", true},
		{"/wh/t/data/a.parquet", true},
		{"file:///wh/u/data/a.parquet", false},
		{"file:///wh/t-other/a.parquet", false}, // a prefix of the name is not the directory
		{"file:///wh/t/sub/a.parquet", false},   // another live table's ground
		{"file:///wh/t/%73ub/a.parquet", false}, // the same, escaped
		{"file:///etc/passwd", false},
	}
	for _, c := range cases {
		if err := g.Check(c.path, true); (err == nil) != c.ok {
			t.Errorf("check(%q) = %v, want ok=%v", c.path, err, c.ok)
		}
	}
}

// FuzzCheckLocation: a location the check accepts reads the same literally and as a URI (as
// iceberg-go's IO parses it): no escape, query or fragment changes which file it names.
func FuzzCheckLocation(f *testing.F) {
	for _, s := range []string{"file:///wh/t", "file:/wh/%2e%2e/x", "s3://b/k/%41", "/wh/a?/../b", "file:///wh/t#x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckLocation(p) != nil {
			return
		}
		if strings.ContainsAny(p, "%?#\\") {
			t.Fatalf("accepted %q", p)
		}
		if strings.Contains(p, "://") {
			u, err := url.Parse(p)
			if err != nil {
				return // storage cannot open it either
			}
			_, rest, _ := strings.Cut(p[strings.Index(p, "://")+3:], "/")
			if u.Path != "/"+rest && !(u.Path == "" && rest == "") {
				t.Fatalf("%q reads as %q literally and %q as a URI", p, "/"+rest, u.Path)
			}
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || seg == "." {
				t.Fatalf("accepted a dot segment in %q", p)
			}
		}
	})
}

// TestResolverIsResolveLocal: the resolver (directories remembered, the last element looked up
// alone or in a listing of its directory) reads every path as resolveLocal does: links to
// directories and to files, relative links, chains, loops, missing elements, a file used as a
// directory; asked in any order, with and without listings.
func TestResolverIsResolveLocal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("wh/ns/a/data")
	mk("wh/ns/b")
	mk("other/x")
	if err := os.WriteFile(filepath.Join(dir, "wh/ns/file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(dir, "wh/ns/a/data"), "wh/ns/into-a")                // a table's location pointing into another's
	link("../../other/x", "wh/ns/rel")                                      // relative
	link("into-a", "wh/ns/chain")                                           // a link to a link
	link("loop2", "wh/ns/loop1")                                            // a loop
	link("loop1", "wh/ns/loop2")                                            //
	link(filepath.Join(dir, "wh/ns"), "wh/nsl")                             // a linked directory above the leaf
	link(filepath.Join(dir, "wh/ns/a/data/f.parquet"), "wh/ns/b/f.parquet") // a file link, dangling
	paths := []string{"wh/ns/a", "wh/ns/b", "wh/ns/into-a", "wh/ns/into-a/f.parquet", "wh/ns/rel", "wh/ns/rel/y",
		"wh/ns/chain", "wh/ns/loop1", "wh/ns/loop1/z", "wh/nsl/a", "wh/nsl/into-a", "wh/ns/b/f.parquet", "wh/ns/missing",
		"wh/missing/deeper/x", "wh/ns/file/x", "wh/ns/a/data", "wh"}
	for _, listed := range []bool{false, true} {
		res := newResolver()
		for range 2 { // the second round from what the first remembered
			for _, p := range paths {
				abs := filepath.Join(dir, p)
				if got, want := res.resolve(abs, listed), resolveLocal(abs); got != want {
					t.Errorf("listed=%v: resolve(%s) = %s, resolveLocal = %s", listed, p, got, want)
				}
			}
		}
	}
	// A table whose location links into this one's is another table's ground, here too.
	self, _ := parseRoot(filepath.Join(dir, "wh/ns/a"))
	other, err := parseRootWith(filepath.Join(dir, "wh/ns/into-a"), newResolver(), true)
	if err != nil {
		t.Fatal(err)
	}
	g := &Ground{location: filepath.Join(dir, "wh/ns/a"), own: self, others: []groundOther{{root: other, ident: "ns.into"}}, res: newResolver()}
	if err := g.Check(filepath.Join(dir, "wh/ns/a/data/f.parquet"), true); !errors.Is(err, ErrNotOwnGround) {
		t.Errorf("a file under a location another table's links to: %v, want ErrNotOwnGround", err)
	}
}
