package tables

// Object storage for table metadata and data: local files are built into iceberg-go; S3 (and
// S3-compatible stores, through s3.endpoint) is registered here. GCS and Azure are separate
// iceberg-go packages, left out until someone needs them (each links its own SDK).
import _ "github.com/apache/iceberg-go/io/gocloud/s3"
