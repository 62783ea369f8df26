package storage

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"entgo.io/ent/dialect"
)

//go:embed migrations
var migrationFS embed.FS

// Migration is one versioned migration file.
type Migration struct {
	Version  string // file name without ".sql"; versions sort by name (timestamp prefix)
	SQL      string
	Checksum string
}

// Migrations returns the migrations for a dialect in the order they apply.
func Migrations(dialectName string) ([]Migration, error) {
	sub := dialectName
	if dialectName == dialect.SQLite {
		sub = "sqlite" // dialect.SQLite is "sqlite3"; the directory is named for the database
	}
	dir := path.Join("migrations", sub)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("storage: no migrations for %q: %w", dialectName, err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		b, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, Migration{
			Version:  strings.TrimSuffix(e.Name(), ".sql"),
			SQL:      string(b),
			Checksum: hex.EncodeToString(sum[:]),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS tidemark_migrations (
	version TEXT PRIMARY KEY,
	checksum TEXT NOT NULL,
	applied_at TEXT NOT NULL
)`

// Migrate applies every pending migration, all in one transaction, and returns the versions it
// applied. It refuses to run when an applied migration's file has changed since (a migration is
// never edited after it ships; add a new one). On PostgreSQL an advisory lock keeps replicas that
// start together from migrating twice; on SQLite the immediate transaction does the same.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	migs, err := Migrations(db.Dialect)
	if err != nil {
		return nil, err
	}
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("storage: migrate: begin: %w", err)
	}
	defer tx.Rollback()
	if db.Dialect == dialect.Postgres {
		// 0x7469646d = "tidm": an arbitrary, fixed lock key.
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(1953063021)"); err != nil {
			return nil, fmt.Errorf("storage: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return nil, fmt.Errorf("storage: migrate: create tracking table: %w", err)
	}
	applied, err := appliedMigrations(ctx, tx)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(migs))
	var done []string
	for _, m := range migs {
		known[m.Version] = true
		if sum, ok := applied[m.Version]; ok {
			if sum != m.Checksum {
				return nil, fmt.Errorf("storage: migration %s changed after it was applied (checksum %s, applied %s); add a new migration instead of editing one", m.Version, m.Checksum[:12], sum[:12])
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return nil, fmt.Errorf("storage: apply migration %s: %w", m.Version, err)
		}
		if _, err := tx.ExecContext(ctx, db.rebind("INSERT INTO tidemark_migrations (version, checksum, applied_at) VALUES (?, ?, ?)"),
			m.Version, m.Checksum, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return nil, fmt.Errorf("storage: record migration %s: %w", m.Version, err)
		}
		done = append(done, m.Version)
	}
	for _, stmt := range searchDDL[db.Dialect] {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return nil, fmt.Errorf("storage: migrate: full-text index: %w", err)
		}
	}
	for v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("storage: the database has migration %s, which this binary does not know: it was migrated by a newer Tidemark", v)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("storage: migrate: commit: %w", err)
	}
	return done, nil
}

// searchDDL creates the full-text index over search_docs, which ent cannot describe (an FTS5
// table kept by triggers on SQLite; a generated, weighted tsvector with a GIN index on
// PostgreSQL). It runs after the migration files, every time, so it is idempotent; keeping it out
// of the files keeps migrategen's replay and the schema drift test blind to it. The weights
// follow the ranking: current name, then labels (tags, terms, owners), then former names, then
// the description and columns.
var searchDDL = map[string][]string{
	dialect.SQLite: {
		`CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(t_name, t_labels, t_former, t_body,
			content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`,
		`CREATE TRIGGER IF NOT EXISTS search_docs_ai AFTER INSERT ON search_docs BEGIN
			INSERT INTO search_fts(rowid, t_name, t_labels, t_former, t_body) VALUES (new.id, new.t_name, new.t_labels, new.t_former, new.t_body);
		END`,
		`CREATE TRIGGER IF NOT EXISTS search_docs_ad AFTER DELETE ON search_docs BEGIN
			INSERT INTO search_fts(search_fts, rowid, t_name, t_labels, t_former, t_body) VALUES ('delete', old.id, old.t_name, old.t_labels, old.t_former, old.t_body);
		END`,
		`CREATE TRIGGER IF NOT EXISTS search_docs_au AFTER UPDATE ON search_docs BEGIN
			INSERT INTO search_fts(search_fts, rowid, t_name, t_labels, t_former, t_body) VALUES ('delete', old.id, old.t_name, old.t_labels, old.t_former, old.t_body);
			INSERT INTO search_fts(rowid, t_name, t_labels, t_former, t_body) VALUES (new.id, new.t_name, new.t_labels, new.t_former, new.t_body);
		END`,
	},
	dialect.Postgres: {
		`ALTER TABLE search_docs ADD COLUMN IF NOT EXISTS tsv tsvector GENERATED ALWAYS AS (
			setweight(to_tsvector('simple'::regconfig, t_name), 'A') ||
			setweight(to_tsvector('simple'::regconfig, t_labels), 'B') ||
			setweight(to_tsvector('simple'::regconfig, t_former), 'C') ||
			setweight(to_tsvector('simple'::regconfig, t_body), 'D')) STORED`,
		`CREATE INDEX IF NOT EXISTS search_docs_tsv ON search_docs USING gin (tsv)`,
		// The current name alone, for the assets whose name holds every word of a search (they
		// rank first): tsv cannot answer that through its index, since the index keeps no weights.
		`CREATE INDEX IF NOT EXISTS search_docs_name_tsv ON search_docs USING gin (to_tsvector('simple'::regconfig, t_name))`,
		// Former names alone, for exact former-name matches (they rank right after exact current
		// names); few docs have any, so the index is small.
		`CREATE INDEX IF NOT EXISTS search_docs_former_tsv ON search_docs USING gin (to_tsvector('simple'::regconfig, t_former))`,
	},
}

// Pending returns the versions Migrate would apply, without applying them.
func (db *DB) Pending(ctx context.Context) ([]string, error) {
	migs, err := Migrations(db.Dialect)
	if err != nil {
		return nil, err
	}
	applied := map[string]string{}
	var exists bool
	q := "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'tidemark_migrations'"
	if db.Dialect == dialect.Postgres {
		q = "SELECT to_regclass('tidemark_migrations') IS NOT NULL"
	}
	if err := db.SQL.QueryRowContext(ctx, q).Scan(&exists); err != nil {
		return nil, fmt.Errorf("storage: read migration state: %w", err)
	}
	if exists {
		if applied, err = appliedMigrations(ctx, db.SQL); err != nil {
			return nil, err
		}
	}
	var out []string
	for _, m := range migs {
		if _, ok := applied[m.Version]; !ok {
			out = append(out, m.Version)
		}
	}
	return out, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func appliedMigrations(ctx context.Context, q querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT version, checksum FROM tidemark_migrations")
	if err != nil {
		return nil, fmt.Errorf("storage: read applied migrations: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var v, sum string
		if err := rows.Scan(&v, &sum); err != nil {
			return nil, err
		}
		out[v] = sum
	}
	return out, rows.Err()
}

// rebind turns ? placeholders into $n for PostgreSQL.
func (db *DB) rebind(q string) string {
	if db.Dialect != dialect.Postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
