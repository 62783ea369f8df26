package tables

// A table's own ground, and the one reading of a path.
//
// A path a client names is read by Tidemark's checks and by the storage layer; iceberg-go's
// local file IO decodes percent-escapes and drops what follows '?' or '#', so a check that read
// the same string literally could pass "file:/wh/%2e%2e/x" while storage wrote outside the
// warehouse. Here a path is refused unless every reading of it names the same file: no
// percent-escape in locations and metadata paths, none that decodes to '/', '.', '%', '\', '?',
// '#' or a control character in data file paths (partition values are escaped there), and no
// '.', '..' or empty segment. What is left is checked as it is, and storage reads it the same.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent"
	"github.com/tidemark/tidemark/ent/icebergtable"
)

// MaxPathBytes bounds a location or file path a client names.
const MaxPathBytes = 4096

// ErrUnclearPath is a path that two readers could read as different files.
var ErrUnclearPath = errors.New("is not a plain path")

// CheckLocation checks a location, a metadata file, a manifest list, a manifest or a statistics
// file a client names: an absolute local path or a URI, in the one form every reader reads alike.
func CheckLocation(p string) error { return checkPath(p, false) }

// checkPath checks a path as CheckLocation does; with escapes (a data or delete file path),
// percent-escapes (how writers put partition values into paths) are allowed where they decode to
// a plain character, so the literal and the decoded reading have the same directories.
func checkPath(p string, escapes bool) error {
	unclear := func(format string, args ...any) error {
		return fmt.Errorf("%q %w: %s", clipPath(p), ErrUnclearPath, fmt.Sprintf(format, args...))
	}
	if p == "" {
		return unclear("it is empty")
	}
	if len(p) > MaxPathBytes {
		return unclear("it is %d bytes; the limit is %d", len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return unclear("it is not valid UTF-8")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return unclear("it holds a control character")
		case c == '?' || c == '#' || c == '\\':
			return unclear("it holds %q, which storage reads differently; name the file by its plain path", c)
		case c == '%':
			if !escapes {
				return unclear("it holds a percent-escape, which storage decodes and Tidemark's checks would not; name the location by its plain path")
			}
			if i+2 >= len(p) {
				return unclear("it holds a broken percent-escape")
			}
			b, err := url.PathUnescape(p[i : i+3])
			if err != nil {
				return unclear("it holds a broken percent-escape")
			}
			if d := b[0]; d < 0x20 || d == 0x7f || strings.ContainsRune("/.%\\?#", rune(d)) {
				return unclear("its escape %s decodes to %q, which would change the path's directories", p[i:i+3], d)
			}
			i += 2
		}
	}
	rest := p
	if i := strings.Index(p, "://"); i >= 0 {
		scheme := p[:i]
		if !validScheme(scheme) {
			return unclear("%q is not a URI scheme", scheme)
		}
		var auth string
		auth, rest, _ = strings.Cut(p[i+3:], "/")
		rest = "/" + rest
		if !strings.EqualFold(scheme, "file") && auth == "" {
			return unclear("it names no bucket or host")
		}
	} else if r, ok := strings.CutPrefix(p, "file:"); ok {
		rest = r
	}
	if !strings.HasPrefix(rest, "/") {
		return unclear("it is not an absolute path or a URI")
	}
	segs := strings.Split(rest[1:], "/")
	for i, s := range segs {
		switch {
		case s == "." || s == "..":
			return unclear("it holds a %q segment", s)
		case s == "" && i != len(segs)-1 && len(rest) > 1:
			return unclear("it holds an empty segment (//)")
		}
	}
	return nil
}

func validScheme(s string) bool {
	if s == "" || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func clipPath(p string) string {
	if len(p) > 200 {
		return p[:200] + "..."
	}
	return p
}

// ErrNotOwnGround is a file outside its table's own ground: outside the table's location, or
// inside another live table's.
var ErrNotOwnGround = errors.New("is not on the table's own ground")

// Ground is where a table's files may be: under its own location, and under no other live
// table's location.
type Ground struct {
	location string
	own      root
	others   []groundOther
	res      *resolver // the directories resolved while reading and checking
}

type groundOther struct {
	root  root
	ident string
	id    uuid.UUID
}

// GroundOf reads the ground of a table at location (self: the table's own asset, not another).
func GroundOf(ctx context.Context, db *ent.Client, location string, self uuid.UUID) (*Ground, error) {
	return groundOf(ctx, db, location, self, newResolver())
}

// groundOf is GroundOf resolving local paths through res (nil: each path on its own, as before
// the resolver; BenchmarkGroundOf compares the two).
func groundOf(ctx context.Context, db *ent.Client, location string, self uuid.UUID, res *resolver) (*Ground, error) {
	if err := CheckLocation(location); err != nil {
		return nil, err
	}
	own, err := parseRootWith(location, res, false)
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	rows, err := db.IcebergTable.Query().Where(icebergtable.GoneAtIsNil(), icebergtable.IDNEQ(self)).
		Select(icebergtable.FieldID, icebergtable.FieldLocation, icebergtable.FieldIdentifier).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("tables: read table locations: %w", err)
	}
	g := &Ground{location: location, own: own, res: res}
	for _, r := range rows {
		if r.Location == "" {
			continue
		}
		if o, err := parseRootWith(r.Location, res, true); err == nil && (own.contains(o) || o.contains(own)) {
			g.others = append(g.others, groundOther{root: o, ident: r.Identifier, id: r.ID})
		}
	}
	return g, nil
}

// Check refuses a path off the ground; data selects the data file rules (percent-escapes of
// partition values allowed).
func (g *Ground) Check(p string, data bool) error {
	if err := checkPath(p, data); err != nil {
		return err
	}
	forms := []string{p}
	if data && strings.Contains(p, "%") {
		d, err := url.PathUnescape(p)
		if err != nil {
			return fmt.Errorf("%q %w: %v", clipPath(p), ErrUnclearPath, err)
		}
		forms = append(forms, d)
	}
	for _, f := range forms {
		r, err := parseRootWith(f, g.res, false)
		if err != nil {
			return fmt.Errorf("%q %w: %v", clipPath(p), ErrNotOwnGround, err)
		}
		if !g.own.contains(r) {
			return fmt.Errorf("%s %w: it is outside the table's location %s", clipPath(p), ErrNotOwnGround, g.location)
		}
		for _, o := range g.others {
			if o.root.contains(r) {
				return fmt.Errorf("%s %w: it is inside the location %s of live table %s (asset %s)", clipPath(p), ErrNotOwnGround, o.root, o.ident, o.id)
			}
		}
	}
	return nil
}

// Owns reports why path is not a file a table at location may delete or name (nil: it may):
// the path must read one way and lie under the location. Another table nested inside the
// location is the caller's to judge (the cleanup bot reads every known table's references).
func Owns(location, path string) error {
	if err := CheckLocation(strings.TrimRight(location, "/")); err != nil {
		return fmt.Errorf("the table's location %w", err)
	}
	own, err := parseRoot(strings.TrimRight(location, "/"))
	if err != nil {
		return fmt.Errorf("tables: %w", err)
	}
	g := &Ground{location: location, own: own}
	return g.Check(path, true)
}
