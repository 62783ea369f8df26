// Package storage opens Tidemark's database (embedded SQLite or PostgreSQL), applies the
// versioned migrations in migrations/<dialect>/, and hands out the ent client. Production, the
// CLI and every test go through Open and Migrate, so the schema under test is the schema shipped.
package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/lib/pq" // PostgreSQL driver, registered as "postgres".
	"modernc.org/sqlite"

	"github.com/tidemark/tidemark/ent"
	_ "github.com/tidemark/tidemark/ent/runtime" // schema hooks (append-only audit log).
)

// DB is an open database: the ent client for domain code and the raw handle for health checks
// and migrations.
type DB struct {
	Client  *ent.Client
	SQL     *sql.DB
	Dialect string // dialect.SQLite or dialect.Postgres
}

// Close closes the ent client and the underlying connections.
func (db *DB) Close() error { return db.Client.Close() }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.SQL.PingContext(ctx) }

// IsPostgres reports whether dsn names a PostgreSQL server rather than an SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// SQLiteDSN builds the DSN for an SQLite file with the settings Tidemark relies on:
//   - foreign_keys(1): SQLite ships with them off; ent's schema and our invariants need them.
//   - journal_mode(WAL): readers do not block the writer.
//   - busy_timeout: writers queue instead of failing with SQLITE_BUSY.
//   - _txlock=immediate: a transaction takes the write lock at BEGIN, so two read-then-write
//     transactions cannot deadlock on the lock upgrade (which SQLite reports without waiting).
//   - _time_format=sqlite: times are stored without Go's monotonic-clock suffix, so stored UTC
//     timestamps compare correctly as text.
//   - journal_size_limit: after each checkpoint the WAL file is truncated to 64 MiB, so it does
//     not keep the size of its largest burst for good.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=journal_size_limit(67108864)&_txlock=immediate&_time_format=sqlite"
}

// Open connects to dsn: a postgres:// URL, an SQLite DSN ("file:..."), or a plain file path
// (opened as SQLite, its directory created if missing). It does not migrate.
func Open(ctx context.Context, dsn string) (*DB, error) {
	var (
		db   *sql.DB
		name string
		path string // the SQLite file, when dsn is a plain path
		err  error
	)
	switch {
	case IsPostgres(dsn):
		name = dialect.Postgres
		db, err = sql.Open("postgres", dsn)
		if err == nil {
			db.SetMaxOpenConns(20)
			db.SetMaxIdleConns(10)
			db.SetConnMaxIdleTime(5 * time.Minute)
		}
	default:
		name = dialect.SQLite
		if !strings.HasPrefix(dsn, "file:") {
			path = dsn
			if dir := filepath.Dir(dsn); dir != "" {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return nil, fmt.Errorf("storage: create database directory: %w", err)
				}
			}
			dsn = SQLiteDSN(dsn)
		}
		db, err = sql.Open(sqliteDriverName, dsn)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", name, err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("storage: connect to %s: %w", name, err)
	}
	if path != "" {
		// The catalog holds token hashes and everything people wrote: only its owner reads it.
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Chmod(f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
				db.Close()
				return nil, fmt.Errorf("storage: restrict %s to its owner: %w", f, err)
			}
		}
	}
	if name == dialect.SQLite {
		var fk int
		if err := db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
			db.Close()
			return nil, errors.New("storage: sqlite foreign keys are off; use storage.SQLiteDSN or add _pragma=foreign_keys(1)")
		}
	}
	drv := entsql.OpenDB(name, db)
	return &DB{Client: ent.NewClient(ent.Driver(drv)), SQL: db, Dialect: name}, nil
}

// sqliteDriverName is the pure-Go SQLite driver registered under a name of our own, so nothing
// depends on which package happened to register "sqlite" first.
const sqliteDriverName = "tidemark-sqlite"

func init() { sql.Register(sqliteDriverName, &sqlite.Driver{}) }
