package warehouse

// Vended credentials: storage credentials handed to a client for one table's location. With an
// STS role, temporary credentials from AssumeRole under a session policy that limits them to the
// table's prefix (read-only for a principal that may only read) and a bounded lifetime; with
// keys vending, the warehouse's own keys, which cannot be scoped, so they go only to a principal
// that may write. Credentials are never logged or stored.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/tidemark/tidemark/tables"
)

// StorageCredential is credentials for the objects under Prefix (the spec's StorageCredential),
// as iceberg-go IO properties (s3.access-key-id, s3.secret-access-key, s3.session-token, ...).
type StorageCredential struct {
	Prefix string
	Config map[string]string
}

// AssumeRoler is the STS call vending makes (an *sts.Client; tests substitute one).
type AssumeRoler interface {
	AssumeRole(ctx context.Context, in *sts.AssumeRoleInput, opts ...func(*sts.Options)) (*sts.AssumeRoleOutput, error)
}

// WithSTS sets how a warehouse's STS client is made (tests; default: an STS client with the
// warehouse's keys, its region and its STS endpoint).
func WithSTS(f func(w tables.Warehouse) AssumeRoler) Option { return func(s *Service) { s.sts = f } }

func defaultSTS(w tables.Warehouse) AssumeRoler {
	region := w.Storage.Region
	if region == "" {
		region = "us-east-1"
	}
	o := sts.Options{Region: region, Credentials: credentials.NewStaticCredentialsProvider(w.Props["s3.access-key-id"],
		w.Props["s3.secret-access-key"], w.Props["s3.session-token"])}
	if w.Access.STSEndpoint != "" {
		o.BaseEndpoint = aws.String(w.Access.STSEndpoint)
	}
	return sts.New(o)
}

// Vend returns storage credentials for a served table at location loc (the table's location),
// for a principal that may write or only read.
func (s *Service) Vend(ctx context.Context, wh string, loc string, write bool, principal string) ([]StorageCredential, error) {
	w, err := s.warehouse(wh)
	if err != nil {
		return nil, err
	}
	switch w.Access.Vend {
	case tables.VendKeys:
		if !write {
			return nil, serveErr(ErrAccessDenied, "warehouse %s vends its own keys, which cannot be limited to reading; a token with only the read scope gets none: use a token with the write scope, or have the warehouse vend through an STS role (access.vend sts)", wh)
		}
		cfg := map[string]string{"s3.access-key-id": w.Props["s3.access-key-id"], "s3.secret-access-key": w.Props["s3.secret-access-key"]}
		if t := w.Props["s3.session-token"]; t != "" {
			cfg["s3.session-token"] = t
		}
		return []StorageCredential{{Prefix: loc, Config: cfg}}, nil
	case tables.VendSTS:
		policy, err := SessionPolicy(loc, write)
		if err != nil {
			return nil, err
		}
		mk := s.sts
		if mk == nil {
			mk = defaultSTS
		}
		secs := int32(w.Access.SessionDuration.Seconds())
		out, err := mk(w).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(w.Access.RoleARN), RoleSessionName: aws.String(sessionName(principal)),
			Policy: aws.String(policy), DurationSeconds: aws.Int32(secs)})
		if err != nil {
			return nil, fmt.Errorf("warehouse: STS AssumeRole of %s for warehouse %s: %w", w.Access.RoleARN, wh, err)
		}
		c := out.Credentials
		if c == nil || c.AccessKeyId == nil || c.SecretAccessKey == nil {
			return nil, fmt.Errorf("warehouse: STS AssumeRole of %s for warehouse %s answered no credentials", w.Access.RoleARN, wh)
		}
		cfg := map[string]string{"s3.access-key-id": *c.AccessKeyId, "s3.secret-access-key": *c.SecretAccessKey}
		if c.SessionToken != nil {
			cfg["s3.session-token"] = *c.SessionToken
		}
		if c.Expiration != nil {
			cfg["s3.session-token-expires-at-ms"] = strconv.FormatInt(c.Expiration.UnixMilli(), 10)
		}
		return []StorageCredential{{Prefix: loc, Config: cfg}}, nil
	}
	return nil, serveErr(ErrAccessDenied, "warehouse %s vends no credentials (its access settings set no vend mode)", wh)
}

// Vends reports whether a warehouse vends credentials.
func (s *Service) Vends(wh string) bool {
	w, ok := s.Warehouse(wh)
	return ok && w.Access.Vend != tables.VendNone
}

var sessionNameChars = regexp.MustCompile(`[^\w+=,.@-]`)

// sessionName is an STS role session name for a principal (2 to 64 of [\w+=,.@-]), so the
// store's audit trail names who the credentials were for.
func sessionName(principal string) string {
	n := "tidemark-" + sessionNameChars.ReplaceAllString(principal, "_")
	return n[:min(len(n), 64)]
}

// policyDocument is an IAM policy document.
type policyDocument struct {
	Version   string            `json:"Version"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// SessionPolicy is the session policy vended STS credentials carry: they can read the objects
// under the table's location and list that prefix only, and, for a principal that may write,
// write and delete there too. A session policy only narrows what the role allows. A location
// holding a policy wildcard (* or ?) or a variable (${...}) is refused: it would widen the grant.
func SessionPolicy(loc string, write bool) (string, error) {
	bucket, prefix, ok := s3Location(loc)
	if !ok || prefix == "" {
		return "", serveErr(ErrAccessDenied, "credentials are vended for a table's own prefix on S3, and %s is not one", loc)
	}
	if strings.ContainsAny(bucket+prefix, "*?$") {
		return "", serveErr(ErrAccessDenied, "the table's location %s holds a character IAM policies read as a wildcard or variable (*, ?, $): no credentials can be limited to it", loc)
	}
	objects := "arn:aws:s3:::" + bucket + "/" + prefix + "/*"
	doc := policyDocument{Version: "2012-10-17", Statement: []policyStatement{
		{Effect: "Allow", Action: []string{"s3:GetObject", "s3:GetObjectVersion"}, Resource: []string{objects}},
		{Effect: "Allow", Action: []string{"s3:ListBucket"}, Resource: []string{"arn:aws:s3:::" + bucket},
			Condition: map[string]map[string][]string{"StringLike": {"s3:prefix": {prefix + "/*"}}}},
		{Effect: "Allow", Action: []string{"s3:GetBucketLocation"}, Resource: []string{"arn:aws:s3:::" + bucket}},
	}}
	if write {
		doc.Statement = append(doc.Statement, policyStatement{Effect: "Allow",
			Action:   []string{"s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"},
			Resource: []string{objects}})
	}
	b, err := json.Marshal(doc)
	return string(b), err
}
