package cleanup

import (
	"os"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/google/uuid"
)

// FuzzMetadataUUID: a metadata file found under a table location is outside input; reading its
// table-uuid never panics, and what it returns is a UUID.
func FuzzMetadataUUID(f *testing.F) {
	f.Add([]byte(`{"format-version":2,"table-uuid":"9C12D441-03FE-4693-9A96-A0705DDF69C1","location":"s3://b/t"}`))
	f.Add([]byte(`{"location":"x","snapshots":[{"a":[1,2,{"b":null}]}],"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`))
	f.Add([]byte(`{"table-uuid":42}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"format-version":2`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body []byte) {
		p := filepath.Join(dir, "00001-x.metadata.json")
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
		id, err := metadataUUID(icebergio.LocalFS{}, p)
		if err != nil {
			return
		}
		u, perr := uuid.Parse(id)
		if perr != nil || u.String() != id {
			t.Fatalf("returned %q, not a lower-case UUID", id)
		}
	})
}

func TestMetadataUUID(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		body string
		want string
	}{
		"first key":     {`{"table-uuid":"9C12D441-03FE-4693-9A96-A0705DDF69C1"}`, "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
		"after arrays":  {`{"schemas":[{"fields":[]}],"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}`, "9c12d441-03fe-4693-9a96-a0705ddf69c1"},
		"missing":       {`{"location":"s3://b/t"}`, ""},
		"not a uuid":    {`{"table-uuid":"orders"}`, ""},
		"not an object": {`"x"`, ""},
		"truncated":     {`{"location":"s3://b/t",`, ""},
	} {
		p := filepath.Join(dir, name+".metadata.json")
		if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := metadataUUID(icebergio.LocalFS{}, p)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
}
