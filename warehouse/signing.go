package warehouse

// Remote signing: Tidemark signs a client's S3 request with the warehouse's keys, after checking
// that it names an object under the table's location (decoded once, in the form storage uses),
// that its method fits the principal's scope, and, for a DELETE, that no retained snapshot
// references the object. A signed write is recorded in the write-path inventory as signed
// (written, not committed) before the signature is returned, so a file an engine wrote and
// never committed is known without a walk.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/google/uuid"

	"github.com/tidemark/tidemark/ent/iceberginventoryfile"
	"github.com/tidemark/tidemark/tables"
)

// ErrAccessDenied is a request for storage access the principal or the warehouse does not
// allow (a read token asking to write, a warehouse that does not sign or vend).
var ErrAccessDenied = errors.New("warehouse: storage access denied")

// SignatureWindow is how long after its X-Amz-Date S3 accepts a signed request: a signed write
// lands at most this long after it was signed, so a signed file is dated that much later than
// its signature (the age threshold then counts from no earlier than the write).
const SignatureWindow = 15 * time.Minute

// SignRequest is an S3 request a client asks Tidemark to sign (the spec's RemoteSignRequest).
type SignRequest struct {
	Region  string
	URI     string
	Method  string
	Headers map[string][]string
	// Write is whether the principal may write (a token with the write scope); otherwise only
	// GET and HEAD are signed.
	Write bool
	// Principal is who asks ("token:<name>"), recorded with a signed write.
	Principal string
}

// SignedRequest is the signed request (the spec's RemoteSignResult): the URI to send and the
// headers to send it with.
type SignedRequest struct {
	URI     string
	Headers map[string][]string
}

// s3Target is what an S3 request names, decoded once.
type s3Target struct {
	bucket string
	key    string // "" for a bucket-level request (a listing)
	query  url.Values
}

// Sign checks and signs one S3 request for a served table.
func (s *Service) Sign(ctx context.Context, wh string, id TableIdent, in SignRequest) (SignedRequest, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return SignedRequest{}, err
	}
	if !w.Access.RemoteSigning {
		return SignedRequest{}, serveErr(ErrAccessDenied, "warehouse %s does not offer remote signing (its access settings do not set remote_signing)", wh)
	}
	t, err := s.LoadServed(ctx, wh, id)
	if err != nil {
		return SignedRequest{}, err
	}
	loc := t.Metadata.Location()
	bucket, prefix, ok := s3Location(loc)
	if !ok {
		return SignedRequest{}, serveErr(ErrAccessDenied, "table %s lies at %s, not on S3: there is nothing to sign", id, loc)
	}
	method := strings.ToUpper(strings.TrimSpace(in.Method))
	tg, err := parseS3URI(w, in.URI)
	if err != nil {
		return SignedRequest{}, err
	}
	if tg.bucket != bucket {
		return SignedRequest{}, serveErr(ErrAccessDenied, "the request names bucket %q; table %s lies in bucket %q", tg.bucket, id, bucket)
	}
	if err := checkHeaders(in.Headers); err != nil {
		return SignedRequest{}, err
	}
	write, record, err := checkOperation(method, tg, prefix)
	if err != nil {
		return SignedRequest{}, err
	}
	if write && !in.Write {
		return SignedRequest{}, serveErr(ErrAccessDenied, "a %s of %s writes; the token may only read (GET and HEAD): use a token with the write scope", method, tg.key)
	}
	region := w.Storage.Region
	if region == "" {
		region = strings.TrimSpace(in.Region)
	}
	if region == "" {
		region = "us-east-1"
	}
	if in.Region != "" && in.Region != region {
		return SignedRequest{}, invalid("region", "the request is for region %q; warehouse %s is in %q", in.Region, wh, region)
	}
	file := schemeOf(loc) + "://" + bucket + "/" + tg.key
	if method == http.MethodDelete && tg.query.Get("uploadId") == "" {
		if err := s.checkUnreferenced(ctx, t, file); err != nil {
			return SignedRequest{}, err
		}
	}
	if record {
		if err := s.recordSigned(ctx, t.AssetID, loc, file, in.Principal); err != nil {
			return SignedRequest{}, err
		}
	}
	return s.signV4(ctx, w, region, method, in)
}

// s3Location splits an s3:// or s3a:// location into its bucket and key prefix (no slashes at
// either end).
func s3Location(loc string) (bucket, prefix string, ok bool) {
	rest, found := strings.CutPrefix(loc, "s3://")
	if !found {
		if rest, found = strings.CutPrefix(loc, "s3a://"); !found {
			return "", "", false
		}
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	return bucket, strings.Trim(prefix, "/"), bucket != ""
}

func schemeOf(loc string) string { s, _, _ := strings.Cut(loc, "://"); return s }

// parseS3URI reads the bucket, key and query a request URI names, in path-style
// (https://endpoint/bucket/key) or virtual-host form (https://bucket.endpoint/key). Only the
// warehouse's endpoint is signed for. Each path segment is decoded once, and a segment that is
// empty, "." or "..", or that decodes to a slash or a control character, is refused: the key
// checked is the key storage uses.
func parseS3URI(w tables.Warehouse, raw string) (s3Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return s3Target{}, invalid("uri", "uri %.200q is not an absolute http(s) URL of an S3 object", raw)
	}
	host := strings.ToLower(u.Host)
	var hosts []string // path-style hosts this warehouse's storage answers on
	scheme := "https"
	if w.Storage.Endpoint != "" {
		ep, err := url.Parse(w.Storage.Endpoint)
		if err != nil {
			return s3Target{}, err
		}
		scheme, hosts = ep.Scheme, []string{strings.ToLower(ep.Host)}
	} else {
		hosts = []string{"s3.amazonaws.com"}
		if w.Storage.Region != "" {
			hosts = append(hosts, "s3."+w.Storage.Region+".amazonaws.com")
		}
	}
	if u.Scheme != scheme {
		return s3Target{}, serveErr(ErrAccessDenied, "uri %.200q is not on the warehouse's storage endpoint (%s://%s)", raw, scheme, hosts[0])
	}
	segs := strings.Split(u.EscapedPath(), "/")
	if segs[0] != "" {
		return s3Target{}, invalid("uri", "uri %.200q has a relative path", raw)
	}
	segs = segs[1:]
	var tg s3Target
	switch {
	case contains(hosts, host):
		if len(segs) == 0 || segs[0] == "" {
			return s3Target{}, invalid("uri", "uri %.200q names no bucket", raw)
		}
		tg.bucket, segs = segs[0], segs[1:]
	default:
		for _, h := range hosts {
			if b, ok := strings.CutSuffix(host, "."+h); ok && b != "" && !strings.Contains(b, ".") {
				tg.bucket = b
			}
		}
		if tg.bucket == "" {
			return s3Target{}, serveErr(ErrAccessDenied, "uri %.200q is not on the warehouse's storage endpoint (%s://%s)", raw, scheme, hosts[0])
		}
	}
	if b, err := url.PathUnescape(tg.bucket); err != nil || b != tg.bucket {
		return s3Target{}, invalid("uri", "uri %.200q escapes its bucket name", raw)
	}
	if len(segs) == 1 && segs[0] == "" {
		segs = nil // "/bucket/": the bucket itself
	}
	keys := make([]string, len(segs))
	for i, seg := range segs {
		k, err := cleanSegment(seg, true)
		if err != nil {
			return s3Target{}, invalid("uri", "uri %.200q: %v", raw, err)
		}
		keys[i] = k
	}
	tg.key = strings.Join(keys, "/")
	if tg.query, err = url.ParseQuery(u.RawQuery); err != nil {
		return s3Target{}, invalid("uri", "uri %.200q has a query that is not valid: %v", raw, err)
	}
	// x-id names the operation for the AWS SDK's logs; S3 ignores it. It is not one of the
	// parameters that choose an operation, and is left out of the checks below.
	if ids := tg.query["x-id"]; len(ids) > 0 {
		if len(ids) > 1 || !operationName.MatchString(ids[0]) {
			return s3Target{}, invalid("uri", "uri %.200q has an x-id that is not an operation name", raw)
		}
		delete(tg.query, "x-id")
	}
	return tg, nil
}

// cleanSegment decodes one path segment (escaped: it is still percent-encoded) and refuses what
// could name another key than it seems to.
func cleanSegment(seg string, escaped bool) (string, error) {
	k := seg
	if escaped {
		var err error
		if k, err = url.PathUnescape(seg); err != nil {
			return "", fmt.Errorf("segment %q is not valid percent-encoding", seg)
		}
	}
	switch {
	case k == "":
		return "", errors.New("an empty path segment (//) names no key storage would keep")
	case k == "." || k == "..":
		return "", fmt.Errorf("a %q path segment is refused", k)
	case strings.Contains(k, "/"):
		return "", fmt.Errorf("segment %q decodes to a slash", seg)
	}
	for _, r := range k {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("segment %q holds a control character", seg)
		}
	}
	return k, nil
}

var operationName = regexp.MustCompile(`^[A-Za-z0-9]{1,64}$`)

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Query parameters a signed request may carry, per operation: anything else (acl, tagging,
// policy, restore, select, delete, ...) is another operation and is not signed.
var (
	readObjectParams = map[string]bool{"partNumber": true, "versionId": true, "response-content-type": true,
		"response-content-disposition": true, "response-content-encoding": true, "response-cache-control": true,
		"response-content-language": true, "response-expires": true}
	listParams = map[string]bool{"list-type": true, "prefix": true, "delimiter": true, "continuation-token": true,
		"start-after": true, "max-keys": true, "encoding-type": true, "fetch-owner": true, "marker": true}
)

// checkOperation says whether a request writes and whether it writes an object (to record),
// and refuses what lies outside the table's prefix or is not an object read, write or delete.
func checkOperation(method string, tg s3Target, prefix string) (write, record bool, err error) {
	only := func(allowed map[string]bool) error {
		for k := range tg.query {
			if !allowed[k] {
				return serveErr(ErrAccessDenied, "a %s with ?%s is not an operation Tidemark signs (object reads, writes, multipart uploads, deletes and listings under the table's location are)", method, k)
			}
		}
		return nil
	}
	if tg.key == "" {
		// A bucket-level request: only a listing of the table's own prefix.
		if method != http.MethodGet || !tg.query.Has("prefix") {
			return false, false, serveErr(ErrAccessDenied, "a %s of the bucket itself is not signed: only listings (GET ?prefix=) under the table's location are", method)
		}
		if err := only(listParams); err != nil {
			return false, false, err
		}
		p := tg.query.Get("prefix")
		if !strings.HasPrefix(p, prefix+"/") {
			return false, false, serveErr(ErrAccessDenied, "a listing of prefix %.200q lies outside the table's location %s/", p, prefix)
		}
		for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
			if _, err := cleanSegment(seg, false); err != nil {
				return false, false, invalid("uri", "listing prefix %.200q: %v", p, err)
			}
		}
		return false, false, nil
	}
	if !strings.HasPrefix(tg.key, prefix+"/") {
		return false, false, serveErr(ErrAccessDenied, "key %.200q lies outside the table's location %s/", tg.key, prefix)
	}
	q := tg.query
	switch method {
	case http.MethodGet, http.MethodHead:
		return false, false, only(readObjectParams)
	case http.MethodPut:
		if q.Has("uploadId") || q.Has("partNumber") { // a part of a multipart upload
			if !q.Has("uploadId") || !q.Has("partNumber") {
				return false, false, invalid("uri", "an upload part needs both uploadId and partNumber")
			}
			return true, false, only(map[string]bool{"uploadId": true, "partNumber": true})
		}
		return true, true, only(nil)
	case http.MethodPost:
		switch {
		case q.Has("uploads") && len(q) == 1: // create a multipart upload
		case q.Has("uploadId") && len(q) == 1: // complete one
		default:
			return false, false, serveErr(ErrAccessDenied, "a POST is signed only to create (?uploads) or complete (?uploadId=) a multipart upload; delete objects one by one")
		}
		return true, true, nil
	case http.MethodDelete:
		if q.Has("uploadId") { // abort a multipart upload
			return true, false, only(map[string]bool{"uploadId": true})
		}
		return true, false, only(nil)
	}
	return false, false, serveErr(ErrAccessDenied, "method %q is not signed: GET, HEAD, PUT, POST (multipart uploads) and DELETE are", method)
}

// refusedHeaders would make a signed request do more than read or write the object it names:
// copy another object in, or change who may read it.
func checkHeaders(h map[string][]string) error {
	for k := range h {
		l := strings.ToLower(k)
		switch {
		case strings.HasPrefix(l, "x-amz-copy-source"), l == "x-amz-acl", strings.HasPrefix(l, "x-amz-grant-"),
			l == "x-amz-website-redirect-location", strings.HasPrefix(l, "x-amz-object-lock-"), l == "x-amz-bypass-governance-retention":
			return serveErr(ErrAccessDenied, "header %s is not signed: a signed request reads, writes or deletes the object it names, and changes nothing else", k)
		}
	}
	return nil
}

// signV4 signs the request with the warehouse's keys (AWS Signature Version 4, S3's rules: the
// path is not escaped twice). Headers the signature sets are replaced.
func (s *Service) signV4(ctx context.Context, w tables.Warehouse, region, method string, in SignRequest) (SignedRequest, error) {
	r, err := http.NewRequestWithContext(ctx, method, in.URI, nil)
	if err != nil {
		return SignedRequest{}, invalid("uri", "uri %.200q: %v", in.URI, err)
	}
	for k, vs := range in.Headers {
		switch strings.ToLower(k) {
		case "authorization", "x-amz-date", "x-amz-security-token", "host", "content-length":
			continue
		}
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	if vs := in.Headers["Content-Length"]; len(vs) == 1 {
		if n, err := parseLength(vs[0]); err == nil {
			r.ContentLength = n
		}
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = "UNSIGNED-PAYLOAD"
		r.Header.Set("X-Amz-Content-Sha256", payload)
	}
	creds := aws.Credentials{AccessKeyID: w.Props["s3.access-key-id"], SecretAccessKey: w.Props["s3.secret-access-key"],
		SessionToken: w.Props["s3.session-token"]}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	if err := signer.SignHTTP(ctx, creds, r, payload, "s3", region, s.now().UTC()); err != nil {
		return SignedRequest{}, fmt.Errorf("warehouse: sign: %w", err)
	}
	out := SignedRequest{URI: in.URI, Headers: map[string][]string{}}
	for k, vs := range r.Header {
		out.Headers[k] = vs
	}
	if r.ContentLength > 0 {
		out.Headers["Content-Length"] = []string{fmt.Sprint(r.ContentLength)}
	}
	return out, nil
}

func parseLength(v string) (int64, error) {
	var n int64
	_, err := fmt.Sscan(strings.TrimSpace(v), &n)
	if err == nil && n < 0 {
		err = errors.New("negative")
	}
	return n, err
}

// recordSigned records a signed write in the inventory as signed, written and not committed:
// the principal, the time, and the key as a commit would name it (the location's scheme).
func (s *Service) recordSigned(ctx context.Context, asset uuid.UUID, loc, file, principal string) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	err = s.db.IcebergInventoryFile.Create().SetAssetID(asset).SetCommitID(id).SetPath(file).SetKind(kindOf(loc, file)).
		SetChange(changeSigned).SetActor(principal).SetRecordedAt(s.clock()).Exec(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: record the signed write of %s: %w", file, err)
	}
	return nil
}

// kindOf guesses an inventory kind from where Iceberg writers put a file.
func kindOf(loc, file string) string {
	rel := strings.TrimPrefix(file, strings.TrimRight(loc, "/")+"/")
	base := path.Base(rel)
	switch {
	case !strings.HasPrefix(rel, "metadata/"):
		return kindData
	case strings.HasSuffix(base, ".metadata.json"):
		return kindMetadata
	case strings.HasPrefix(base, "snap-") && strings.HasSuffix(base, ".avro"):
		return kindManifestList
	case strings.HasSuffix(base, ".avro"):
		return kindManifest
	}
	return kindData
}

// checkUnreferenced refuses a DELETE of a file the table's metadata or any snapshot it retains
// references. Retained: a snapshot the current metadata still lists (an expired one is gone
// from it; branches and tags keep theirs listed). A data or manifest file is referenced by a
// retained snapshot when the nearest of its ancestors (itself included) whose commit recorded
// the file recorded it as added. Where the inventory does not cover a retained snapshot (a
// registered table, or one written before Tidemark served it), nothing is deleted this way.
func (s *Service) checkUnreferenced(ctx context.Context, t ServedTable, file string) error {
	refused := func(why string, args ...any) error {
		return serveErr(ErrAccessDenied, "DELETE of %s refused: %s; files leave a served table through the cleanup bot's proposals", file, fmt.Sprintf(why, args...))
	}
	m := t.Metadata
	if file == t.MetadataLocation {
		return refused("it is the table's current metadata file")
	}
	for e := range m.PreviousFiles() {
		if e.MetadataFile == file {
			return refused("the table's metadata log names it")
		}
	}
	snaps := m.Snapshots()
	ids := make([]int64, 0, len(snaps))
	for _, sn := range snaps {
		if sn.ManifestList == file {
			return refused("it is the manifest list of retained snapshot %d", sn.SnapshotID)
		}
		ids = append(ids, sn.SnapshotID)
	}
	if len(ids) == 0 {
		return nil
	}
	covered := map[int64]bool{}
	for c := range slices.Chunk(ids, inChunk) {
		got, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(t.AssetID), iceberginventoryfile.SnapshotIDIn(c...),
			iceberginventoryfile.Kind(kindManifestList), iceberginventoryfile.Change(changeAdded)).Select(iceberginventoryfile.FieldSnapshotID).All(ctx)
		if err != nil {
			return fmt.Errorf("warehouse: read the inventory: %w", err)
		}
		for _, r := range got {
			covered[r.SnapshotID] = true
		}
	}
	for _, id := range ids {
		if !covered[id] {
			return refused("the inventory does not cover retained snapshot %d (the table was registered, or written before Tidemark served it), so Tidemark cannot tell that no snapshot references the file", id)
		}
	}
	rows, err := s.db.IcebergInventoryFile.Query().Where(iceberginventoryfile.AssetID(t.AssetID), iceberginventoryfile.Path(file),
		iceberginventoryfile.ChangeIn(changeAdded, changeRemoved)).Select(iceberginventoryfile.FieldSnapshotID, iceberginventoryfile.FieldChange).All(ctx)
	if err != nil {
		return fmt.Errorf("warehouse: read the inventory: %w", err)
	}
	if len(rows) == 0 {
		return nil
	}
	state := map[int64]string{} // the file's recorded change at a snapshot; "added" wins
	for _, r := range rows {
		if state[r.SnapshotID] != changeAdded {
			state[r.SnapshotID] = r.Change
		}
	}
	if sn := referencingSnapshot(snaps, state); sn != 0 {
		return refused("retained snapshot %d references it", sn)
	}
	return nil
}

// referencingSnapshot is a retained snapshot whose nearest recording ancestor added the file,
// or 0.
func referencingSnapshot(snaps []table.Snapshot, state map[int64]string) int64 {
	byID := make(map[int64]table.Snapshot, len(snaps))
	for _, sn := range snaps {
		byID[sn.SnapshotID] = sn
	}
	memo := map[int64]bool{}
	var live func(id int64, depth int) bool
	live = func(id int64, depth int) bool {
		if v, ok := memo[id]; ok {
			return v
		}
		var v bool
		switch c, ok := state[id]; {
		case ok:
			v = c == changeAdded
		case depth > len(snaps): // a cycle in hostile metadata: count it as referenced
			v = true
		default:
			sn, ok := byID[id]
			if ok && sn.ParentSnapshotID != nil {
				v = live(*sn.ParentSnapshotID, depth+1)
			}
		}
		memo[id] = v
		return v
	}
	ids := make([]int64, 0, len(snaps))
	for _, sn := range snaps {
		ids = append(ids, sn.SnapshotID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if live(id, 0) {
			return id
		}
	}
	return 0
}
