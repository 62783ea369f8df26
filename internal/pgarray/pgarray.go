// Package pgarray encodes the text arrays that bulk statements send to PostgreSQL (one array
// parameter per column, unpacked by unnest).
//
// lib/pq's StringArray builds each literal by growing a buffer element by element and then
// copying it into a string. Ingest sends tens of kilobytes of such arrays per batch, and those
// copies were the largest share of the server's allocations (and so of its garbage collection).
// Text sizes the literal first and writes it once.
package pgarray

import (
	"database/sql/driver"
	"strings"
)

// Text is a []string sent as a PostgreSQL text[] literal. Every element is quoted, so any string
// (empty, "NULL", braces, commas, spaces) arrives as itself; a nil Text is SQL NULL.
type Text []string

// Value implements driver.Valuer.
func (a Text) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	if len(a) == 0 {
		return "{}", nil
	}
	n := 1 + len(a)*3 // braces, quotes and commas: "x","y" is 3 per element plus 1
	for _, s := range a {
		n += len(s) + strings.Count(s, `"`) + strings.Count(s, `\`)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		writeEscaped(&b, s)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// writeEscaped writes s with a backslash before each '"' and '\\'. It jumps between them with
// IndexByte (vectorised): JSON payloads hold a quote every few bytes, backslashes rarely.
func writeEscaped(b *strings.Builder, s string) {
	quote, slash := strings.IndexByte(s, '"'), strings.IndexByte(s, '\\')
	from := 0
	for quote >= 0 || slash >= 0 {
		j := quote
		if j < 0 || (slash >= 0 && slash < j) {
			j = slash
		}
		b.WriteString(s[from:j])
		b.WriteByte('\\')
		from = j // the special byte itself starts the next run
		if j == quote {
			quote = next(s, j+1, '"')
		} else {
			slash = next(s, j+1, '\\')
		}
	}
	b.WriteString(s[from:])
}

// next is the index of c in s at or after i, -1 if none.
func next(s string, i int, c byte) int {
	if k := strings.IndexByte(s[i:], c); k >= 0 {
		return i + k
	}
	return -1
}
