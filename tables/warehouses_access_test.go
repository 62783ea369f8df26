package tables

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWarehouseAccessSettings: per-warehouse settings from the configuration file are checked
// and completed; a bad one names the warehouse and what to fix.
func TestWarehouseAccessSettings(t *testing.T) {
	keys := map[string]string{"s3.endpoint": "http://127.0.0.1:9000/", "s3.region": "eu-west-1", "s3.access-key-id": "k", "s3.secret-access-key": "s"}
	cfg := `{"warehouses": [{"name": "lake", "location": "s3://lake/wh", "io_properties": {"s3.endpoint": "http://127.0.0.1:9000/",
	  "s3.region": "eu-west-1", "s3.access-key-id": "k", "s3.secret-access-key": "s"}, "layout": "name",
	  "access": {"vend": "sts", "role_arn": "arn:aws:iam::1:role/r", "session_duration": "2h", "remote_signing": true}}]}`
	p := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, _, n, err := LoadConfigWarehouses(p)
	if err != nil || n != 1 {
		t.Fatalf("load: %d %v", n, err)
	}
	s := &Service{}
	for _, o := range opts {
		o(s)
	}
	if err := s.checkWarehouses(); err != nil {
		t.Fatal(err)
	}
	w := s.warehouses[0]
	if w.Layout != LayoutName || w.Access.SessionDuration != 2*time.Hour || w.Storage.Endpoint != "http://127.0.0.1:9000" || w.Storage.Region != "eu-west-1" ||
		!*w.Storage.PathStyle || w.Props["s3.secret-access-key"] != "s" {
		t.Fatalf("completed %+v", w)
	}
	cc := w.ClientConfig()
	if cc["s3.endpoint"] != "http://127.0.0.1:9000" || cc["client.region"] != "eu-west-1" || cc["s3.path-style-access"] != "true" || len(cc) != 5 {
		t.Fatalf("client config %v", cc)
	}
	for _, tc := range []struct {
		name string
		w    Warehouse
		want string
	}{
		{"BadLayout", Warehouse{Layout: "flat"}, "layout"},
		{"BadVend", Warehouse{Access: Access{Vend: "root"}}, "vend"},
		{"STSWithoutRole", Warehouse{Access: Access{Vend: VendSTS}}, "role_arn"},
		{"RoleWithoutSTS", Warehouse{Access: Access{RoleARN: "arn"}}, "vend is not sts"},
		{"ShortSession", Warehouse{Access: Access{Vend: VendSTS, RoleARN: "a", SessionDuration: time.Minute}}, "15m to 12h"},
		{"LongSession", Warehouse{Access: Access{Vend: VendSTS, RoleARN: "a", SessionDuration: 13 * time.Hour}}, "15m to 12h"},
		{"BadEndpoint", Warehouse{Storage: StorageSettings{Endpoint: "ftp://x"}}, "storage endpoint"},
		{"EndpointWithPath", Warehouse{Storage: StorageSettings{Endpoint: "https://x/bucket"}}, "storage endpoint"},
		{"SigningLocal", Warehouse{Location: "file:///srv/wh", Access: Access{RemoteSigning: true}}, "S3 locations"},
		{"KeysWithoutKeys", Warehouse{Access: Access{Vend: VendKeys}, Props: map[string]string{}}, "s3.access-key-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			w.Name = "lake"
			if w.Location == "" {
				w.Location = "s3://lake/wh"
			}
			if w.Props == nil {
				w.Props = keys
			}
			if err := completeAccess(&w); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "lake") {
				t.Fatalf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}
