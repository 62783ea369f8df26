// Command restsuite is what .ci/iceberg-rest-suite needs around `tidemark serve` to run
// iceberg-go's own REST integration tests unmodified: the tests expect a catalog at the root
// of http://localhost:8181 and an S3 bucket named "warehouse".
//
//	restsuite port                   print a free loopback port
//	restsuite wait URL               wait up to 30 s for URL to answer at all
//	restsuite bucket ENDPOINT NAME   create a bucket (access key admin, secret password)
//	restsuite proxy LISTEN TARGET    serve /v1/... as TARGET/iceberg/v1/..., the escaped path kept
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "restsuite:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 1 && args[0] == "port":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		return nil
	case len(args) == 2 && args[0] == "wait":
		return wait(args[1])
	case len(args) == 3 && args[0] == "bucket":
		return bucket(args[1], args[2])
	case len(args) == 3 && args[0] == "proxy":
		return proxy(args[1], args[2])
	}
	return errors.New("usage: restsuite port | wait URL | bucket ENDPOINT NAME | proxy LISTEN TARGET")
}

// wait polls url until anything answers (any status), for up to 30 s.
func wait(url string) error {
	c := http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
	}
	return fmt.Errorf("%s did not answer in 30 s", url)
}

func bucket(endpoint, name string) error {
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("admin", "password", "")})
	_, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	return err
}

// proxy forwards to TARGET, which has no path of its own.
func proxy(listen, target string) error {
	to, err := url.Parse(target)
	if err != nil {
		return err
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(to)
		// The namespace separator is %1F: keep the escaped path as the client sent it.
		r.Out.URL.Path = "/iceberg" + r.In.URL.Path
		r.Out.URL.RawPath = "/iceberg" + r.In.URL.EscapedPath()
		r.Out.Host = to.Host
	}}
	fmt.Printf("restsuite: http://%s/v1/... -> %s/iceberg/v1/...\n", listen, target)
	return http.ListenAndServe(listen, rp)
}
