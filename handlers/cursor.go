package handlers

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/google/uuid"
)

// Cursors are opaque to clients: base64url of "v1:<last id>:<scope>", where scope fingerprints
// the filter the page was listed with, so a cursor replayed against another filter is refused
// rather than silently skipping rows.
const cursorVersion = "v1"

func encodeCursor(after uuid.UUID, scope string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + ":" + after.String() + ":" + scopeHash(scope)))
}

// decodeCursor returns the ID a page continues after; an empty cursor means the first page.
func decodeCursor(s, scope string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, nil
	}
	bad := func(why string) (uuid.UUID, error) {
		return uuid.Nil, badRequest("cursor", "cursor %q is not valid (%s); pass next_cursor from the previous page unchanged, with the same filters", truncate(s, 64), why)
	}
	if len(s) > 200 {
		return bad("too long")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != cursorVersion {
		return bad("unknown format")
	}
	id, err := uuid.Parse(parts[1])
	if err != nil || id.String() != parts[1] {
		return bad("bad position")
	}
	if parts[2] != scopeHash(scope) {
		return bad("it was issued for different filters")
	}
	return id, nil
}

func scopeHash(scope string) string {
	h := fnv.New32a()
	h.Write([]byte(scope))
	return fmt.Sprintf("%08x", h.Sum32())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
