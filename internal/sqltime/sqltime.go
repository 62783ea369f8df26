// Package sqltime reads a time out of an aggregate or a derived table on either database:
// PostgreSQL answers a time, SQLite the text it stores (an aggregate has no declared type the
// driver could parse it by).
package sqltime

import (
	"database/sql"
	"fmt"
	"time"
)

// Time is a scanned time in UTC; NULL leaves it zero.
type Time struct{ T time.Time }

// layouts are the ways the SQLite driver writes a time, and RFC 3339.
var layouts = []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"}

// Scan implements sql.Scanner.
func (v *Time) Scan(src any) error {
	switch x := src.(type) {
	case nil:
		v.T = time.Time{}
		return nil
	case time.Time:
		v.T = x.UTC()
		return nil
	case []byte:
		return v.parse(string(x))
	case string:
		return v.parse(x)
	}
	return fmt.Errorf("cannot read %T as a time", src)
}

func (v *Time) parse(s string) error {
	for _, layout := range layouts {
		if t, err := time.Parse(layout, s); err == nil {
			v.T = t.UTC()
			return nil
		}
	}
	return fmt.Errorf("%q is not a time", s)
}

var _ sql.Scanner = (*Time)(nil)
