package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/proposal"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// expiryProposal writes an open expire_snapshots proposal on a new asset, as the bot leaves it:
// with a list of n files (sizes 1000+i), or, for one opened before proposals listed their
// files, none.
func expiryProposal(t *testing.T, db *storage.DB, cat *catalog.Catalog, name string, n int, listed bool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	a, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://lake", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var bytes int64
	for i := range n {
		bytes += int64(1000 + i)
	}
	ev := fmt.Sprintf(`{"summary":"3 snapshots are older than 168h0m0s","snapshots":[11,12,13],"keep_last":2,"max_age":"168h0m0s","location":"file:///lake/%s"`, name)
	if listed {
		ev += fmt.Sprintf(`,"file_list":true,"files":%d,"bytes":%d,"age_threshold":"72h0m0s"`, n, bytes)
	}
	p, err := db.Client.Proposal.Create().SetKind(proposal.KindExpireSnapshots).SetAssetID(a.Asset.ID).SetState(proposal.StateOpen).
		SetEvidence(ev + "}").SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !listed {
			break
		}
		err := db.Client.ProposalFile.Create().SetProposalID(p.ID).SetPath(fmt.Sprintf("file:///lake/%s/metadata/snap-%03d.avro", name, i)).
			SetSize(int64(1000 + i)).SetModifiedAt(now.Add(-200 * time.Hour)).Exec(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	return p.ID
}

// TestExpiryProposalPage: an expiry proposal's page lists the files it deletes, 100 at a time,
// and downloads them all; its confirm step names the snapshots, the count and the bytes, and
// approves only with the count typed. One opened before proposals listed their files keeps the
// checkbox.
func TestExpiryProposalPage(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		srv, cat := newUI(t, db)
		id := expiryProposal(t, db, cat, "db.events", 120, true)
		page := "/proposals/" + id.String()
		first := readBody(mustGet(t, srv.Client(), srv.URL+page))
		for _, want := range []string{"Files this proposal deletes", "120 files, 124.2 KiB", "snap-000.avro", "snap-099.avro", `id="files-next"`} {
			if !strings.Contains(first, want) {
				t.Fatalf("the page lacks %q", want)
			}
		}
		next := regexp.MustCompile(`href="(/proposals/[^"]+\?after=[^"#]+)`).FindStringSubmatch(first)
		if strings.Contains(first, "snap-100.avro") || next == nil {
			t.Fatal("not paged by 100")
		}
		if second := readBody(mustGet(t, srv.Client(), srv.URL+next[1])); !strings.Contains(second, "snap-119.avro") || strings.Contains(second, "snap-099.avro") {
			t.Fatal("the second page is not the other 20 files")
		}
		r := mustGet(t, srv.Client(), srv.URL+page+"/files?format=csv")
		if body := readBody(r); r.StatusCode != 200 || strings.Count(body, "snap-") != 120 || !strings.Contains(body, "snap-119.avro,1119,") {
			t.Fatalf("csv download (%d): %.300s", r.StatusCode, body)
		}

		admin := signIn(t, srv, db, "alice", auth.ScopeAdmin)
		status, confirm := admin.get(page + "/approve")
		for _, want := range []string{"removes exactly 3 snapshots", "120 files, 124.2 KiB", "127140 bytes", `id="confirm-files"`, "Approve deleting 120 files"} {
			if status != 200 || !strings.Contains(confirm, want) {
				t.Fatalf("confirm step (%d) lacks %q", status, want)
			}
		}
		if status, _, body := admin.post(page+"/approve", url.Values{"confirm_files": {"119"}, "confirm_bytes": {"127140"}}); status != http.StatusBadRequest || !strings.Contains(body, "120 files") {
			t.Fatalf("a wrong count: %d", status)
		}
		if status, _, _ := admin.post(page+"/approve", url.Values{"confirm": {"yes"}}); status != http.StatusBadRequest {
			t.Fatalf("the checkbox alone: %d", status)
		}
		if p, _ := db.Client.Proposal.Get(context.Background(), id); p.State != proposal.StateOpen {
			t.Fatalf("approved without the right count: %s", p.State)
		}
		admin.mustPost(page+"/approve", url.Values{"confirm_files": {"120"}, "confirm_bytes": {"127140"}}, "decided")
		if p, _ := db.Client.Proposal.Get(context.Background(), id); p.State != proposal.StateApproved || p.DecidedBy != "web:alice" {
			t.Fatalf("after confirming: %s by %q", p.State, p.DecidedBy)
		}

		older := expiryProposal(t, db, cat, "db.older", 0, false)
		if _, confirm := admin.get("/proposals/" + older.String() + "/approve"); !strings.Contains(confirm, `id="confirm-box"`) || strings.Contains(confirm, `id="confirm-files"`) {
			t.Fatal("an expiry without a list should be confirmed with the checkbox")
		}
		admin.mustPost("/proposals/"+older.String()+"/approve", url.Values{"confirm": {"yes"}}, "decided")
	})
}
