package restcatalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestRegisterOverwriteAndUnregister: register with overwrite moves a served table's own
// pointer (back to an older metadata file here) and keeps its asset; another table's metadata
// under the name is refused and changes nothing. Unregister answers the table's last metadata,
// takes it out of the catalog (loads and commits find no table), marks the asset deleted and
// leaves every file; a replay with the same key answers the same; registering it again brings
// back the same asset.
func TestRegisterOverwriteAndUnregister(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := create(t, cat, "u", "a")
		tbl = s.append(t, tbl, 0, 2)
		older := tbl.MetadataLocation()
		olderSnap := tbl.CurrentSnapshot().SnapshotID
		tbl = s.append(t, tbl, 2, 2)
		latest := tbl.MetadataLocation()
		other := create(t, cat, "u", "b")
		id := assetOf(t, s, tbl)
		reg := "/iceberg/v1/main/namespaces/u/register"

		var got struct {
			MetadataLocation string          `json:"metadata-location"`
			Metadata         json.RawMessage `json:"metadata"`
		}
		if code, resp := s.do(t, "POST", reg, s.Token, fmt.Sprintf(`{"name":"a","metadata-location":%q}`, older), nil); code != 409 {
			t.Fatalf("register over a live name without overwrite: %d %s, want 409", code, resp)
		}
		code, resp := s.do(t, "POST", reg, s.Token, fmt.Sprintf(`{"name":"a","metadata-location":%q,"overwrite":true}`, other.MetadataLocation()), nil)
		if code != 409 || !strings.Contains(resp, "unregister") {
			t.Fatalf("overwrite with another table's metadata: %d %s, want 409 saying to unregister first", code, resp)
		}
		if cur, err := cat.LoadTable(ctx, table.Identifier{"u", "a"}); err != nil || cur.MetadataLocation() != latest {
			t.Fatalf("a refused overwrite moved the pointer: %v %v", cur, err)
		}
		if code, resp := s.do(t, "POST", reg, s.Token, fmt.Sprintf(`{"name":"a","metadata-location":%q,"overwrite":true}`, older), &got); code != 200 || got.MetadataLocation != older {
			t.Fatalf("overwrite with the table's older metadata: %d %s", code, resp)
		}
		cur, err := cat.LoadTable(ctx, table.Identifier{"u", "a"})
		if err != nil || cur.MetadataLocation() != older || cur.CurrentSnapshot().SnapshotID != olderSnap {
			t.Fatalf("after overwrite the table is %v (err %v), want it at %s, snapshot %d", cur, err, older, olderSnap)
		}
		if again := assetOf(t, s, cur); again != id {
			t.Fatalf("overwrite gave the table asset %s, want %s", again, id)
		}

		unreg := "/iceberg/v1/main/namespaces/u/tables/a/unregister"
		if code, resp := s.do(t, "POST", unreg, s.Writer, "", nil); code != 403 || !strings.Contains(resp, "ForbiddenException") {
			t.Fatalf("unregister with a write token: %d %s, want 403", code, resp)
		}
		key := map[string]string{"Idempotency-Key": "unregister-u-a"}
		if code, resp := s.doWith(t, "POST", unreg, s.Token, "", key, &got); code != 200 || got.MetadataLocation != older {
			t.Fatalf("unregister: %d %s, want 200 with metadata-location %s", code, resp, older)
		}
		if meta, err := table.ParseMetadataBytes(got.Metadata); err != nil || meta.CurrentSnapshot().SnapshotID != olderSnap {
			t.Fatalf("unregister answered metadata %v (err %v), want the table's last", meta, err)
		}
		if code, resp := s.doWith(t, "POST", unreg, s.Token, "", key, &got); code != 200 || got.MetadataLocation != older {
			t.Fatalf("a replayed unregister: %d %s, want the first answer", code, resp)
		}
		if code, resp := s.do(t, "POST", "/iceberg/v1/main/namespaces/u/tables/zz/unregister", s.Token, "", nil); code != 404 || !strings.Contains(resp, "NoSuchTableException") {
			t.Fatalf("unregister of a missing table: %d %s, want 404 NoSuchTableException", code, resp)
		}
		if _, err := cat.LoadTable(ctx, table.Identifier{"u", "a"}); !errors.Is(err, icecat.ErrNoSuchTable) {
			t.Fatalf("load after unregister: %v, want no such table", err)
		}
		if _, _, err := cat.CommitTable(ctx, table.Identifier{"u", "a"}, nil, []table.Update{table.NewSetPropertiesUpdate(map[string]string{"k": "v"})}); err == nil {
			t.Fatal("a commit after unregister succeeded")
		}
		a, err := s.App.Catalog.Get(ctx, id)
		if err != nil || a.DeletedAt == nil {
			t.Fatalf("after unregister the asset is %+v (err %v), want it marked deleted", a, err)
		}
		for _, loc := range []string{older, latest} {
			u, _ := url.Parse(loc)
			if _, err := os.Stat(u.Path); err != nil {
				t.Fatalf("unregister touched %s: %v", loc, err)
			}
		}
		var commits struct {
			Items []struct {
				Kind string `json:"kind"`
			} `json:"items"`
		}
		if code, resp := s.do(t, "GET", "/api/v1/tables/"+id.String()+"/commits", s.Token, "", &commits); code != 200 || len(commits.Items) == 0 || commits.Items[0].Kind != "unregister" {
			t.Fatalf("commits after unregister: %d %s, want the newest of kind unregister", code, resp)
		}

		if code, resp := s.do(t, "POST", reg, s.Token, fmt.Sprintf(`{"name":"a","metadata-location":%q}`, latest), &got); code != 200 {
			t.Fatalf("registering the unregistered table again: %d %s", code, resp)
		}
		back, err := cat.LoadTable(ctx, table.Identifier{"u", "a"})
		if err != nil {
			t.Fatal(err)
		}
		if again := assetOf(t, s, back); again != id {
			t.Fatalf("registered again, the table has asset %s, want its own %s", again, id)
		}
	})
}

// TestLoadSnapshotsRefs: snapshots=refs answers only the snapshots a branch or tag points at,
// under an ETag of its own; all (the default) answers every one.
func TestLoadSnapshotsRefs(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServer(t, db)
		cat := s.client(t)
		tbl := create(t, cat, "r", "t")
		tbl = s.append(t, tbl, 0, 1)
		tagged := tbl.CurrentSnapshot().SnapshotID
		tbl = s.append(t, tbl, 1, 1)
		tbl = s.append(t, tbl, 2, 1)
		head := tbl.CurrentSnapshot().SnapshotID
		if _, _, err := cat.CommitTable(ctx, table.Identifier{"r", "t"}, nil, []table.Update{
			table.NewSetSnapshotRefUpdate("v1", tagged, table.TagRef, -1, -1, -1)}); err != nil {
			t.Fatalf("tag: %v", err)
		}
		load := func(mode, inm string) (int, []int64, string, string) {
			t.Helper()
			path := "/iceberg/v1/main/namespaces/r/tables/t"
			if mode != "" {
				path += "?snapshots=" + mode
			}
			h := map[string]string{}
			if inm != "" {
				h["If-None-Match"] = inm
			}
			req := s.request(t, "GET", path, s.Token, h)
			if req.code != 200 {
				return req.code, nil, req.etag, req.body
			}
			var out struct {
				Metadata json.RawMessage `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(req.body), &out); err != nil {
				t.Fatal(err)
			}
			meta, err := table.ParseMetadataBytes(out.Metadata)
			if err != nil {
				t.Fatalf("snapshots=%s: the metadata does not parse: %v", mode, err)
			}
			var ids []int64
			for _, sn := range meta.Snapshots() {
				ids = append(ids, sn.SnapshotID)
			}
			return 200, ids, req.etag, req.body
		}
		code, all, allTag, body := load("", "")
		if code != 200 || len(all) != 3 {
			t.Fatalf("a plain load: %d, snapshots %v, want all 3: %s", code, all, body)
		}
		code, refs, refsTag, body := load("refs", "")
		if code != 200 || len(refs) != 2 || !slices.Contains(refs, head) || !slices.Contains(refs, tagged) {
			t.Fatalf("snapshots=refs: %d, snapshots %v, want the head %d and the tag %d only: %s", code, refs, head, tagged, body)
		}
		if allTag == "" || refsTag == allTag {
			t.Fatalf("ETags: all %q, refs %q; want two distinct ones", allTag, refsTag)
		}
		if code, _, _, _ := load("refs", refsTag); code != 304 {
			t.Fatalf("snapshots=refs with its own ETag: %d, want 304", code)
		}
		if code, _, _, _ := load("refs", allTag); code != 200 {
			t.Fatalf("snapshots=refs with the ETag of all: %d, want 200", code)
		}
		if code, _, _, body := load("some", ""); code != 400 {
			t.Fatalf("snapshots=some: %d %s, want 400", code, body)
		}
	})
}

// request sends a bodiless request with headers and returns what came back.
func (s *testServer) request(t *testing.T, method, path, token string, header map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{code: resp.StatusCode, etag: resp.Header.Get("ETag"), body: string(b)}
}

// answer is a response's status, ETag and body.
type answer struct {
	code       int
	etag, body string
}

// TestNameLayout: a warehouse with the name layout puts a new table at
// <warehouse>/<levels>/<name>; a table whose directory would hold a live table's is still
// refused, one re-created under a dropped table's name takes its directory again, and one
// under an unregistered table's name is refused (its files stay its own).
func TestNameLayout(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
			c.Tables = []tables.Option{tables.WithWarehouses(tables.Warehouse{Name: "main", Location: filepath.Join(t.TempDir(), "wh"), Layout: tables.LayoutName})}
		})
		cat := s.client(t)
		tbl := create(t, cat, "n", "t")
		wh := s.App.Tables.Warehouses()[0].Location
		if want := wh + "/n/t"; tbl.Location() != want {
			t.Fatalf("a table in the name layout is at %s, want %s", tbl.Location(), want)
		}
		if err := cat.CreateNamespace(ctx, table.Identifier{"n", "t"}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cat.CreateTable(ctx, table.Identifier{"n", "t", "x"}, tablestest.Schema); err == nil || !strings.Contains(err.Error(), "overlaps") {
			t.Fatalf("a table inside live table n.t's directory: %v, want refused as overlapping", err)
		}
		if err := cat.DropTable(ctx, table.Identifier{"n", "t"}); err != nil {
			t.Fatal(err)
		}
		again := create(t, cat, "n", "t")
		if again.Location() != tbl.Location() || again.Metadata().TableUUID() == tbl.Metadata().TableUUID() {
			t.Fatalf("re-created n.t is %s at %s, want a new table at %s", again.Metadata().TableUUID(), again.Location(), tbl.Location())
		}
		// An unregistered table's files stay, perhaps another catalog's now: its directory is
		// not given to a new table.
		if code, resp := s.do(t, "POST", "/iceberg/v1/main/namespaces/n/tables/t/unregister", s.Token, "", nil); code != 200 {
			t.Fatalf("unregister: %d %s", code, resp)
		}
		if _, err := cat.CreateTable(ctx, table.Identifier{"n", "t"}, tablestest.Schema); err == nil || !strings.Contains(err.Error(), "unregistered") {
			t.Fatalf("a table created where an unregistered one is: %v, want refused", err)
		}
	})
}
