package catalog_test

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/lib/pq"

	"github.com/tidemark/tidemark/catalog"
)

// liteErr has the shape of modernc.org/sqlite's error (its fields are not exported).
type liteErr int

func (e liteErr) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e liteErr) Code() int     { return int(e) }

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{fmt.Errorf("query: %w", sql.ErrConnDone), true},
		{fmt.Errorf("query: %w", driver.ErrBadConn), true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{&pq.Error{Code: "57P01"}, true},                    // admin shutdown
		{&pq.Error{Code: "08006"}, true},                    // connection failure
		{&pq.Error{Code: "53300"}, true},                    // too many connections
		{&pq.Error{Code: "23505"}, false},                   // unique violation: a real error
		{&pq.Error{Code: "22021"}, false},                   // bad UTF-8: the request's fault
		{fmt.Errorf("insert: %w", liteErr(5)), true},        // SQLITE_BUSY
		{fmt.Errorf("insert: %w", liteErr(5|(2<<8))), true}, // SQLITE_BUSY_SNAPSHOT
		{liteErr(19), false},                                // SQLITE_CONSTRAINT
		{errors.New("sql: database is closed"), true},
	} {
		if got := catalog.Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
