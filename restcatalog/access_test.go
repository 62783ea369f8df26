package restcatalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tidemark/tidemark/app"
	"github.com/tidemark/tidemark/auth"
	"github.com/tidemark/tidemark/cleanup"
	"github.com/tidemark/tidemark/server"
	"github.com/tidemark/tidemark/storage"
	"github.com/tidemark/tidemark/storage/storagetest"
	"github.com/tidemark/tidemark/tables"
	"github.com/tidemark/tidemark/tables/tablestest"
	"github.com/tidemark/tidemark/warehouse"
)

// noAmbientAWS makes sure a client in this process has no storage settings of its own: what it
// reaches storage with comes from the catalog.
func noAmbientAWS(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_S3_ENDPOINT", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// accessServer is a test server with a second warehouse, "lake", on versitygw with the given
// access settings, and a token with the read scope only.
type accessServer struct {
	*testServer
	s3     *tablestest.S3
	Reader string
}

func newAccessServer(t *testing.T, db *storage.DB, s3srv *tablestest.S3, access tables.Access, configure func(*app.Config)) *accessServer {
	t.Helper()
	w := tables.Warehouse{Name: "lake", Location: "s3://" + s3srv.Bucket + "/wh", Props: s3srv.Props, Access: access}
	s := newServerWith(t, db, func(c *app.Config, _ *server.Config) {
		c.Tables = append(c.Tables, tables.WithWarehouses(w))
		if configure != nil {
			configure(c)
		}
	})
	r, _, err := auth.NewStore(db.Client, nil).Create(context.Background(), "reader", []auth.Scope{auth.ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	return &accessServer{testServer: s, s3: s3srv, Reader: r}
}

// lakeClient is iceberg-go's REST client with only the catalog's URI and a token: no endpoint,
// no keys. iceberg-go asks for vended credentials on every request by default.
func (s *accessServer) lakeClient(t testing.TB, token string) icecat.Catalog {
	t.Helper()
	cat, err := icecat.Load(context.Background(), "tidemark", iceberg.Properties{
		"type": "rest", "uri": s.URL + "/iceberg", "token": token, "warehouse": "lake"})
	if err != nil {
		t.Fatalf("load the REST catalog: %v", err)
	}
	return cat
}

// call sends one JSON request to the REST face and decodes the answer into out (when not nil).
func (s *accessServer) call(t testing.TB, method, path, token string, body any, header http.Header, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+"/iceberg/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if out != nil && res.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if res.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode
}

type loadResult struct {
	MetadataLocation   string            `json:"metadata-location"`
	Metadata           json.RawMessage   `json:"metadata"`
	Config             map[string]string `json:"config"`
	StorageCredentials []struct {
		Prefix string            `json:"prefix"`
		Config map[string]string `json:"config"`
	} `json:"storage-credentials"`
}

var vendHeader = http.Header{"X-Iceberg-Access-Delegation": {"vended-credentials"}}

// TestVendedKeysEndToEnd: an engine with no storage settings of its own (iceberg-go given only
// the catalog's URI and a write token) creates, appends to and reads back a table on S3 through
// the warehouse's vended keys; a token with only the read scope is refused them, on a load that
// asks for them and on the credentials endpoint; the settings every load answers hold no secret.
func TestVendedKeysEndToEnd(t *testing.T) {
	noAmbientAWS(t)
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		ctx := context.Background()
		s3srv := tablestest.StartS3(t)
		s := newAccessServer(t, db, s3srv, tables.Access{Vend: tables.VendKeys}, nil)

		cat := s.lakeClient(t, s.Writer)
		tbl := create(t, cat, "sales", "orders")
		if !strings.HasPrefix(tbl.Location(), "s3://"+s3srv.Bucket+"/wh/sales/orders-") {
			t.Fatalf("location %s", tbl.Location())
		}
		tbl = s.append(t, tbl, 0, 5)
		loaded, err := cat.LoadTable(ctx, table.Identifier{"sales", "orders"})
		if err != nil {
			t.Fatal(err)
		}
		at, err := loaded.Scan().ToArrowTable(ctx)
		if err != nil {
			t.Fatalf("read back through vended keys: %v", err)
		}
		if at.NumRows() != 5 {
			t.Fatalf("read back %d rows, want 5", at.NumRows())
		}
		at.Release()

		// What a load answers: storage settings always, keys only on request and to a writer.
		var plain, vended loadResult
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders", s.Writer, nil, nil, &plain); code != 200 {
			t.Fatalf("load: %d", code)
		}
		if plain.Config["s3.endpoint"] != s3srv.Endpoint || plain.Config["client.region"] != "us-east-1" || plain.Config["s3.path-style-access"] != "true" ||
			plain.Config["s3.force-virtual-addressing"] != "false" || len(plain.StorageCredentials) != 0 {
			t.Fatalf("a load without the header answered %+v", plain)
		}
		for k := range plain.Config {
			if strings.Contains(k, "secret") || strings.Contains(k, "access-key") {
				t.Fatalf("a load without vending answered %s", k)
			}
		}
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders", s.Writer, nil, vendHeader, &vended); code != 200 {
			t.Fatalf("vended load: %d", code)
		}
		if len(vended.StorageCredentials) != 1 || vended.StorageCredentials[0].Prefix != tbl.Location() ||
			vended.StorageCredentials[0].Config["s3.secret-access-key"] != s3srv.Props["s3.secret-access-key"] {
			t.Fatalf("vended credentials %+v", vended.StorageCredentials)
		}
		// A read token still loads the table, with no credentials: only writeable keys could be
		// vended, and it may not write.
		var toReader struct {
			StorageCredentials []any          `json:"storage-credentials"`
			Config             map[string]any `json:"config"`
		}
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders", s.Reader, nil, vendHeader, &toReader); code != 200 || len(toReader.StorageCredentials) != 0 {
			t.Fatalf("a read token's vended load: %d %+v, want 200 without credentials", code, toReader.StorageCredentials)
		}
		for k := range toReader.Config {
			if strings.Contains(k, "secret") || strings.Contains(k, "access-key") {
				t.Fatalf("a read token's load answered %s", k)
			}
		}
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders/credentials", s.Reader, nil, nil, nil); code != http.StatusForbidden {
			t.Fatalf("credentials endpoint for a read token: %d", code)
		}
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders/credentials", "", nil, nil, nil); code != http.StatusUnauthorized {
			t.Fatalf("credentials endpoint without a token: %d", code)
		}
		var fresh struct {
			StorageCredentials []struct{ Prefix string } `json:"storage-credentials"`
		}
		if code := s.call(t, "GET", "/lake/namespaces/sales/tables/orders/credentials", s.Writer, nil, nil, &fresh); code != 200 ||
			len(fresh.StorageCredentials) != 1 || fresh.StorageCredentials[0].Prefix != tbl.Location() {
			t.Fatalf("credentials endpoint: %d %+v", code, fresh)
		}
		if got, err := s.lakeClient(t, s.Reader).LoadTable(ctx, table.Identifier{"sales", "orders"}); err != nil {
			t.Fatalf("iceberg-go with a read token could not load the table: %v", err)
		} else if _, err := got.Scan().ToArrowTable(ctx); err == nil {
			t.Fatal("iceberg-go with a read token read the data: it was given storage access")
		}
		// The local warehouse vends nothing and does not advertise it.
		if code := s.call(t, "GET", "/main/namespaces/sales/tables/orders/credentials", s.Writer, nil, nil, nil); code != http.StatusNotFound {
			t.Fatalf("credentials of a warehouse that does not vend: %d", code)
		}
		for wh, want := range map[string]bool{"lake": true, "main": false} {
			var cfg struct{ Endpoints []string }
			s.call(t, "GET", "/config?warehouse="+wh, s.Writer, nil, nil, &cfg)
			got := strings.Contains(strings.Join(cfg.Endpoints, "\n"), "/credentials")
			if got != want || strings.Contains(strings.Join(cfg.Endpoints, "\n"), "/sign") {
				t.Fatalf("warehouse %s advertises %v", wh, cfg.Endpoints)
			}
		}
	})
}

// remoteSigner is an HTTP client for the AWS SDK that has each request signed by Tidemark's
// sign endpoint (the SDK signs with dummy keys first; that signature is replaced) and sends it
// to storage: an engine doing remote signing.
type remoteSigner struct {
	t              testing.TB
	signURL, token string
	mu             sync.Mutex // iceberg-go sends requests from several goroutines
	refused        []string   // the sign endpoint's refusals
}

// refusals returns the sign endpoint's refusals so far.
func (r *remoteSigner) refusals() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused)
}

func (r *remoteSigner) Do(req *http.Request) (*http.Response, error) {
	headers := map[string][]string{}
	for k, v := range req.Header {
		switch strings.ToLower(k) {
		case "authorization", "x-amz-date", "x-amz-security-token":
			continue
		}
		headers[k] = v
	}
	if req.ContentLength > 0 {
		headers["Content-Length"] = []string{fmt.Sprint(req.ContentLength)}
	}
	body, _ := json.Marshal(map[string]any{"region": "us-east-1", "uri": req.URL.String(), "method": req.Method, "headers": headers})
	sreq, _ := http.NewRequest("POST", r.signURL, bytes.NewReader(body))
	sreq.Header.Set("Authorization", "Bearer "+r.token)
	sreq.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(sreq)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		r.mu.Lock()
		r.refused = append(r.refused, fmt.Sprintf("%s %s: %d %s", req.Method, req.URL, res.StatusCode, b))
		r.mu.Unlock()
		return nil, fmt.Errorf("the sign endpoint refused %s %s: %d %s", req.Method, req.URL, res.StatusCode, b)
	}
	var signed struct {
		URI     string              `json:"uri"`
		Headers map[string][]string `json:"headers"`
	}
	if err := json.Unmarshal(b, &signed); err != nil {
		return nil, err
	}
	req.Header.Del("Authorization")
	for k, v := range signed.Headers {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Host") {
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return http.DefaultClient.Do(req)
}

// awsConfig is an AWS SDK configuration whose requests Tidemark signs: no keys of the engine's
// own (the dummy ones only make the SDK sign, and the signature is replaced).
func (r *remoteSigner) awsConfig() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("none", "none", ""), HTTPClient: r}
}

// TestRemoteSigning: an engine whose S3 requests Tidemark signs writes and commits a table
// (iceberg-go, its S3 client's requests signed through the sign endpoint), writes a file it
// never commits (a crash), and is refused what lies outside the table or its scope. The
// uncommitted file is in the inventory as signed (key, principal), an inventory pass proposes
// it after the age threshold without listing storage, and the committed files written the same
// way are never proposed.
func TestRemoteSigning(t *testing.T) {
	noAmbientAWS(t)
	storagetest.ForEach(t, func(t *testing.T, db *storage.DB) {
		clock := &shiftClock{}
		s3srv := tablestest.StartS3(t)
		s := newAccessServer(t, db, s3srv, tables.Access{RemoteSigning: true}, func(c *app.Config) {
			c.Cleanup = append(c.Cleanup, cleanup.WithClock(clock.Now))
		})
		cat := s.lakeClient(t, s.Writer)
		tbl := create(t, cat, "sales", "orders")
		id := assetOf(t, s.testServer, tbl)
		signPath := "/lake/namespaces/sales/tables/orders/sign"
		rs := &remoteSigner{t: t, signURL: s.URL + "/iceberg/v1" + signPath, token: s.Writer}
		ctx := utils.WithAwsConfig(context.Background(), ptr(rs.awsConfig()))

		// iceberg-go writes its data file, manifest and manifest list through signed requests.
		tbl, err := tbl.Append(ctx, s.lake.Record(tbl, tablestest.Rows(0, 4, time.Now())), nil)
		if err != nil {
			t.Fatalf("append through remote signing: %v (refused: %v)", err, rs.refusals())
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil || at.NumRows() != 4 {
			t.Fatalf("read back through remote signing: %v", err)
		}
		at.Release()
		committed := map[string]bool{tbl.CurrentSnapshot().ManifestList: true}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mfs, err := tbl.CurrentSnapshot().Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			committed[mf.FilePath()] = true
			for e, err := range mf.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				committed[e.DataFile().FilePath()] = true
			}
		}

		// The AWS SDK for Go: a signed PUT and GET reach versitygw; an out-of-prefix key is refused.
		cl := s3.NewFromConfig(rs.awsConfig(), func(o *s3.Options) { o.BaseEndpoint = aws.String(s3srv.Endpoint); o.UsePathStyle = true })
		prefix := strings.TrimPrefix(tbl.Location(), "s3://"+s3srv.Bucket+"/")
		crashed := prefix + "/data/crashed-writer.parquet"
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3srv.Bucket), Key: aws.String(crashed), Body: strings.NewReader("never committed")}); err != nil {
			t.Fatalf("signed PUT: %v", err)
		}
		got, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s3srv.Bucket), Key: aws.String(crashed)})
		if err != nil {
			t.Fatalf("signed GET: %v", err)
		}
		b, _ := io.ReadAll(got.Body)
		got.Body.Close()
		if string(b) != "never committed" {
			t.Fatalf("GET answered %q", b)
		}
		if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s3srv.Bucket), Key: aws.String("wh/sales/other/x.parquet"), Body: strings.NewReader("x")}); err == nil {
			t.Fatal("a PUT outside the table's location was signed")
		}
		if _, err := s3srv.Client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s3srv.Bucket), Key: aws.String("wh/sales/other/x.parquet")}); err == nil {
			t.Fatal("the refused PUT's object exists")
		}

		// Hostile sign requests, sent as they are.
		var live string
		for p := range committed {
			if strings.HasSuffix(p, ".parquet") {
				live = strings.TrimPrefix(p, "s3://"+s3srv.Bucket+"/")
			}
		}
		obj := func(key string) string { return s3srv.Endpoint + "/" + s3srv.Bucket + "/" + key }
		for _, tc := range []struct {
			name, token, method, uri string
			headers                  map[string][]string
			want                     int
		}{
			{"ReadTokenGet", s.Reader, "GET", obj(crashed), nil, 200},
			{"ReadTokenPut", s.Reader, "PUT", obj(prefix + "/data/r.parquet"), nil, 403},
			{"ReadTokenDelete", s.Reader, "DELETE", obj(crashed), nil, 403},
			{"NoToken", "", "GET", obj(crashed), nil, 401},
			{"OutOfPrefix", s.Writer, "GET", obj("wh/sales/other/x.parquet"), nil, 403},
			{"DotDot", s.Writer, "PUT", obj(prefix + "/../other/x.parquet"), nil, 400},
			{"EscapedDotDot", s.Writer, "PUT", obj(prefix + "/%2E%2E/other/x.parquet"), nil, 400},
			{"EscapedSlash", s.Writer, "PUT", obj(prefix + "%2F..%2Fother/x.parquet"), nil, 400},
			{"OtherBucket", s.Writer, "GET", s3srv.Endpoint + "/other-bucket/" + prefix + "/data/a.parquet", nil, 403},
			{"OtherHost", s.Writer, "GET", "http://169.254.169.254/" + s3srv.Bucket + "/" + prefix + "/a", nil, 403},
			{"DeleteLiveFile", s.Writer, "DELETE", obj(live), nil, 403},
			{"DeleteManifestList", s.Writer, "DELETE", obj(strings.TrimPrefix(tbl.CurrentSnapshot().ManifestList, "s3://"+s3srv.Bucket+"/")), nil, 403},
			{"DeleteUncommitted", s.Writer, "DELETE", obj(prefix + "/data/never-written.parquet"), nil, 200},
			{"CopyFromElsewhere", s.Writer, "PUT", obj(prefix + "/data/c.parquet"), map[string][]string{"X-Amz-Copy-Source": {"/other-bucket/secret"}}, 403},
			{"BatchDelete", s.Writer, "POST", obj(prefix+"/data/x.parquet") + "?delete", nil, 403},
			{"WrongRegion", s.Writer, "GET", obj(crashed), nil, 400},
		} {
			t.Run(tc.name, func(t *testing.T) {
				region := "us-east-1"
				if tc.name == "WrongRegion" {
					region = "eu-west-1"
				}
				body := map[string]any{"region": region, "uri": tc.uri, "method": tc.method, "headers": tc.headers}
				var out struct{ Headers map[string][]string }
				if code := s.call(t, "POST", signPath, tc.token, body, nil, &out); code != tc.want {
					t.Fatalf("got %d, want %d", code, tc.want)
				}
				if tc.want == 200 && len(out.Headers["Authorization"]) != 1 {
					t.Fatalf("signed headers %v", out.Headers)
				}
			})
		}
		if code := s.call(t, "POST", signPath, s.Writer, map[string]any{"uri": strings.Repeat("x", 9<<20), "method": "GET"}, nil, nil); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("an oversized sign request: %d", code)
		}
		if code := s.call(t, "POST", "/main/namespaces/sales/tables/orders/sign", s.Writer, map[string]any{"uri": obj(crashed), "method": "GET"}, nil, nil); code != http.StatusNotFound && code != http.StatusForbidden {
			t.Fatalf("signing for a warehouse that does not sign: %d", code)
		}

		// The inventory: the signed, uncommitted file with its principal; the committed ones added.
		inv, _, err := s.App.Warehouse.Inventory(context.Background(), id, warehouse.InventoryFilter{Change: "signed", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		signed := map[string]string{}
		for _, f := range inv {
			signed[f.Path] = f.Actor
		}
		crashedURI := "s3://" + s3srv.Bucket + "/" + crashed
		if signed[crashedURI] != "token:writer" {
			t.Fatalf("the crashed writer's file is not in the inventory as signed by token:writer: %v", signed)
		}
		for p := range committed {
			if _, ok := signed[p]; !ok {
				t.Fatalf("committed file %s was written through a signature and is not recorded as signed: %v", p, signed)
			}
		}
		left, st, err := s.App.Warehouse.Leftovers(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var leftPaths []string
		for _, l := range left {
			leftPaths = append(leftPaths, l.Path)
			if committed[l.Path] {
				t.Fatalf("committed file %s is a leftover", l.Path)
			}
		}
		if st.Signed < 2 || !contains(leftPaths, crashedURI) {
			t.Fatalf("leftovers %v (%+v), want the crashed writer's file among them", leftPaths, st)
		}

		// Inventory passes: nothing before the age threshold; after it, the signed file is
		// confirmed and proposed with no LIST request, and no committed file is.
		ctx0 := context.Background()
		early, err := s.App.Cleanup.Scan(ctx0, id, cleanup.ScanOptions{FromInventory: true})
		if err != nil || early.Requests.List != 0 {
			t.Fatalf("early inventory pass: %v %+v", err, early)
		}
		clock.Add(100 * time.Hour)
		first, err := s.App.Cleanup.Scan(ctx0, id, cleanup.ScanOptions{FromInventory: true})
		if err != nil || first.Requests.List != 0 || first.Candidates == 0 {
			t.Fatalf("first inventory pass: %v %+v", err, first)
		}
		clock.Add(2 * time.Hour)
		second, err := s.App.Cleanup.Scan(ctx0, id, cleanup.ScanOptions{FromInventory: true})
		if err != nil || second.Requests.List != 0 || second.Confirmed == 0 {
			t.Fatalf("second inventory pass: %v %+v", err, second)
		}
		if err := s.App.Lineage.Open(ctx0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.App.Cleanup.Propose(ctx0); err != nil {
			t.Fatal(err)
		}
		ps, err := s.App.Cleanup.Proposals(ctx0, cleanup.ProposalFilter{Kind: cleanup.KindOrphanFiles, State: "open", AssetID: id, Limit: 10})
		if err != nil || len(ps) != 1 {
			t.Fatalf("orphan proposals %+v (%v), want one", ps, err)
		}
		files, err := s.App.Cleanup.ProposalFiles(ctx0, ps[0].ID, cleanup.FileFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var proposed []string
		for _, f := range files {
			proposed = append(proposed, f.Path)
			if committed[f.Path] || committed["s3://"+strings.TrimPrefix(f.Path, "s3://")] {
				t.Fatalf("committed file %s was proposed", f.Path)
			}
		}
		if len(proposed) != 1 || !containsSuffix(proposed, "crashed-writer.parquet") {
			t.Fatalf("proposed %v, want the crashed writer's file", proposed)
		}
	})
}

func ptr[T any](v T) *T { return &v }

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsSuffix(xs []string, suffix string) bool {
	for _, v := range xs {
		if strings.HasSuffix(v, suffix) {
			return true
		}
	}
	return false
}
