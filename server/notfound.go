package server

import (
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
)

// Fallback answers every path under pattern that no route serves with h (nil: NotFound). Faces
// register their fallbacks here, so NotFound can tell them from real routes.
func (s *Server) Fallback(pattern string, h echo.HandlerFunc) {
	if h == nil {
		h = s.NotFound
	}
	s.fallbacks[pattern] = true
	s.e.RouteNotFound(pattern, h)
}

// NotFound answers a path a fallback caught: 405 with Allow when the path is served for other
// methods, 404 otherwise. Echo prefers a fallback (RouteNotFound) to its own 405, so without this
// a face with a fallback under its prefix could not tell a wrong method from a wrong path.
func (s *Server) NotFound(c echo.Context) error {
	var allow []string
	path := c.Request().URL.Path
	if raw := c.Request().URL.RawPath; raw != "" {
		path = raw
	}
	for m := range knownMethods {
		if m == c.Request().Method || m == http.MethodConnect || m == http.MethodTrace {
			continue
		}
		probe := s.e.NewContext(nil, nil)
		s.e.Router().Find(m, path, probe)
		if p := probe.Path(); p != "" && !s.fallbacks[p] {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		return echo.ErrNotFound
	}
	sort.Strings(allow)
	c.Response().Header().Set(echo.HeaderAllow, strings.Join(allow, ", "))
	return echo.ErrMethodNotAllowed
}
