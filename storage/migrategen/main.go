// Command migrategen writes the next versioned migration for both dialects: it replays the
// existing migrations on a scratch database and diffs the result against the ent schema
// (Atlas, through ent). Run it after changing ent/schema and `go generate ./...`:
//
//	go run ./storage/migrategen -name add_usage -postgres postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable
//
// The PostgreSQL server is used only to create and drop a scratch database.
//
// A new migration that must also move data (fill a new table from an old one) gets its
// statements appended by hand before it ships; then
//
//	go run ./storage/migrategen -resum
//
// rewrites both directories' atlas.sum to match the files.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	atlas "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	"github.com/lib/pq"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/storage"
)

func main() {
	name := flag.String("name", "", "migration name (required), e.g. add_usage")
	pgAdmin := flag.String("postgres", os.Getenv("TIDEMARK_TEST_POSTGRES"), "PostgreSQL DSN allowed to CREATE/DROP DATABASE")
	dir := flag.String("dir", "storage/migrations", "migrations directory")
	resum := flag.Bool("resum", false, "only rewrite atlas.sum in both directories after a hand-appended data statement")
	flag.Parse()
	if *resum {
		for _, d := range []string{"sqlite", "postgres"} {
			if err := rewriteSum(filepath.Join(*dir, d)); err != nil {
				log.Fatalf("%s: %v", d, err)
			}
		}
		return
	}
	if *name == "" || *pgAdmin == "" {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "migrategen")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	sqliteDB, err := sql.Open("tidemark-sqlite", storage.SQLiteDSN(filepath.Join(tmp, "dev.db")))
	if err != nil {
		log.Fatal(err)
	}
	if err := diff(ctx, sqliteDB, dialect.SQLite, filepath.Join(*dir, "sqlite"), *name); err != nil {
		log.Fatalf("sqlite: %v", err)
	}

	admin, err := sql.Open("postgres", *pgAdmin)
	if err != nil {
		log.Fatal(err)
	}
	scratch := fmt.Sprintf("tidemark_migrategen_%d", time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(scratch)); err != nil {
		log.Fatal(err)
	}
	defer admin.ExecContext(ctx, "DROP DATABASE "+pq.QuoteIdentifier(scratch))
	dsn, err := withDatabase(*pgAdmin, scratch)
	if err != nil {
		log.Fatal(err)
	}
	pgDB, err := sql.Open("postgres", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer pgDB.Close()
	if err := diff(ctx, pgDB, dialect.Postgres, filepath.Join(*dir, "postgres"), *name); err != nil {
		log.Printf("postgres: %v", err)
		return
	}
}

func diff(ctx context.Context, db *sql.DB, dialectName, dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	local, err := atlas.NewLocalDir(dir)
	if err != nil {
		return err
	}
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialectName, db)))
	return client.Schema.NamedDiff(ctx, name,
		schema.WithDir(local),
		schema.WithMigrationMode(schema.ModeReplay),
		schema.WithDialect(dialectName),
		schema.WithFormatter(atlas.DefaultFormatter),
		schema.WithDropColumn(true),
		schema.WithDropIndex(true),
	)
}

// rewriteSum recomputes a migration directory's atlas.sum from its files.
func rewriteSum(dir string) error {
	local, err := atlas.NewLocalDir(dir)
	if err != nil {
		return err
	}
	sum, err := local.Checksum()
	if err != nil {
		return err
	}
	return atlas.WriteSumFile(local, sum)
}
