package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/tables"
)

// Problem is an RFC 9457 problem document, the body of every error response.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance,omitempty"`
	Field     string `json:"field,omitempty"`      // the input at fault, when one is
	RequestID string `json:"request_id,omitempty"` // quote it when reporting a 500
	// Problems lists every problem of the input when a check found several (the first is also
	// Detail and Field), so a client fixes them in one go.
	Problems []FieldProblem `json:"problems,omitempty"`
}

// FieldProblem is one of several problems of an input.
type FieldProblem struct {
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// problemTypes names each kind of problem; clients branch on type, people read detail.
var problemTypes = map[int]struct{ slug, title string }{
	http.StatusBadRequest:            {"invalid-request", "Invalid request"},
	http.StatusUnauthorized:          {"unauthenticated", "Authentication required"},
	http.StatusForbidden:             {"forbidden", "Insufficient scope"},
	http.StatusNotFound:              {"not-found", "Not found"},
	http.StatusMethodNotAllowed:      {"method-not-allowed", "Method not allowed"},
	http.StatusConflict:              {"conflict", "Conflict"},
	http.StatusPreconditionFailed:    {"stale-version", "Precondition failed"},
	http.StatusRequestEntityTooLarge: {"body-too-large", "Request body too large"},
	http.StatusUnsupportedMediaType:  {"unsupported-media-type", "Unsupported media type"},
	http.StatusPreconditionRequired:  {"precondition-required", "Precondition required"},
	http.StatusTooManyRequests:       {"rate-limited", "Too many requests"},
	http.StatusMisdirectedRequest:    {"misdirected", "Not this server's name"},
	http.StatusInternalServerError:   {"internal", "Internal error"},
	http.StatusServiceUnavailable:    {"unavailable", "Service unavailable"},
}

// newProblem builds a problem of a status with a detail a person can act on.
func newProblem(status int, detail string) *Problem {
	t, ok := problemTypes[status]
	if !ok {
		t.slug, t.title = "error", http.StatusText(status)
	}
	return &Problem{Type: "urn:tidemark:problem:" + t.slug, Title: t.title, Status: status, Detail: detail}
}

func badRequest(field, format string, args ...any) *Problem {
	p := newProblem(http.StatusBadRequest, fmt.Sprintf(format, args...))
	p.Field = field
	return p
}

// errorHandler is the one place errors become HTTP responses outside /iceberg and the UI's pages. Domain errors map by kind; echo's
// own errors (unknown route, wrong method) keep their status; anything else is a 500 whose cause
// is logged, never sent.
func errorHandler(log *slog.Logger) server.Render {
	return func(c echo.Context, err error) {
		if c.Response().Committed {
			return
		}
		p := toProblem(err)
		p.Instance = c.Request().URL.Path
		p.RequestID = c.Response().Header().Get(echo.HeaderXRequestID)
		if p.Status >= 500 {
			attrs := append(server.LogAttrs(c), "err", err)
			if p.Status == http.StatusServiceUnavailable {
				// Back-pressure, not a fault, but the operator needs its cause (SQLite busy, the pool
				// exhausted, the graph loading) to tell a blip from a store that cannot keep up.
				log.Warn("request unavailable", attrs...)
				c.Response().Header().Set("Retry-After", "5")
			} else {
				log.Error("request failed", attrs...)
			}
		}
		if p.Status == http.StatusUnauthorized {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="tidemark"`)
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		c.Response().WriteHeader(p.Status)
		if c.Request().Method != http.MethodHead {
			enc := json.NewEncoder(c.Response())
			enc.SetEscapeHTML(false) // details quote <token> and the like; keep them readable
			_ = enc.Encode(p)
		}
	}
}

func toProblem(err error) *Problem {
	var (
		p   *Problem
		de  *catalog.Error
		he  *echo.HTTPError
		mbe *http.MaxBytesError
		te  *tables.TableError
		se  *server.Error
	)
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &se):
		out := newProblem(se.Status, se.Message)
		out.Field = se.Field
		return out
	case errors.As(err, &de):
		status := http.StatusInternalServerError
		switch {
		case errors.Is(err, catalog.ErrInvalid):
			status = http.StatusBadRequest
		case errors.Is(err, catalog.ErrNotFound):
			status = http.StatusNotFound
		case errors.Is(err, catalog.ErrStaleVersion):
			status = http.StatusPreconditionFailed
		case errors.Is(err, catalog.ErrConflict):
			status = http.StatusConflict
		case errors.Is(err, catalog.ErrUnavailable):
			status = http.StatusServiceUnavailable
		}
		if status == http.StatusInternalServerError {
			return newProblem(status, "internal error")
		}
		out := newProblem(status, de.Message)
		out.Field = de.Field
		if all := catalog.Problems(err); len(all) > 1 {
			for _, e := range all {
				out.Problems = append(out.Problems, FieldProblem{Field: e.Field, Detail: e.Message})
			}
		}
		if errors.Is(err, catalog.ErrNameTaken) {
			out.Type = "urn:tidemark:problem:name-taken"
			out.Title = "Name taken"
		}
		return out
	case errors.As(err, &te):
		// The request was fine; the table's own metadata or storage is not (recorded on it).
		return newProblem(http.StatusBadGateway, "the Iceberg table could not be read: "+te.Err.Error())
	case errors.As(err, &mbe):
		return newProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds the limit of %d bytes", mbe.Limit))
	case errors.As(err, &he):
		switch he.Code {
		case http.StatusNotFound:
			return newProblem(he.Code, "no such route; see /api/openapi.json for the API")
		case http.StatusMethodNotAllowed:
			return newProblem(he.Code, "this route does not take that method; see /api/openapi.json")
		case http.StatusRequestEntityTooLarge:
			return newProblem(he.Code, "request body too large")
		}
		if he.Code < 500 {
			return newProblem(he.Code, fmt.Sprint(he.Message))
		}
	}
	if catalog.Unavailable(err) {
		return newProblem(http.StatusServiceUnavailable, "the database is unreachable or busy right now: retry shortly")
	}
	return newProblem(http.StatusInternalServerError, "internal error")
}
