package server

import (
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"
)

// NotFound answers a path a face's fallback route caught: 405 with Allow when the path is served
// for other methods, 404 otherwise. Echo prefers a fallback (RouteNotFound) to its own 405, so a
// face mounting one under its prefix uses this to keep telling a wrong method from a wrong path.
func (s *Server) NotFound(c echo.Context) error {
	fallbacks := map[string]bool{}
	for _, r := range s.e.Routes() {
		if r.Method == echo.RouteNotFound {
			fallbacks[r.Path] = true
		}
	}
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
		if p := probe.Path(); p != "" && !fallbacks[p] {
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
