package handlers

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/tidemark/tidemark/auth"
)

// operation describes a route for both echo and the OpenAPI document, so the two cannot drift.
type operation struct {
	Method, Path string // echo path, e.g. /api/v1/assets/:id
	Summary      string
	Description  string // longer text: what a client must know (atomicity, limits)
	Tag          string
	Open         bool       // no authentication, ever (health, metrics, the document itself)
	Scope        auth.Scope // needed scope; default: read for GET, write otherwise
	Params       []param
	Body         any // request body type, nil for none
	// BodySchema describes a body no Go type of ours declares (an OpenLineage event); it
	// replaces the schema derived from Body.
	BodySchema map[string]any
	Responses  map[int]any
	Text       bool  // plain-text response (metrics)
	CSV        bool  // the 200 answer may also be text/csv (a download)
	BodyLimit  int64 // request body cap; default Config.BodyLimit
}

type param struct {
	Name, In, Description string // In: query, header, path
	Required              bool
}

// handle registers h for op and records op for the OpenAPI document.
func (a *API) handle(op operation, h echo.HandlerFunc) {
	if op.BodyLimit <= 0 {
		op.BodyLimit = a.cfg.BodyLimit
	}
	mw := []echo.MiddlewareFunc{bodyLimit(op.BodyLimit)}
	if !op.Open {
		if op.Scope == "" {
			op.Scope = auth.ScopeWrite
			if op.Method == http.MethodGet {
				op.Scope = auth.ScopeRead
			}
		}
		mw = append(mw, a.requireScope(op.Scope))
	}
	a.e.Add(op.Method, op.Path, h, mw...)
	a.ops = append(a.ops, op)
	if op.Method == http.MethodGet {
		// HEAD answers like GET without the body (net/http drops it): clients read ETags this way.
		head := op
		head.Method, head.Summary = http.MethodHead, "Headers of: "+op.Summary
		a.e.Add(head.Method, head.Path, h, mw...)
		a.ops = append(a.ops, head)
	}
}

var echoParam = regexp.MustCompile(`:([a-zA-Z_]+)`)

// OpenAPIPath turns an echo route path into an OpenAPI path template.
func OpenAPIPath(echoPath string) string { return echoParam.ReplaceAllString(echoPath, "{$1}") }

func (a *API) openAPI(c echo.Context) error { return c.JSON(http.StatusOK, a.OpenAPI()) }

// OpenAPI returns the OpenAPI 3.0 document for every registered operation.
func (a *API) OpenAPI() map[string]any {
	schemas := map[string]any{}
	paths := map[string]map[string]any{}
	for _, op := range a.ops {
		p := OpenAPIPath(op.Path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		doc := map[string]any{"summary": op.Summary, "tags": []string{op.Tag},
			"operationId": strings.ToLower(op.Method) + strings.NewReplacer("/", "_", "{", "", "}", "", ".", "_").Replace(p)}
		if op.Description != "" {
			doc["description"] = op.Description
		}
		var params []map[string]any
		for _, m := range echoParam.FindAllStringSubmatch(op.Path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
	next:
		for _, pr := range op.Params {
			for _, have := range params {
				if have["in"] == "path" && pr.In == "path" && have["name"] == pr.Name {
					have["description"] = pr.Description // a path parameter is declared once
					continue next
				}
			}
			params = append(params, map[string]any{"name": pr.Name, "in": pr.In, "required": pr.Required,
				"description": pr.Description, "schema": map[string]any{"type": "string"}})
		}
		if params != nil {
			doc["parameters"] = params
		}
		if op.Body != nil {
			schema := op.BodySchema
			if schema == nil {
				schema = schemaRef(reflect.TypeOf(op.Body), schemas)
			}
			doc["requestBody"] = map[string]any{"required": true, "content": map[string]any{
				"application/json": map[string]any{"schema": schema}}}
		}
		responses := map[string]any{}
		for status, body := range op.Responses {
			r := map[string]any{"description": http.StatusText(status)}
			if body != nil {
				content := map[string]any{"application/json": map[string]any{"schema": schemaRef(reflect.TypeOf(body), schemas)}}
				if status >= 400 {
					// The same status can also be a problem (a batch whose events all failed is a
					// batch answer; a body that is not a batch is a problem).
					content["application/problem+json"] = map[string]any{"schema": schemaRef(reflect.TypeOf(Problem{}), schemas)}
				}
				r["content"] = content
			}
			responses[itoa(status)] = r
		}
		if r, ok := responses["200"].(map[string]any); ok && op.CSV {
			r["content"].(map[string]any)["text/csv"] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
		if op.Text {
			responses["200"] = map[string]any{"description": "OK", "content": map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}}
		}
		problem := map[string]any{"description": "Error (RFC 9457 problem)", "content": map[string]any{
			"application/problem+json": map[string]any{"schema": schemaRef(reflect.TypeOf(Problem{}), schemas)}}}
		responses["default"] = problem
		// Every route can answer these, whatever the operation says: a client is told to expect them.
		common := []int{http.StatusTooManyRequests} // the anonymous limiter, or the token's
		if !op.Open {
			common = append(common, http.StatusUnauthorized, http.StatusForbidden)
		}
		for _, status := range common {
			if _, ok := responses[itoa(status)]; !ok {
				responses[itoa(status)] = map[string]any{"description": http.StatusText(status), "content": problem["content"]}
			}
		}
		doc["responses"] = responses
		if !op.Open {
			doc["security"] = []map[string][]string{{"bearer": {string(op.Scope)}}}
		} else {
			doc["security"] = []map[string][]string{} // public: no token, whatever the defaults
		}
		paths[p][strings.ToLower(op.Method)] = doc
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Tidemark", "version": a.cfg.Version,
			"description": "Data catalog keyed on immutable asset IDs. Writes need a bearer token with the write scope."},
		"servers": []map[string]any{{"url": "/", "description": "this server (paths are relative to where the document was read)"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
	}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	uuidType = reflect.TypeOf(uuid.UUID{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

// schemaRef returns a JSON Schema for t, registering named structs under components.
func schemaRef(t reflect.Type, schemas map[string]any) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case t == rawType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := schemaRef(t.Elem(), schemas)
		if _, isRef := s["$ref"]; isRef {
			// OpenAPI 3.0 ignores nullable without a type beside it (and linters refuse it).
			return map[string]any{"type": "object", "allOf": []any{s}, "nullable": true}
		}
		s["nullable"] = true
		return s
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaRef(t.Elem(), schemas)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaRef(t.Elem(), schemas)}
	case reflect.Struct:
		name := t.Name()
		if _, done := schemas[name]; !done {
			schemas[name] = map[string]any{} // placeholder against recursion
			props := map[string]any{}
			var required []string
			fields(t, schemas, props, &required)
			slices.Sort(required)
			s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
			if required != nil {
				s["required"] = required
			}
			schemas[name] = s
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// fields adds the JSON properties of struct t to props as encoding/json writes them: the fields
// of an embedded struct without a JSON name are promoted into the outer object (exported or not).
func fields(t reflect.Type, schemas, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		fname, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && fname == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft != timeType {
				fields(ft, schemas, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if fname == "" {
			fname = f.Name
		}
		props[fname] = schemaRef(f.Type, schemas)
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, fname)
		}
	}
}
