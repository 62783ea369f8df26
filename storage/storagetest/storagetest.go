// Package storagetest opens migrated test databases: an SQLite file per test (a copy of one
// migrated once per process), and a fresh PostgreSQL database per test when
// TIDEMARK_TEST_POSTGRES names a server. With CI set, a
// missing PostgreSQL server is a test failure, never a silent skip.
package storagetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/tidemark/tidemark/storage"
)

// PostgresEnv names the environment variable holding a PostgreSQL DSN whose user may create
// and drop databases.
const PostgresEnv = "TIDEMARK_TEST_POSTGRES"

// Backends lists the storage backends a suite runs on.
var Backends = []string{"sqlite", "postgres"}

// ForEach runs fn as a subtest on every backend, each with a fresh migrated database.
func ForEach(t *testing.T, fn func(t *testing.T, db *storage.DB)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(b, func(t *testing.T) {
			fn(t, Open(t, b))
		})
	}
}

// Open returns a fresh, migrated database on backend, closed (and dropped) when the test ends.
func Open(t testing.TB, backend string) *storage.DB {
	t.Helper()
	db, _ := openDSN(t, backend)
	return db
}

// Replicas returns n handles on one fresh, migrated database on backend, as n server processes
// sharing it have; each is closed when the test ends.
func Replicas(t testing.TB, backend string, n int) []*storage.DB {
	t.Helper()
	first, dsn := openDSN(t, backend)
	dbs := []*storage.DB{first}
	for len(dbs) < n {
		db, err := storage.Open(context.Background(), dsn)
		if err != nil {
			t.Fatalf("storagetest: open %s again: %v", backend, err)
		}
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	return dbs
}

// openDSN is Open, and the DSN that opens the same database again.
func openDSN(t testing.TB, backend string) (*storage.DB, string) {
	t.Helper()
	dsn := DSN(t, backend)
	ctx := context.Background()
	if backend == "sqlite" {
		b, err := migratedSQLite()
		if err != nil {
			t.Fatalf("storagetest: %v", err)
		}
		if err := os.WriteFile(dsn, b, 0o600); err != nil {
			t.Fatalf("storagetest: %v", err)
		}
	}
	db, err := storage.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("storagetest: open %s: %v", backend, err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("storagetest: migrate %s: %v", backend, err)
	}
	return db, dsn
}

// migratedSQLite returns a migrated SQLite database file, made once per test process.
// Migrating takes about 2 s under -race (the pure-Go SQLite is instrumented too) and hundreds
// of tests open a database; writing the file takes a millisecond. Open still runs Migrate on
// the copy, which checks every migration's checksum and applies nothing.
var migratedSQLite = sync.OnceValues(migrateSQLiteFile)

func migrateSQLiteFile() ([]byte, error) {
	dir, err := os.MkdirTemp("", "tidemark-storagetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tidemark.db")
	ctx := context.Background()
	db, err := storage.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open the template database: %w", err)
	}
	if _, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate the template database: %w", err)
	}
	// Everything into the main file, so the file alone is the database.
	if _, err := db.SQL.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		db.Close()
		return nil, fmt.Errorf("checkpoint the template database: %w", err)
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("the template database's write-ahead log still holds %d bytes after a checkpoint", fi.Size())
	}
	return os.ReadFile(path)
}

var seq atomic.Int64

// DSN returns the DSN of a fresh, empty database on backend (not migrated), removed when the test
// ends. It skips the test when PostgreSQL is asked for, not configured and CI is unset.
func DSN(t testing.TB, backend string) string {
	t.Helper()
	switch backend {
	case "sqlite":
		return filepath.Join(t.TempDir(), "tidemark.db")
	case "postgres":
		admin := os.Getenv(PostgresEnv)
		if admin == "" {
			if os.Getenv("CI") != "" {
				t.Fatalf("storagetest: CI is set but %s is empty: PostgreSQL tests must run in CI (.ci/run starts a server)", PostgresEnv)
			}
			t.Skipf("storagetest: PostgreSQL not configured; set %s=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable to run this on PostgreSQL", PostgresEnv)
		}
		return createDatabase(t, admin)
	default:
		t.Fatalf("storagetest: unknown backend %q", backend)
		return ""
	}
}

func createDatabase(t testing.TB, admin string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adminDB, err := sql.Open("postgres", admin)
	if err != nil {
		t.Fatalf("storagetest: %v", err)
	}
	name := fmt.Sprintf("tidemark_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, seq.Add(1))
	if _, err := adminDB.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		adminDB.Close()
		t.Fatalf("storagetest: create database on %s: %v", redact(admin), err)
	}
	t.Cleanup(func() {
		defer adminDB.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := adminDB.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			t.Logf("storagetest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("storagetest: parse %s: %v", PostgresEnv, err)
	}
	u.Path = "/" + name
	return u.String()
}

func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable DSN)"
	}
	return strings.Replace(u.Redacted(), u.User.String()+"@", u.User.Username()+"@", 1)
}
