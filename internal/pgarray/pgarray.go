// Package pgarray encodes the arrays that bulk statements send to PostgreSQL (one array
// parameter per column, unpacked by unnest): Text for text columns, Typed for columns of other
// types, in their text form.
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
func (a Text) Value() (driver.Value, error) { return literal(a, false), nil }

// Typed is a []string of values in their text form, sent as the literal of an array of their
// type ($1::uuid[], $1::timestamptz[]), with "" elements as NULL. The server reads each element
// with its type's input function, and the statement needs no NULLIF(x, ”)::type per column (a
// text copy and an I/O cast per element; BenchmarkServerReads could not tell the two apart for
// 2,000 uuids). "" is never a valid uuid, time, number or boolean, so no value is lost to NULL.
// A nil Typed is SQL NULL.
type Typed []string

// Value implements driver.Valuer.
func (a Typed) Value() (driver.Value, error) { return literal(a, true), nil }

// literal is a's array literal: every element quoted, "" unquoted NULL when emptyNull.
func literal(a []string, emptyNull bool) any {
	if a == nil {
		return nil
	}
	if len(a) == 0 {
		return "{}"
	}
	n := 1 + len(a)*4 // braces, quotes and commas: "x","y" is 3 per element plus 1; NULL is 4
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
		if s == "" && emptyNull {
			b.WriteString("NULL")
			continue
		}
		b.WriteByte('"')
		writeEscaped(&b, s)
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
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
