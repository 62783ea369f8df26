package tablestest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3 is a real S3-protocol server (versitygw, a gateway over a local directory) on loopback.
type S3 struct {
	Endpoint string
	Bucket   string
	Client   *s3.Client
	// Props are the iceberg-go IO properties that reach it.
	Props iceberg.Properties
}

// VersityGWEnv names the versitygw binary; without it, .bin/versitygw at the module root and
// then PATH are tried. CI installs it (see .ci/run).
const VersityGWEnv = "TIDEMARK_VERSITYGW"

func versitygw() string {
	if p := os.Getenv(VersityGWEnv); p != "" {
		return p
	}
	for dir, _ := os.Getwd(); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if p := filepath.Join(dir, ".bin", "versitygw"); fileExists(p) {
				return p
			}
			break
		}
	}
	p, _ := exec.LookPath("versitygw")
	return p
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// StartS3 starts versitygw over a temp dir with one bucket. Without the binary the test skips,
// unless CI is set: then it fails.
func StartS3(t testing.TB) *S3 {
	t.Helper()
	bin := versitygw()
	if bin == "" {
		msg := "versitygw not found: install it with GOBIN=$PWD/.bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, or set " + VersityGWEnv
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const access, secret, region = "tidemark", "tidemark-secret", "us-east-1"
	cmd := exec.Command(bin, "--port", addr, "--access", access, "--secret", secret, "--region", region, "--quiet", "posix", t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 200 {
			t.Fatalf("versitygw did not listen on %s: %v", addr, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	s := &S3{Endpoint: "http://" + addr, Bucket: "tidemark-test"}
	s.Client = s3.New(s3.Options{BaseEndpoint: aws.String(s.Endpoint), Region: region, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(access, secret, "")})
	if _, err := s.Client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	s.Props = iceberg.Properties{"s3.endpoint": s.Endpoint, "s3.region": region, "s3.access-key-id": access,
		"s3.secret-access-key": secret, "s3.force-virtual-addressing": "false"}
	return s
}

// Put writes an object of n bytes at an s3:// URI of this bucket.
func (s *S3) Put(t testing.TB, uri string, n int) {
	t.Helper()
	key := strings.TrimPrefix(strings.TrimPrefix(uri, "s3://"+s.Bucket+"/"), "s3a://"+s.Bucket+"/")
	if _, err := s.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key),
		Body: strings.NewReader(strings.Repeat("x", n))}); err != nil {
		t.Fatalf("put %s: %v", uri, err)
	}
}

// Delete removes the object at an s3:// URI of this bucket.
func (s *S3) Delete(t testing.TB, uri string) {
	t.Helper()
	key := strings.TrimPrefix(uri, "s3://"+s.Bucket+"/")
	if _, err := s.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete %s: %v", uri, err)
	}
}

// NewLakeS3 is NewLake with the warehouse in the S3 bucket (the SQL catalog stays on SQLite).
func NewLakeS3(t testing.TB, s *S3) *Lake {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	props := iceberg.Properties{"warehouse": fmt.Sprintf("s3://%s/wh", s.Bucket)}
	for k, v := range s.Props {
		props[k] = v
	}
	cat, err := sqlcat.NewCatalog(Name, db, sqlcat.SQLite, props)
	if err != nil {
		t.Fatal(err)
	}
	l := &Lake{t: t, ctx: context.Background(), Dir: dir, Cat: cat}
	if err := cat.CreateNamespace(l.ctx, table.Identifier{"db"}, nil); err != nil {
		t.Fatal(err)
	}
	return l
}
