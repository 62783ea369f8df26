package server

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
)

// validParams refuses, on every route of every face, query and path parameters that are not
// valid UTF-8 or hold a NUL: no store keeps them and no log line should.
func validParams(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for name, vs := range c.QueryParams() {
			for _, v := range vs {
				if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
					return &Error{Status: http.StatusBadRequest, Field: name, Message: fmt.Sprintf("query parameter %q holds a NUL character or invalid UTF-8", name)}
				}
			}
		}
		for i, v := range c.ParamValues() {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				name := ""
				if names := c.ParamNames(); i < len(names) {
					name = names[i]
				}
				return &Error{Status: http.StatusBadRequest, Field: name, Message: fmt.Sprintf("path parameter %q holds a NUL character or invalid UTF-8", name)}
			}
		}
		return next(c)
	}
}
