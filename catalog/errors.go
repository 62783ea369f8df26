package catalog

import (
	"errors"
	"fmt"
)

// Error kinds. Every error this package returns for a caller's mistake or a lost race wraps one
// of these, so the API maps them to status codes in one place; anything else is internal.
var (
	ErrNotFound     = errors.New("not found")
	ErrInvalid      = errors.New("invalid input")
	ErrConflict     = errors.New("conflict")
	ErrNameTaken    = fmt.Errorf("name taken: %w", ErrConflict)
	ErrStaleVersion = errors.New("stale version")
	// ErrUnavailable is back-pressure: the work was refused for now and a retry may succeed.
	ErrUnavailable = errors.New("unavailable")
)

// Error is a domain error with a message meant for the person who sent the request.
type Error struct {
	Kind    error  // one of the Err* kinds
	Field   string // the input field at fault, when there is one
	Message string
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Kind }

func invalid(field, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Field: field, Message: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &Error{Kind: ErrConflict, Message: fmt.Sprintf(format, args...)}
}

// Problems lists the catalog Errors an error holds: several when a check reports every problem
// of an input at once (errors.Join), in order; one for a plain Error; none otherwise.
func Problems(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		var de *Error
		switch x := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			if errors.As(err, &de) {
				out = append(out, de)
			}
		}
	}
	walk(err)
	return out
}
