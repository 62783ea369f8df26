package storage

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/lib/pq"
)

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
		{&pq.Error{Code: "57P01"}, true},  // admin shutdown
		{&pq.Error{Code: "08006"}, true},  // connection failure
		{&pq.Error{Code: "53300"}, true},  // too many connections
		{&pq.Error{Code: "23505"}, false}, // unique violation: a real error
		{&pq.Error{Code: "22021"}, false}, // bad UTF-8: the request's fault
		{errors.New("sql: database is closed"), true},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
