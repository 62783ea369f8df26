package cleanup

import (
	"path"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// normalize turns a listed or referenced path into the key both are compared by, and the
// path alone (without scheme and authority) for spotting two names of one file. Local paths,
// file:/x and file:///x are all file:///x; s3a and s3n are s3; scheme and authority are
// compared case-insensitively.
func normalize(p string) (key, pathOnly string) {
	scheme, auth, rest := "file", "", p
	if i := strings.Index(p, "://"); i >= 0 {
		scheme, rest = strings.ToLower(p[:i]), p[i+3:]
		if scheme == "file" {
			// file:///x has an empty authority; file://host/x names a host.
			if !strings.HasPrefix(rest, "/") {
				auth, rest, _ = strings.Cut(rest, "/")
				rest = "/" + rest
			}
		} else {
			auth, rest, _ = strings.Cut(rest, "/")
			rest = "/" + rest
		}
	} else if r, ok := strings.CutPrefix(p, "file:"); ok {
		rest = r
	}
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	}
	auth = strings.ToLower(auth)
	clean := path.Clean("/" + rest)
	return scheme + "://" + auth + clean, clean
}

// refSet is the set of referenced files as sorted 64-bit hashes of their keys (and of their
// paths alone): 16 bytes a referenced file, whatever its path length. A hash collision can only
// make an unreferenced file look referenced, which keeps it; never the reverse.
type refSet struct {
	keys  []uint64
	paths []uint64
}

func (r *refSet) add(p string) {
	k, po := normalize(p)
	r.keys = append(r.keys, xxhash.Sum64String(k))
	r.paths = append(r.paths, xxhash.Sum64String(po))
}

func (r *refSet) seal() {
	slices.Sort(r.keys)
	r.keys = slices.Compact(r.keys)
	slices.Sort(r.paths)
	r.paths = slices.Compact(r.paths)
}

func (r *refSet) has(key string) bool {
	_, ok := slices.BinarySearch(r.keys, xxhash.Sum64String(key))
	return ok
}

func (r *refSet) hasPath(pathOnly string) bool {
	_, ok := slices.BinarySearch(r.paths, xxhash.Sum64String(pathOnly))
	return ok
}
