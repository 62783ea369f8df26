// Package etag compares entity tags the way HTTP conditional requests do (RFC 9110 section 8.8.3
// and 13.1.2), for the faces that answer If-None-Match.
package etag

import "strings"

// Matches reports whether an If-None-Match header value names etag: the header is "*" or a
// comma-separated list of entity tags, and a tag matches by weak comparison (W/"x" and "x" are
// the same tag). Tags are compared whole, never as substrings ("12" does not match "1"). A
// malformed list matches nothing from the point it stops parsing, so the client gets the full
// answer rather than a 304 it did not ask for.
func Matches(header, etag string) bool {
	want, ok := opaque(etag)
	if !ok {
		return false
	}
	h := header
	for {
		h = strings.TrimLeft(h, " \t,")
		if h == "" {
			return false
		}
		if h[0] == '*' {
			// "*" matches any current representation; it stands alone or not at all.
			rest := strings.TrimLeft(h[1:], " \t")
			return rest == "" && strings.TrimSpace(header) == "*"
		}
		h = strings.TrimPrefix(h, "W/")
		if h == "" || h[0] != '"' {
			return false
		}
		end := strings.IndexByte(h[1:], '"')
		if end < 0 {
			return false
		}
		if h[:end+2] == want {
			return true
		}
		h = h[end+2:]
		// Between tags only white space and a comma may stand.
		if t := strings.TrimLeft(h, " \t"); t != "" && t[0] != ',' {
			return false
		}
	}
}

// opaque is a tag without its weakness marker: `"x"` for both `"x"` and `W/"x"`.
func opaque(tag string) (string, bool) {
	tag = strings.TrimPrefix(tag, "W/")
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' || strings.Contains(tag[1:len(tag)-1], `"`) {
		return "", false
	}
	return tag, true
}
