package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/catalog"
)

// bind decodes a JSON request body into v strictly: a JSON media type, exactly one object, no
// unknown fields, no trailing data. Every failure says what to fix.
func bind(c echo.Context, v any) error {
	r := c.Request()
	if err := requireJSON(r); err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body) // bounded by the route's body limit
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("", "cannot read the body: %v", err)
	}
	if err := checkText(body); err != nil {
		return err
	}
	if name, ok := unknownField(body, v); ok {
		return badRequest(name, "unknown field %q; check the field name against /api/openapi.json", name)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // nested objects; the top level was checked above, by name
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("", "request body has data after the JSON object; send exactly one object")
	}
	return nil
}

// requireJSON refuses a body not declared as JSON. A body without Content-Type is refused too:
// browsers send those cross-site without asking (a web page could otherwise write to a server
// that runs without authentication).
func requireJSON(r *http.Request) error {
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" {
		if r.ContentLength == 0 {
			return nil // no body: the decoder says what is missing
		}
		return newProblem(http.StatusUnsupportedMediaType, "the body has no Content-Type; send Content-Type: application/json")
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return newProblem(http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q is not JSON; send application/json", ct))
	}
	return nil
}

// bindOptional is bind for bodies that may be absent.
func bindOptional(c echo.Context, v any) error {
	if c.Request().ContentLength == 0 {
		return nil
	}
	return bind(c, v)
}

func decodeError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, io.EOF):
		return badRequest("", "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("", "request body ends in the middle of the JSON; send a complete object")
	case errors.As(err, &syn):
		return badRequest("", "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("", "request body must be a JSON object, not %s", typ.Value)
		}
		return badRequest(typ.Field, "field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	}
	return badRequest("", "cannot read the JSON body: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "true or false"
	}
	return "a number"
}

// ifMatch reads the If-Match header as an asset version. required makes a missing header a 428.
func ifMatch(c echo.Context, required bool) (int64, error) {
	h := strings.TrimSpace(c.Request().Header.Get("If-Match"))
	if h == "" {
		if required {
			return 0, newProblem(http.StatusPreconditionRequired,
				`this change needs If-Match with the asset's current ETag (from GET /api/v1/assets/{id}), e.g. If-Match: "3"`)
		}
		return catalog.AnyVersion, nil
	}
	if h == "*" {
		return catalog.AnyVersion, nil
	}
	v, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(h, "W/"), `"`), 10, 64)
	if err != nil || v < 1 {
		return 0, badRequest("If-Match", `If-Match %q is not an asset ETag; send the ETag from GET /api/v1/assets/{id}, e.g. "3"`, h)
	}
	return v, nil
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// queryLimit reads ?limit= within [1, max], defaulting to def.
func queryLimit(c echo.Context, def, max int) (int, error) { return queryInt(c, "limit", def, 1, max) }

// queryInt reads an integer query parameter within [lo, hi], defaulting to def.
func queryInt(c echo.Context, name string, def, lo, hi int) (int, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(name, "%s must be a whole number from %d to %d, not %q", name, lo, hi, truncate(s, 32))
	}
	return n, nil
}

// checkText refuses a body that is not valid UTF-8 or holds a NUL character (raw or as the
// JSON escape \u0000): PostgreSQL stores neither in text, and SQLite would keep what PostgreSQL
// refuses, so both databases answer the same 400 instead of a 500 on one of them.
func checkText(body []byte) error {
	switch {
	case !utf8.Valid(body):
		return badRequest("", "the body is not valid UTF-8; send UTF-8 JSON")
	case bytes.IndexByte(body, 0) >= 0 || bytes.Contains(body, []byte(`\u0000`)):
		return badRequest("", "the body holds a NUL character (\\u0000), which text fields cannot store; remove it")
	}
	return nil
}

// unknownField reports the first top-level member of a JSON object body that v (a pointer to a
// struct) has no field for, by the names encoding/json uses. A body that is not an object is
// left to the decoder to describe.
func unknownField(body []byte, v any) (string, bool) {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return "", false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(body, &members) != nil {
		return "", false
	}
	known := map[string]bool{}
	jsonNames(t.Elem(), known)
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !known[strings.ToLower(name)] { // encoding/json matches names case-insensitively
			return name, true
		}
	}
	return "", false
}

func jsonNames(t reflect.Type, into map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonNames(ft, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		into[strings.ToLower(name)] = true
	}
}
