package tables_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
)

// TestRegisterReadsOnlyWarehouseFiles is what a write token could do with a metadata location:
// read devices, FIFOs and files outside the warehouse, learn their first bytes, or make the
// server use its own cloud credentials. Each is refused as invalid input, says why, echoes no
// content and writes nothing.
func TestRegisterReadsOnlyWarehouseFiles(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		l := tablestest.NewLake(t)
		c := &clock{t: t0}
		tbl := l.Append(l.Create("db.orders", nil), tablestest.Rows(0, 3, t0))
		metaPath := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
		metaDir := filepath.Dir(metaPath)

		fifo := filepath.Join(l.Warehouse, "pipe.metadata.json")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		secret := filepath.Join(l.Warehouse, "secret.metadata.json")
		if err := os.WriteFile(secret, []byte("SECRET-TOKEN-1234"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(l.Warehouse, "passwd.metadata.json")
		if err := os.Symlink("/etc/passwd", link); err != nil {
			t.Fatal(err)
		}
		// Real metadata whose manifest list is a device, and real metadata whose table location
		// is the filesystem root (the cleanup bot would list and clean it).
		crafted := func(name string, edit func(m map[string]any)) string {
			b, err := os.ReadFile(metaPath)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			if b, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(metaDir, name)
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return "file://" + p
		}
		zeroList := crafted("99999-zero.metadata.json", func(m map[string]any) {
			for _, s := range m["snapshots"].([]any) {
				s.(map[string]any)["manifest-list"] = "/dev/zero"
			}
		})
		rootLoc := crafted("99998-root.metadata.json", func(m map[string]any) { m["location"] = "file:///" })

		// Not newService: its roots include the temporary directory.
		service := func(opts ...tables.Option) *tables.Service {
			s, err := tables.New(db, mustCatalog(t, db, catalog.WithClock(c.Now)), append(opts, tables.WithClock(c.Now))...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		svc := service(tables.WithWarehouseRoots(l.Warehouse, "s3://bucket/db"))
		// Everything is under this service's root, so only the file checks stand in the way.
		everywhere := service(tables.WithWarehouseRoots("/"))
		tiny := service(tables.WithWarehouseRoots(l.Warehouse), tables.WithFileLimit(64))
		none := service()

		for _, tc := range []struct {
			name string
			svc  *tables.Service
			loc  string
			want string
		}{
			{"device outside the roots", svc, "/dev/zero", "not under a warehouse root"},
			{"device under the root", everywhere, "/dev/zero", "not a regular file"},
			{"fifo", svc, fifo, "not a regular file"},
			{"etc passwd", svc, "file:///etc/passwd", "not under a warehouse root"},
			{"dot dot", svc, l.Warehouse + "/../../../../etc/passwd", `holds a ".." segment`},
			{"encoded dot dot", svc, "file:" + l.Warehouse + "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "percent-escape"},
			{"symlink out", svc, link, "not under a warehouse root"},
			{"not metadata", svc, secret, "not a readable Iceberg table metadata file"},
			{"missing", svc, filepath.Join(l.Warehouse, "nope.metadata.json"), "no such file"},
			{"too large", tiny, tbl.MetadataLocation(), "larger than the file size limit"},
			{"no roots", none, tbl.MetadataLocation(), "set --warehouse-roots"},
			{"object store without credentials", svc, "s3://bucket/db/t/metadata/v1.metadata.json", "credentials"},
			{"table location outside", svc, rootLoc, "outside the warehouse"},
			{"root of the filesystem as a root is no bypass of the file checks", everywhere, "file:///proc/self/environ", "not a readable Iceberg table metadata file"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n, _ := db.Client.IcebergTable.Query().Count(ctx)
				done := make(chan error, 1)
				go func() {
					_, _, err := tc.svc.Register(ctx, tables.RegisterInput{MetadataLocation: tc.loc})
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(time.Minute):
					t.Fatalf("register %s still reading after a minute", tc.loc)
				}
				if !errors.Is(err, catalog.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("register %s: err = %v, want invalid input saying %q", tc.loc, err, tc.want)
				}
				if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "root:") {
					t.Errorf("the error echoes the file: %v", err)
				}
				if m, _ := db.Client.IcebergTable.Query().Count(ctx); m != n {
					t.Errorf("a refused registration wrote %d table rows", m-n)
				}
			})
		}

		// A manifest list that is a device is never read, even from a metadata file in the root.
		_, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: zeroList})
		if err == nil || !strings.Contains(err.Error(), "not under a warehouse root") {
			t.Fatalf("register with /dev/zero as manifest list: err = %v, want the read refused", err)
		}
		// And the real table registers.
		if _, _, err := svc.Register(ctx, tables.RegisterInput{MetadataLocation: tbl.MetadataLocation(), Force: true}); err != nil {
			t.Fatalf("register the real table: %v", err)
		}
	})
}
