package tables

import (
	"net/url"
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
