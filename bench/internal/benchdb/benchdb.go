// Package benchdb holds what the benchmarks under bench/ share: scratch PostgreSQL databases,
// latency summaries, and copying rows between databases with COPY (the ceiling the ingest
// figures are compared with).
package benchdb

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lib/pq"

	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/handlers"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
)

// CreateDB makes (or remakes) database name, suffixed with this process's ID (two benches on one
// server never share a database), on the server admin points at and returns its DSN and a
// function that drops it unless keep.
func CreateDB(ctx context.Context, admin, name string, keep bool) (string, func()) {
	name = fmt.Sprintf("%s_%d", name, os.Getpid())
	if keep {
		log.Printf("database %s is kept", name)
	}
	db, err := sql.Open("postgres", admin)
	Must(err)
	_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
	_, err = db.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name))
	Must(err)
	u, err := url.Parse(admin)
	Must(err)
	u.Path = "/" + name
	return u.String(), func() {
		if !keep {
			_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)")
		}
		db.Close()
	}
}

// Open opens and migrates dsn.
func Open(ctx context.Context, dsn string) *storage.DB {
	db, err := storage.Open(ctx, dsn)
	Must(err)
	_, err = db.Migrate(ctx)
	Must(err)
	return db
}

// Summary is a latency distribution.
type Summary struct{ P50, P99, Mean time.Duration }

func (s Summary) String() string {
	r := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
	return r(s.P50) + " / " + r(s.P99) + " / " + r(s.Mean)
}

// Short is "p50 / p99".
func (s Summary) Short() string {
	r := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
	return r(s.P50) + " / " + r(s.P99)
}

// Stats summarises latencies (it sorts ds).
func Stats(ds []time.Duration) Summary {
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Summary{P50: ds[len(ds)/2], P99: ds[min(len(ds)-1, len(ds)*99/100)], Mean: sum / time.Duration(len(ds))}
}

// Rows are a table's rows read ahead, to be copied with CopyRows.
type Rows struct {
	table string
	cols  []string
	vals  [][]any
}

// ReadRows reads the rows of table matching where (SQL after WHERE, columns as t.<column>;
// empty for all), so that only writing them is timed.
func ReadRows(ctx context.Context, src *sql.DB, table, cols, where string) Rows {
	q := "SELECT " + cols + " FROM " + table + " t"
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := src.QueryContext(ctx, q)
	Must(err)
	defer rows.Close()
	out := Rows{table: table, cols: splitCols(cols)}
	scanRows(rows, len(out.cols), func(vals []any) { out.vals = append(out.vals, slices.Clone(vals)) })
	return out
}

// CopyRows writes rows read by ReadRows with one COPY.
func CopyRows(ctx context.Context, dst *sql.Tx, r Rows) {
	stmt, err := dst.PrepareContext(ctx, CopyStatement(r.table, r.cols...))
	Must(err)
	for _, v := range r.vals {
		_, err := stmt.ExecContext(ctx, v...)
		Must(err)
	}
	_, err = stmt.ExecContext(ctx)
	Must(err)
	Must(stmt.Close())
}

// scanRows calls each with every row's values (text as string: lib/pq would send []byte as
// bytea); the slice is reused. Reading is kept out of timed regions: it is the COPY that is timed.
func scanRows(rows *sql.Rows, n int, each func([]any)) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		Must(rows.Scan(ptrs...))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		each(vals)
	}
	Must(rows.Err())
}

func splitCols(s string) []string {
	var out []string
	for _, c := range bytes.Split([]byte(s), []byte(",")) {
		out = append(out, string(bytes.TrimSpace(c)))
	}
	return out
}

// Must stops the benchmark on an error.
func Must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// Serve runs the real API in the HTTP shell (cfg plus tokens, health and a warning-level log) on 127.0.0.1:0 and
// returns its base URL and a fresh write token.
func Serve(ctx context.Context, db *storage.DB, cfg handlers.Config) (string, string) {
	tokens := auth.NewStore(db.Client, nil)
	secret, _, err := tokens.Create(ctx, fmt.Sprintf("bench-%d", time.Now().UnixNano()), []auth.Scope{auth.ScopeWrite})
	Must(err)
	cfg.Ping = db.Ping
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Version = "bench"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Must(err)
	srv := server.New(server.Config{Tokens: tokens, Logger: cfg.Logger})
	handlers.Mount(srv, cfg)
	go http.Serve(ln, srv)
	return "http://" + ln.Addr().String(), secret
}

// CopyStatement is the COPY ... FROM STDIN statement lib/pq turns into a bulk load.
func CopyStatement(table string, cols ...string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pq.QuoteIdentifier(c)
	}
	return "COPY " + pq.QuoteIdentifier(table) + " (" + strings.Join(q, ", ") + ") FROM STDIN"
}

// ServerCPU is the CPU time (user and system) all PostgreSQL processes on this machine have
// used so far, read from /proc; 0 where /proc cannot tell (another OS, or another machine's
// server: then figures built on it are meaningless, and callers say so).
func ServerCPU() time.Duration {
	dirs, _ := os.ReadDir("/proc")
	var ticks int64
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime is field 14, stime 15; comm may hold spaces.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || !strings.HasPrefix(s[open+1:end], "postgres") {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// ProcessCPU is the CPU time (user and system) this process has used so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
