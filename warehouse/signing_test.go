package warehouse

import (
	"errors"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark/catalog"
	"github.com/tidemark/tidemark/tables"
)

// TestSessionPolicy: the session policy vended STS credentials carry, exactly. The STS call
// itself is not tested here (no STS server that serves AssumeRole can be installed here).
func TestSessionPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, loc string
		write     bool
		want      string
	}{
		{"ReadOnly", "s3://lake/wh/sales/orders-0190", false,
			`{"Version":"2012-10-17","Statement":[` +
				`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/wh/sales/orders-0190/*"]},` +
				`{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["wh/sales/orders-0190/*"]}}},` +
				`{"Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]}]}`},
		{"ReadWrite", "s3a://lake/t/", true,
			`{"Version":"2012-10-17","Statement":[` +
				`{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::lake/t/*"]},` +
				`{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::lake"],"Condition":{"StringLike":{"s3:prefix":["t/*"]}}},` +
				`{"Effect":"Allow","Action":["s3:GetBucketLocation"],"Resource":["arn:aws:s3:::lake"]},` +
				`{"Effect":"Allow","Action":["s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload","s3:ListMultipartUploadParts"],"Resource":["arn:aws:s3:::lake/t/*"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SessionPolicy(tc.loc, tc.write)
			if err != nil || got != tc.want {
				t.Fatalf("got %s (%v)\nwant %s", got, err, tc.want)
			}
		})
	}
	for _, loc := range []string{"s3://lake/wh/o*", "s3://lake/wh/a?b", "s3://lake/${aws:username}", "s3://lake", "file:///srv/wh/t"} {
		if _, err := SessionPolicy(loc, true); !errors.Is(err, ErrAccessDenied) {
			t.Errorf("%s: got %v, want a refusal", loc, err)
		}
	}
}

// TestSignChecks: what a sign request names is checked in the form storage uses.
func TestSignChecks(t *testing.T) {
	yes := true
	w := tables.Warehouse{Storage: tables.StorageSettings{Endpoint: "http://127.0.0.1:9000", PathStyle: &yes}}
	const prefix = "wh/db/t-1"
	for _, tc := range []struct {
		name, method, uri string
		write, record     bool
		bad               error // nil: accepted
	}{
		{"GetPathStyle", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet", false, false, nil},
		{"GetVirtualHost", "GET", "http://lake.127.0.0.1:9000/wh/db/t-1/data/a.parquet", false, false, nil},
		{"EscapedSpace", "HEAD", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a%20b.parquet", false, false, nil},
		{"Put", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet", true, true, nil},
		{"PutSDKOperationID", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?x-id=PutObject", true, true, nil},
		{"OddOperationID", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?x-id=a%26acl", false, false, catalog.ErrInvalid},
		{"UploadPart", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?partNumber=2&uploadId=x", true, false, nil},
		{"CreateMultipart", "POST", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?uploads", true, true, nil},
		{"CompleteMultipart", "POST", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?uploadId=x", true, true, nil},
		{"AbortMultipart", "DELETE", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet?uploadId=x", true, false, nil},
		{"Delete", "DELETE", "http://127.0.0.1:9000/lake/wh/db/t-1/data/a.parquet", true, false, nil},
		{"List", "GET", "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Fdb%2Ft-1%2Fdata%2F", false, false, nil},
		{"ListOutside", "GET", "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Fdb%2F", false, false, ErrAccessDenied},
		{"ListDotDot", "GET", "http://127.0.0.1:9000/lake?prefix=wh%2Fdb%2Ft-1%2F..%2Fu%2F", false, false, catalog.ErrInvalid},
		{"BucketPut", "PUT", "http://127.0.0.1:9000/lake", false, false, ErrAccessDenied},
		{"OutsidePrefix", "GET", "http://127.0.0.1:9000/lake/wh/db/t-2/data/a.parquet", false, false, ErrAccessDenied},
		{"SiblingByName", "GET", "http://127.0.0.1:9000/lake/wh/db/t-10/a.parquet", false, false, ErrAccessDenied},
		{"DotDot", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1/../t-2/a.parquet", false, false, catalog.ErrInvalid},
		{"EscapedDotDot", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/%2e%2e/t-2/a.parquet", false, false, catalog.ErrInvalid},
		{"Dot", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1/./a.parquet", false, false, catalog.ErrInvalid},
		{"EscapedSlash", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1%2F..%2Ft-2/a.parquet", false, false, catalog.ErrInvalid},
		{"EmptySegment", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1//a.parquet", false, false, catalog.ErrInvalid},
		{"ControlChar", "GET", "http://127.0.0.1:9000/lake/wh/db/t-1/a%00.parquet", false, false, catalog.ErrInvalid},
		{"OtherHost", "GET", "http://evil.example:9000/lake/wh/db/t-1/a.parquet", false, false, ErrAccessDenied},
		{"OtherPort", "GET", "http://127.0.0.1:9001/lake/wh/db/t-1/a.parquet", false, false, ErrAccessDenied},
		{"OtherScheme", "GET", "https://127.0.0.1:9000/lake/wh/db/t-1/a.parquet", false, false, ErrAccessDenied},
		{"UserInfo", "GET", "http://u:p@127.0.0.1:9000/lake/wh/db/t-1/a.parquet", false, false, catalog.ErrInvalid},
		{"Acl", "PUT", "http://127.0.0.1:9000/lake/wh/db/t-1/a.parquet?acl", false, false, ErrAccessDenied},
		{"BatchDelete", "POST", "http://127.0.0.1:9000/lake/wh/db/t-1/a.parquet?delete", false, false, ErrAccessDenied},
		{"Patch", "PATCH", "http://127.0.0.1:9000/lake/wh/db/t-1/a.parquet", false, false, ErrAccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg, err := parseS3URI(w, tc.uri)
			var write, record bool
			if err == nil {
				if tg.bucket != "lake" {
					err = ErrAccessDenied
				} else {
					write, record, err = checkOperation(tc.method, tg, prefix)
				}
			}
			switch {
			case tc.bad == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.bad != nil && !errors.Is(err, tc.bad):
				t.Fatalf("got %v, want %v", err, tc.bad)
			case tc.bad == nil && (write != tc.write || record != tc.record):
				t.Fatalf("write %v record %v, want %v %v", write, record, tc.write, tc.record)
			}
		})
	}
	if err := checkHeaders(map[string][]string{"X-Amz-Copy-Source": {"lake/other"}}); !errors.Is(err, ErrAccessDenied) {
		t.Fatalf("a copy source was accepted: %v", err)
	}
	if err := checkHeaders(http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}); err != nil {
		t.Fatal(err)
	}
}
