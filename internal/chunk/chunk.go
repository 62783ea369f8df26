// Package chunk splits work over many rows into statements of bounded size.
package chunk

import (
	"iter"
	"slices"
)

// Size bounds the rows or keys of one statement, far below both databases' parameter limits
// (the widest rows written in chunks have about ten columns).
const Size = 500

// Each calls fn with consecutive parts of xs of at most Size elements, stopping at the first
// error.
func Each[T any](xs []T, fn func([]T) error) error {
	for len(xs) > 0 {
		n := min(Size, len(xs))
		if err := fn(xs[:n]); err != nil {
			return err
		}
		xs = xs[n:]
	}
	return nil
}

// Statements yields xs in parts of one statement each: chunks of Size on SQLite (a parameter a
// value), all of xs at once on PostgreSQL, where a column goes as one array parameter (no
// parameter limit, and one statement's planning instead of one a chunk). Nothing for no xs.
func Statements[T any](sqlite bool, xs []T) iter.Seq[[]T] {
	if sqlite || len(xs) == 0 {
		return slices.Chunk(xs, Size)
	}
	return func(yield func([]T) bool) { yield(xs) }
}

// EachStatement calls fn with each part Statements yields, stopping at the first error.
func EachStatement[T any](sqlite bool, xs []T, fn func([]T) error) error {
	for part := range Statements(sqlite, xs) {
		if err := fn(part); err != nil {
			return err
		}
	}
	return nil
}
