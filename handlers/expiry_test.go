package handlers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/ent/proposal"
)

// TestExpiryProposalAPI: an expiry proposal that lists its files says so (evidence.file_list,
// confirm_required, file_count, file_bytes), pages and downloads its files like an orphan
// proposal, and is approved only with confirm_files and confirm_bytes equal to its list; one
// opened before proposals listed their files is approved without them.
func TestExpiryProposalAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		ctx := context.Background()
		cat := mustCatalog(t, s.DB)
		open := func(name string, files int) string {
			t.Helper()
			a, err := cat.Create(ctx, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "iceberg://lake", Name: name})
			if err != nil {
				t.Fatal(err)
			}
			ev := `{"summary":"2 snapshots to expire","snapshots":[11,12],"keep_last":2,"max_age":"168h0m0s"`
			if files > 0 {
				ev += fmt.Sprintf(`,"file_list":true,"files":%d,"bytes":%d,"age_threshold":"72h0m0s"`, files, 100*files)
			}
			now := time.Now().UTC()
			p, err := s.DB.Client.Proposal.Create().SetKind(proposal.KindExpireSnapshots).SetAssetID(a.Asset.ID).SetState(proposal.StateOpen).
				SetEvidence(ev + "}").SetCreatedAt(now).SetUpdatedAt(now).Save(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range files {
				if err := s.DB.Client.ProposalFile.Create().SetProposalID(p.ID).SetPath(fmt.Sprintf("file:///lake/%s/metadata/snap-%d.avro", name, i)).
					SetSize(100).SetModifiedAt(now.Add(-200 * time.Hour)).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			return p.ID.String()
		}
		pid := open("db.events", 3)
		var p struct {
			proposalBody
			ConfirmRequired bool `json:"confirm_required"`
			Evidence        struct {
				FileList bool  `json:"file_list"`
				Files    int64 `json:"files"`
				Bytes    int64 `json:"bytes"`
			} `json:"evidence"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid}).decode(t, &p)
		if !p.ConfirmRequired || !p.Evidence.FileList || p.FileCount != 3 || p.FileBytes != 300 || p.Evidence.Files != 3 || p.Evidence.Bytes != 300 {
			t.Fatalf("proposal: %+v", p)
		}
		var page struct {
			Items []struct {
				Path  string `json:"path"`
				State string `json:"state"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?limit=2"}).decode(t, &page)
		if len(page.Items) != 2 || page.NextCursor == "" || page.Items[0].State != "pending" {
			t.Fatalf("first page: %+v", page)
		}
		cursor := page.NextCursor
		page.Items, page.NextCursor = nil, ""
		s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?limit=2&cursor=" + cursor}).decode(t, &page)
		if len(page.Items) != 1 || page.NextCursor != "" {
			t.Fatalf("second page: %+v", page)
		}
		if csv := string(s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + pid + "/files?format=csv"}).body); strings.Count(csv, "snap-") != 3 {
			t.Fatalf("csv: %s", csv)
		}
		for _, body := range []map[string]any{{}, {"confirm_files": 3}, {"confirm_files": 2, "confirm_bytes": 300}, {"confirm_files": 3, "confirm_bytes": 299}} {
			s.must(t, 400, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: s.Admin, body: body})
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/proposals/" + pid + "/approve", token: s.Admin,
			body: map[string]any{"confirm_files": 3, "confirm_bytes": 300}}).decode(t, &p)
		if p.State != "approved" || p.DecidedBy != "token:admin" {
			t.Fatalf("approved: %+v", p)
		}
		older := open("db.older", 0)
		p.ConfirmRequired = false
		s.must(t, 200, req{method: "GET", path: "/api/v1/proposals/" + older}).decode(t, &p)
		if p.ConfirmRequired {
			t.Fatalf("an expiry without a list needs no confirmation: %+v", p)
		}
		s.must(t, 200, req{method: "POST", path: "/api/v1/proposals/" + older + "/approve", token: s.Admin})
	})
}
