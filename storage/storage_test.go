package storage_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
)

// TestMigrationsMatchSchema applies the shipped migrations and asks ent what it would still
// change: anything but nothing means the ent schema and the migration files have drifted.
func TestMigrationsMatchSchema(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		var buf bytes.Buffer
		if err := db.Client.Schema.WriteTo(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		var stmts []string
		for _, line := range strings.Split(buf.String(), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line == "BEGIN;" || line == "COMMIT;" {
				continue
			}
			stmts = append(stmts, line)
		}
		if len(stmts) > 0 {
			t.Fatalf("ent schema differs from migrations; run migrategen (storage/migrations/README.md). Pending DDL:\n%s", strings.Join(stmts, "\n"))
		}
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		again, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 0 {
			t.Fatalf("second migrate applied %v, want nothing", again)
		}
		pending, err := db.Pending(ctx)
		if err != nil || len(pending) != 0 {
			t.Fatalf("pending = %v, %v; want none", pending, err)
		}
	})
}

func TestFreshDatabaseHasPendingMigrations(t *testing.T) {
	for _, backend := range storagetest.Backends {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			db, err := storage.Open(ctx, storagetest.DSN(t, backend))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			pending, err := db.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all, _ := storage.Migrations(db.Dialect)
			if len(pending) != len(all) || len(all) == 0 {
				t.Fatalf("pending = %d, want all %d", len(pending), len(all))
			}
			applied, err := db.Migrate(ctx)
			if err != nil || len(applied) != len(all) {
				t.Fatalf("applied %v, %v", applied, err)
			}
		})
	}
}

func TestChangedMigrationIsRefused(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		if _, err := db.SQL.ExecContext(ctx, "UPDATE tidemark_migrations SET checksum = 'deadbeefdeadbeef'"); err != nil {
			t.Fatal(err)
		}
		_, err := db.Migrate(ctx)
		if err == nil || !strings.Contains(err.Error(), "changed after it was applied") {
			t.Fatalf("err = %v, want a changed-migration error", err)
		}
	})
}

func TestAuditLogIsAppendOnly(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		ev, err := db.Client.AuditEvent.Create().SetAt(time.Now().UTC()).SetActor("test").
			SetAction("test.append").SetAfter(json.RawMessage(`{"x":1}`)).Save(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Client.AuditEvent.UpdateOneID(ev.ID).Save(ctx); err == nil {
			t.Fatal("update of an audit event succeeded")
		}
		if err := db.Client.AuditEvent.DeleteOneID(ev.ID).Exec(ctx); err == nil {
			t.Fatal("delete of an audit event succeeded")
		}
		if n, _ := db.Client.AuditEvent.Query().Count(ctx); n != 1 {
			t.Fatalf("audit events = %d, want 1", n)
		}
	})
}

func TestSQLiteForeignKeysAreOn(t *testing.T) {
	db := storagetest.Open(t, "sqlite")
	ctx := context.Background()
	_, err := db.Client.AssetName.Create().SetAssetID(uuid.Must(uuid.NewV7())).
		SetNamespace("n").SetName("x").SetValidFrom(time.Now()).Save(ctx)
	if err == nil {
		t.Fatal("inserted a name for a missing asset: foreign keys are off")
	}
}

// TestSQLiteFilesAreTheOwners: the data directory Open creates is 0700 and the database files
// 0600, also when they were created more open before.
func TestSQLiteFilesAreTheOwners(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "tidemark.db")
	db, err := storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = storage.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}

// TestUsageJobDailiesFilledFromEvents: the migration that adds usage_job_dailies fills it from
// the raw events already kept, one row per (day, asset, job), so a job counted before the upgrade
// is not counted again after it.
func TestUsageJobDailiesFilledFromEvents(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		migs, err := storage.Migrations(db.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		var version string
		for _, m := range migs {
			if strings.HasSuffix(m.Version, "_usage_job_dailies") {
				version = m.Version
			}
		}
		if version == "" {
			t.Fatal("no usage_job_dailies migration")
		}
		// Back to the state before it, with events of two jobs (one twice) and one without a job.
		for _, q := range []string{"DROP TABLE usage_job_dailies", "DELETE FROM tidemark_migrations WHERE version = '" + version + "'"} {
			if _, err := db.SQL.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		asset, jobA, jobB := uuid.New(), uuid.New(), uuid.New()
		at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for i, job := range []any{jobA.String(), jobA.String(), jobB.String(), nil} {
			if _, err := db.SQL.ExecContext(ctx, `INSERT INTO usage_events (event_key, asset_id, kind, actor, job_asset_id, source, query_id,
				namespace, name, at, day, received_at, resolution, late) VALUES ($1, $2, 'read', '', $3, 'openlineage', $4, '', '', $5, '2026-11-30', $5, '', false)`,
				fmt.Sprintf("k%d", i), asset.String(), job, fmt.Sprintf("run%d", i), at); err != nil {
				t.Fatal(err)
			}
		}
		applied, err := db.Migrate(ctx)
		if err != nil || len(applied) != 1 || applied[0] != version {
			t.Fatalf("migrate applied %v, %v; want [%s]", applied, err, version)
		}
		rows, err := db.SQL.QueryContext(ctx, "SELECT day, asset_id, job_asset_id FROM usage_job_dailies ORDER BY job_asset_id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]bool{}
		for rows.Next() {
			var day, a, j string
			if err := rows.Scan(&day, &a, &j); err != nil {
				t.Fatal(err)
			}
			if day != "2026-11-30" || a != asset.String() {
				t.Errorf("row (%s, %s, %s): want day 2026-11-30 and asset %s", day, a, j, asset)
			}
			got[j] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !got[jobA.String()] || !got[jobB.String()] {
			t.Fatalf("jobs filled in: %v; want exactly %s and %s", got, jobA, jobB)
		}
	})
}
