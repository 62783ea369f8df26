package catalog

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"net"
	"strings"
	"syscall"
)

// Unavailable reports whether err says the database cannot be reached or is too busy right now
// (connection refused or lost, server shutting down or starting, too many connections, SQLite
// busy or locked), as opposed to a fault in the request or the code: the answer is 503 with
// Retry-After, not 500. It knows the drivers by their error methods, not their packages.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pg interface{ SQLState() string } // lib/pq
	if errors.As(err, &pg) {
		code := pg.SQLState()
		// 08: connection exception; 57P01-57P03: admin or crash shutdown, cannot connect now;
		// 53200, 53300: out of (shared) memory, too many connections.
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03" || code == "53200" || code == "53300"
	}
	var lite interface{ Code() int } // modernc.org/sqlite: the extended result code
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
		return false
	}
	var ne *net.OpError
	return errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "sql: database is closed")
}
