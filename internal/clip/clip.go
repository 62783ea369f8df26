// Package clip cuts text a client or a dataset supplied to a bounded length before it is logged
// or stored.
package clip

import "unicode/utf8"

// String cuts s to at most n bytes on a character boundary, marking a cut with "…".
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
