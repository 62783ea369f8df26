package catalog_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/catalog"
)

// TestAuditChanges: an audit event reads as the fields it changed, before and after.
func TestAuditChanges(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		want          []catalog.AuditChange
	}{
		{"Rename", `{"name":"orders","namespace":"db","version":3}`, `{"name":"sales_orders","namespace":"db","version":4}`,
			[]catalog.AuditChange{{Field: "name", Before: "orders", After: "sales_orders"}, {Field: "version", Before: "3", After: "4"}}},
		{"Nested", `{"owner":{"principal":"a","role":"x"}}`, `{"owner":{"principal":"a","role":"y"}}`,
			[]catalog.AuditChange{{Field: "owner.role", Before: "x", After: "y"}}},
		{"OnlyAfter", ``, `{"proposal_id":"p1","files":["a","b"]}`,
			[]catalog.AuditChange{{Field: "files", After: `["a","b"]`}, {Field: "proposal_id", After: "p1"}}},
		{"Removed", `{"description":"old","status":"active"}`, `{"status":"active"}`,
			[]catalog.AuditChange{{Field: "description", Before: "old"}}},
		{"Scalar", `"a"`, `"b"`, []catalog.AuditChange{{Field: "value", Before: "a", After: "b"}}},
		{"NothingChanged", `{"a":1}`, `{"a":1}`, nil},
		{"EmptyIsNoValue", ``, `{"description":"","kind":"table"}`, []catalog.AuditChange{{Field: "kind", After: "table"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := catalog.AuditEvent{Before: json.RawMessage(tc.before), After: json.RawMessage(tc.after)}
			if got := ev.Changes(); !slices.Equal(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestAuditFilters: the audit log filters by actor, action (exact or family) and asset.
func TestAuditFilters(t *testing.T) {
	eachBackend(t, func(t *testing.T, e env) {
		ctx := context.Background()
		alice := catalog.WithActor(ctx, "web:alice")
		a, err := e.cat.Create(alice, catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "orders"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.cat.Create(catalog.WithActor(ctx, "token:ci"), catalog.CreateInput{Kind: catalog.KindTable, Namespace: "db", Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.cat.Rename(alice, a.Asset.ID, catalog.AnyVersion, "db", "sales_orders"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			f    catalog.AuditFilter
			want []string // actions, newest first
		}{
			{"All", catalog.AuditFilter{}, []string{"asset.rename", "asset.create", "asset.create"}},
			{"Actor", catalog.AuditFilter{Actor: "token:ci"}, []string{"asset.create"}},
			{"ActionExact", catalog.AuditFilter{Action: "asset.rename"}, []string{"asset.rename"}},
			{"ActionFamily", catalog.AuditFilter{Action: "asset"}, []string{"asset.rename", "asset.create", "asset.create"}},
			{"ActionFamilyIsNotAPrefix", catalog.AuditFilter{Action: "ass"}, nil},
			{"Asset", catalog.AuditFilter{AssetID: a.Asset.ID}, []string{"asset.rename", "asset.create"}},
			{"ActorAndAsset", catalog.AuditFilter{Actor: "web:alice", AssetID: b.Asset.ID}, nil},
			{"Limit", catalog.AuditFilter{Limit: 1}, []string{"asset.rename"}},
			{"Unknown", catalog.AuditFilter{AssetID: uuid.New()}, nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				evs, err := e.cat.AuditEvents(ctx, tc.f)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, ev := range evs {
					got = append(got, ev.Action)
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	})
}
