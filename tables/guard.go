package tables

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// DefaultFileLimit is the largest metadata, manifest list or manifest file the service reads.
const DefaultFileLimit = 256 << 20

// ErrOutsideRoots, ErrNotRegular, ErrTooLarge and ErrNoCredentials are why a location given by a
// client is refused before anything of it is read.
var (
	ErrOutsideRoots  = errors.New("is not under a warehouse root")
	ErrNotRegular    = errors.New("is not a regular file")
	ErrTooLarge      = errors.New("is larger than the file size limit")
	ErrNoCredentials = errors.New("needs object store credentials in io_properties")
)

// root is a warehouse root: a normalized location prefix.
type root struct{ scheme, auth, path string }

// parseRoot normalizes a location: local paths and file: URIs become absolute, cleaned paths with
// symbolic links resolved as far as they exist; s3a and s3n are s3.
func parseRoot(loc string) (root, error) { return parseRootWith(loc, nil, false) }

// parseRootWith is parseRoot resolving local paths through res (nil: resolveLocal), listing
// directories when listed (see resolver.resolve).
func parseRootWith(loc string, res *resolver, listed bool) (root, error) {
	if !strings.Contains(loc, "://") {
		p := strings.TrimPrefix(loc, "file:")
		if !filepath.IsAbs(p) {
			return root{}, fmt.Errorf("%q is not an absolute path or a URI", loc)
		}
		return root{scheme: "file", path: res.resolve(filepath.Clean(p), listed)}, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return root{}, fmt.Errorf("%q is not a URI: %w", loc, err)
	}
	scheme := strings.ToLower(u.Scheme)
	switch scheme {
	case "s3a", "s3n":
		scheme = "s3"
	case "file":
		if u.Host != "" && !strings.EqualFold(u.Host, "localhost") {
			return root{}, fmt.Errorf("tables: %q names a remote host", loc)
		}
		return root{scheme: "file", path: res.resolve(path.Clean("/"+u.Path), listed)}, nil
	}
	if u.Host == "" {
		return root{}, fmt.Errorf("tables: %q has no bucket or host", loc)
	}
	return root{scheme: scheme, auth: strings.ToLower(u.Host), path: path.Clean("/" + u.Path)}, nil
}

// resolver resolves clean absolute local paths as resolveLocal does, remembering the directories
// it resolved: a path whose directory it resolved before costs one Lstat of its last element,
// not one per element of the path (a commit checks every path it names, and every live table's
// location, mostly in a few directories). It lives as long as one check of one commit (a
// Ground): what it remembers is as fresh as a resolution made while the check runs.
type resolver struct {
	mu    sync.Mutex
	dirs  map[string]string
	links map[string]map[string]bool // per resolved directory listed: its entries that are links (nil: unlisted)
}

// maxResolvedDirs bounds a resolver's memory; past it, it starts again.
const maxResolvedDirs = 1 << 16

func newResolver() *resolver {
	return &resolver{dirs: map[string]string{}, links: map[string]map[string]bool{}}
}

// resolve is resolveLocal(p): the directory resolved (remembered), then the last element joined
// to it, followed only when it is a symbolic link. With listed, whether it is one is read from
// a listing of the directory, made once (for many paths in one directory: every table's
// location in a namespace's directory), instead of an Lstat each.
func (r *resolver) resolve(p string, listed bool) string {
	if r == nil {
		return resolveLocal(p)
	}
	dir, base := filepath.Dir(p), filepath.Base(p)
	if dir == p {
		return resolveLocal(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dirs) >= maxResolvedDirs {
		clear(r.dirs)
		clear(r.links)
	}
	rd, ok := r.dirs[dir]
	if !ok {
		rd = resolveLocal(dir)
		r.dirs[dir] = rd
	}
	c := filepath.Join(rd, base)
	if listed {
		links, ok := r.links[rd]
		if !ok {
			links = linksIn(rd)
			r.links[rd] = links
		}
		if links != nil {
			if links[base] {
				return resolveLocal(c)
			}
			return c
		}
	}
	if fi, err := os.Lstat(c); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return resolveLocal(c)
	}
	return c
}

// linksIn lists dir's entries that are symbolic links (nil when dir cannot be listed; empty
// when it has none).
func linksIn(dir string) map[string]bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	links := map[string]bool{}
	for _, e := range ents {
		if e.Type()&fs.ModeSymlink != 0 {
			links[e.Name()] = true
		}
	}
	return links
}

// resolveLocal resolves symbolic links in the longest existing prefix of p, so a link inside a
// root that points out of it is judged by where it points.
func resolveLocal(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func (r root) contains(o root) bool {
	if r.scheme != o.scheme || r.auth != o.auth {
		return false
	}
	return r.path == "/" || o.path == r.path || strings.HasPrefix(o.path, r.path+"/")
}

func (r root) String() string {
	if r.scheme == "file" {
		return "file://" + r.path
	}
	return r.scheme + "://" + r.auth + r.path
}

// roots is the set of warehouse roots; nil allows every location (tables read through a
// configured catalog, whose locations the operator's catalog vouches for).
type roots []root

func (rs roots) check(loc string) error {
	if rs == nil {
		return nil
	}
	r, err := parseRoot(loc)
	if err != nil {
		return fmt.Errorf("tables: %s %w: %v", loc, ErrOutsideRoots, err)
	}
	for _, w := range rs {
		if w.contains(r) {
			return nil
		}
	}
	return fmt.Errorf("tables: %s %w (%s)", loc, ErrOutsideRoots, rs.list())
}

func (rs roots) list() string {
	if len(rs) == 0 {
		return "none is configured: set --warehouse-roots"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return "roots: " + strings.Join(s, ", ")
}

// guardIO reads table files for the service: only under its roots (when set), only regular
// files, none larger than the limit. A FIFO, a device or /dev/zero named by a client or by a
// crafted manifest list cannot pin a thread or fill memory.
type guardIO struct {
	inner icebergio.IO
	roots roots
	limit int64
}

// guard wraps an IO; an IO already guarded keeps its roots.
func guard(inner icebergio.IO, rs roots, limit int64) icebergio.IO {
	if g, ok := inner.(*guardIO); ok {
		return g
	}
	return &guardIO{inner: inner, roots: rs, limit: limit}
}

// unguard returns the IO a guard wraps: listing and deleting are the cleanup bot's, which
// bounds them itself.
func unguard(fsys icebergio.IO) icebergio.IO {
	if g, ok := fsys.(*guardIO); ok {
		return g.inner
	}
	return fsys
}

func (g *guardIO) Open(name string) (icebergio.File, error) {
	if err := g.roots.check(name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if p, ok := localFile(name); ok {
		// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, err
		}
		if err := g.check(f, name, true); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	f, err := g.inner.Open(name)
	if err != nil {
		return nil, err
	}
	// An object store has only objects (their IO reports modes of its own): the size is the check.
	if err := g.check(f, name, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (g *guardIO) check(f fs.File, name string, local bool) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if local && !st.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	}
	if st.Size() > g.limit {
		return &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, st.Size(), g.limit)}
	}
	return nil
}

// Remove is refused: the service only reads.
func (g *guardIO) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errors.ErrUnsupported}
}

// localFile returns the local path of a file: location (as iceberg-go's LocalFS reads it).
func localFile(name string) (string, bool) {
	if !strings.Contains(name, "://") {
		return strings.TrimPrefix(name, "file:"), true
	}
	u, err := url.Parse(name)
	if err != nil || !strings.EqualFold(u.Scheme, "file") {
		return "", false
	}
	return u.Path, true
}

// credentialProps are the IO properties that name credentials explicitly; without one (or the
// operator's opt-in) an object store location is refused, so a client cannot make the server
// use the credentials of the machine it runs on (instance metadata, environment, profiles).
var credentialProps = []string{
	icebergio.S3AccessKeyID, icebergio.GCSOAuthToken, icebergio.GCSJSONKey, icebergio.GCSKeyPath, icebergio.GCSNoAuth,
	icebergio.ADLSSharedKeyAccountKey, icebergio.ADLSSasTokenPrefix, icebergio.ADLSConnectionStringPrefix,
}

func checkCredentials(loc string, props iceberg.Properties, ambient bool) error {
	if _, ok := localFile(loc); ok || ambient {
		return nil
	}
	for k, v := range props {
		for _, c := range credentialProps {
			// The ADLS ones are prefixes (adls.sas-token.<account>).
			if v != "" && strings.HasPrefix(k, c) {
				return nil
			}
		}
	}
	return fmt.Errorf("tables: %s %w (s3.access-key-id and s3.secret-access-key, ...), or start the server with --io-ambient-credentials to use the machine's own", loc, ErrNoCredentials)
}

// guardFS guards what an IO function opens: under rs (nil: anywhere), regular files within the
// size limit. An IO already guarded keeps its roots.
func (s *Service) guardFS(open func(context.Context) (icebergio.IO, error), rs roots) func(context.Context) (icebergio.IO, error) {
	return func(ctx context.Context) (icebergio.IO, error) {
		fsys, err := open(ctx)
		if err != nil {
			return nil, err
		}
		return guard(fsys, rs, s.limit), nil
	}
}

// locationFS is the guarded IO of a table read by its metadata location.
func (s *Service) locationFS(props iceberg.Properties, loc string, rs roots) func(context.Context) (icebergio.IO, error) {
	return s.guardFS(icebergio.LoadFSFunc(props, loc), rs)
}
