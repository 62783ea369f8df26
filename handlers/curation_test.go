package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// TestCurationAPI: a classification made by an admin, columns from a source, a tag on an
// upstream column suggested downstream through column lineage and accepted by a person, column
// docs and glossary terms with optimistic concurrency, and bad input refused with nothing written.
func TestCurationAPI(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *testServer) {
		up, down := createEmailLineage(t, s)
		putPIIClassification(t, s)
		email, version := readEmailColumn(t, s, up)
		checkLabelsRefused(t, s, up, email, version)
		tagUpstreamEmail(t, s, up, email, version)
		acceptSuggestedTag(t, s, down, email)
		checkColumnDocs(t, s, up, email)
		checkGlossary(t, s, up)
		checkLabelRemoval(t, s, up, email)
		checkSchemaHistory(t, s, up)
	})
}

// createEmailLineage creates two assets with columns and a masking column edge from one email to the other.
func createEmailLineage(t *testing.T, s *testServer) (up, down asset) {
	t.Helper()
	ctx := context.Background()
	cat := mustCatalog(t, s.DB)
	up, down = s.createAsset(t, "shop", "customers"), s.createAsset(t, "mart", "customer_emails")
	upID, downID := uuid.MustParse(up.ID), uuid.MustParse(down.ID)
	for id, cols := range map[uuid.UUID][]catalog.ColumnInput{
		upID:   {{Path: "id", Type: "BIGINT"}, {Path: "email", Type: "STRING"}},
		downID: {{Path: "email_hash", Type: "STRING"}},
	} {
		if _, err := cat.SyncColumns(ctx, id, catalog.SchemaInput{Source: catalog.SourceOpenLineage, Columns: cols}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	if err := s.DB.Client.ColumnEdge.Create().SetOutAssetID(downID).SetOutField("email_hash").SetInAssetID(upID).SetInField("email").
		SetTransformationType("DIRECT").SetTransformationSubtype("TRANSFORMATION").SetMasking(true).SetFirstSeen(now).SetLastSeen(now).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return up, down
}

// putPIIClassification checks only an admin may define the pii classification, then defines it.
func putPIIClassification(t *testing.T, s *testServer) {
	t.Helper()
	// Classifications are an admin's.
	pii := map[string]any{"description": "personal data", "values": []string{"email", "phone"}}
	s.must(t, http.StatusForbidden, req{method: "PUT", path: "/api/v1/classifications/pii", body: pii, token: s.Write})
	s.must(t, http.StatusBadRequest, req{method: "PUT", path: "/api/v1/classifications/pii", body: map[string]any{"values": []string{}}, token: s.Admin})
	s.must(t, http.StatusOK, req{method: "PUT", path: "/api/v1/classifications/pii", body: pii, token: s.Admin})
}

// readEmailColumn lists the upstream columns and returns the email column's id and the asset's version.
func readEmailColumn(t *testing.T, s *testServer, up asset) (string, int64) {
	t.Helper()
	var cols struct {
		Version int64 `json:"version"`
		Columns []struct {
			ID     string `json:"id"`
			Path   string `json:"path"`
			Labels []struct {
				Value, Source string
			} `json:"labels"`
		} `json:"columns"`
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + up.ID + "/columns", token: s.Read}).decode(t, &cols)
	if len(cols.Columns) != 2 || cols.Columns[1].Path != "email" {
		t.Fatalf("columns = %+v", cols)
	}
	return cols.Columns[1].ID, cols.Version
}

// checkLabelsRefused checks bad labels are refused with nothing written, and a reader may not label.
func checkLabelsRefused(t *testing.T, s *testServer, up asset, email string, version int64) {
	t.Helper()
	before := s.counts(t)
	for _, tc := range []struct {
		name   string
		body   any
		match  string
		status int
	}{
		{"NotInClassification", map[string]any{"column_id": email, "kind": "tag", "value": "pii.shoe_size"}, "", 400},
		{"BadKind", map[string]any{"kind": "colour", "value": "red"}, "", 400},
		{"UnknownColumn", map[string]any{"column_id": uuid.NewString(), "kind": "tag", "value": "x"}, "", 404},
		// A version the asset never had (an older one would land: the change since, the schema
		// sync, touched nothing this label depends on; see catalog.TestFieldConflicts).
		{"Stale", map[string]any{"column_id": email, "kind": "tag", "value": "pii.email"}, fmt.Sprintf(`"%d"`, version+1), 412},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.match != "" {
				h["If-Match"] = tc.match
			}
			s.must(t, tc.status, req{method: "POST", path: "/api/v1/assets/" + up.ID + "/labels", body: tc.body, token: s.Write, headers: h})
		})
	}
	if after := s.counts(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("refused labels wrote rows: %v -> %v", before, after)
	}
	s.must(t, http.StatusForbidden, req{method: "POST", path: "/api/v1/assets/" + up.ID + "/labels", token: s.Read,
		body: map[string]any{"column_id": email, "kind": "tag", "value": "pii.email"}})
}

// tagUpstreamEmail tags the upstream email column pii.email at the asset's version.
func tagUpstreamEmail(t *testing.T, s *testServer, up asset, email string, version int64) {
	t.Helper()
	s.must(t, http.StatusOK, req{method: "POST", path: "/api/v1/assets/" + up.ID + "/labels", token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, version)},
		body:    map[string]any{"column_id": email, "kind": "tag", "value": "pii.email"}})
}

// acceptSuggestedTag checks the tag is suggested downstream, accepts it once and checks the propagated label.
func acceptSuggestedTag(t *testing.T, s *testServer, down asset, email string) {
	t.Helper()
	var sug struct {
		Version     int64 `json:"version"`
		Suggestions []struct {
			Column, Tag  string
			FromColumnID string `json:"from_column_id"`
			Masking      bool
		} `json:"suggestions"`
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + down.ID + "/suggestions", token: s.Read}).decode(t, &sug)
	if len(sug.Suggestions) != 1 || sug.Suggestions[0].Column != "email_hash" || sug.Suggestions[0].FromColumnID != email || !sug.Suggestions[0].Masking {
		t.Fatalf("suggestions = %+v", sug)
	}
	accept := map[string]any{"column": "email_hash", "tag": "pii.email", "from_column_id": email}
	s.must(t, http.StatusOK, req{method: "POST", path: "/api/v1/assets/" + down.ID + "/suggestions/accept", body: accept, token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, sug.Version)}})
	s.must(t, http.StatusConflict, req{method: "POST", path: "/api/v1/assets/" + down.ID + "/suggestions/accept", body: accept, token: s.Write})
	var labels struct {
		Labels []struct {
			Column, Value, Source string
			FromColumnID          string `json:"from_column_id"`
		} `json:"labels"`
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + down.ID + "/labels", token: s.Read}).decode(t, &labels)
	if len(labels.Labels) != 1 || labels.Labels[0].Column != "email_hash" || labels.Labels[0].Source != "propagation" || labels.Labels[0].FromColumnID != email {
		t.Fatalf("downstream labels = %+v", labels)
	}
}

// checkColumnDocs checks a column's doc is written only with the asset's current version in If-Match.
func checkColumnDocs(t *testing.T, s *testServer, up asset, email string) {
	t.Helper()
	// Column docs with If-Match.
	var cur asset
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + up.ID, token: s.Read}).decode(t, &cur)
	doc := map[string]any{"description": "Where we *email* the customer."}
	s.must(t, http.StatusPreconditionRequired, req{method: "PATCH", path: "/api/v1/assets/" + up.ID + "/columns/" + email, body: doc, token: s.Write})
	s.must(t, http.StatusPreconditionFailed, req{method: "PATCH", path: "/api/v1/assets/" + up.ID + "/columns/" + email, body: doc, token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, cur.Version+1)}})
	s.must(t, http.StatusOK, req{method: "PATCH", path: "/api/v1/assets/" + up.ID + "/columns/" + email, body: doc, token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, cur.Version)}})
}

// checkGlossary creates and edits a glossary term, links it to the upstream asset and checks the link.
func checkGlossary(t *testing.T, s *testServer, up asset) {
	t.Helper()
	var term struct {
		ID      string `json:"id"`
		Version int64  `json:"version"`
		Name    string `json:"name"`
	}
	s.must(t, http.StatusBadRequest, req{method: "POST", path: "/api/v1/glossary", body: map[string]any{"name": " padded"}, token: s.Write})
	s.must(t, http.StatusCreated, req{method: "POST", path: "/api/v1/glossary", body: map[string]any{"name": "Customer", "definition": "Someone who bought."}, token: s.Write}).decode(t, &term)
	s.must(t, http.StatusConflict, req{method: "POST", path: "/api/v1/glossary", body: map[string]any{"name": "customer"}, token: s.Write})
	edit := map[string]any{"name": "Customer", "definition": "Someone who bought at least once."}
	s.must(t, http.StatusPreconditionFailed, req{method: "PUT", path: "/api/v1/glossary/" + term.ID, body: edit, token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, term.Version+1)}})
	s.must(t, http.StatusOK, req{method: "PUT", path: "/api/v1/glossary/" + term.ID, body: edit, token: s.Write,
		headers: map[string]string{"If-Match": fmt.Sprintf(`"%d"`, term.Version)}})
	s.must(t, http.StatusOK, req{method: "POST", path: "/api/v1/assets/" + up.ID + "/labels", token: s.Write,
		body: map[string]any{"kind": "term", "value": term.ID}})
	var links struct {
		Links []struct {
			AssetID  string `json:"asset_id"`
			TermName string `json:"term_name"`
		} `json:"links"`
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/glossary/" + term.ID + "/links", token: s.Read}).decode(t, &links)
	if len(links.Links) != 1 || links.Links[0].TermName != "Customer" {
		t.Fatalf("links = %+v", links)
	}
}

// checkLabelRemoval removes the email tag by kind, value and column and checks the label history keeps it.
func checkLabelRemoval(t *testing.T, s *testServer, up asset, email string) {
	t.Helper()
	// Removing: by kind, value and column.
	s.must(t, http.StatusNotFound, req{method: "DELETE", path: "/api/v1/assets/" + up.ID + "/labels?kind=tag&value=pii.phone&column_id=" + email, token: s.Write})
	s.must(t, http.StatusOK, req{method: "DELETE", path: "/api/v1/assets/" + up.ID + "/labels?kind=tag&value=" + url.QueryEscape("pii.email") + "&column_id=" + email, token: s.Write})
	var hist struct {
		Labels []struct {
			RemovedAt *time.Time `json:"removed_at"`
		} `json:"labels"`
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + up.ID + "/labels?history=true", token: s.Read}).decode(t, &hist)
	if len(hist.Labels) != 2 || hist.Labels[0].RemovedAt == nil {
		t.Fatalf("label history = %+v", hist)
	}
}

// checkSchemaHistory checks the upstream asset's schema history has the one change that added its columns.
func checkSchemaHistory(t *testing.T, s *testServer, up asset) {
	t.Helper()
	var sch struct {
		Changes []struct {
			Changes []struct{ Op, Path string }
		}
	}
	s.must(t, http.StatusOK, req{method: "GET", path: "/api/v1/assets/" + up.ID + "/schema/history", token: s.Read}).decode(t, &sch)
	if len(sch.Changes) != 1 || len(sch.Changes[0].Changes) != 2 || sch.Changes[0].Changes[0].Op != "added" {
		t.Fatalf("schema history = %+v", sch)
	}
}
