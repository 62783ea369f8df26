// Package chunk splits work over many rows into statements of bounded size.
package chunk

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
