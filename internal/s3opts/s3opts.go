// Package s3opts is the one definition of how pocbot's S3 clients compute request checksums,
// shared by production (internal/wiring, which opens every bucket of the bot) and the
// stand-in's own clients.
//
// The choice: no flexible checksums unless an operation requires one ("when required"), on
// both the S3 client and gocloud's s3blob writer. aws-sdk-go-v2 (since early 2025) adds a CRC32
// to every upload by default, sent as an aws-chunked body with an x-amz-checksum-crc32 trailer
// (STREAMING-UNSIGNED-PAYLOAD-TRAILER); gocloud.dev v0.49.0's s3blob uploads through the
// transfermanager, whose own RequestChecksumCalculation takes precedence over the client's and
// defaults to that CRC32 when s3blob.Options leaves it unset (blob/s3blob/s3blob.go,
// NewTypedWriter; feature/s3/transfermanager options.go, checksumAlgorithm): setting it on the
// client alone had no effect. Scaleway's documentation nowhere lists the flexible-checksum
// headers or aws-chunked trailers among what Object Storage accepts, while a plain PutObject with
// x-amz-content-sha256 is what its every sample request shows (docs-content
// pages/object-storage/api-cli/object-operations.mdx, PutObject). Integrity does not depend on
// it: every object the state store reads ends with its own SHA-256 and is read back after it is
// written, and the image chain checks the SHA-256 of what it streamed.
package s3opts

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"
)

// Client sets the checksum behaviour on an S3 client's options.
func Client(o *s3.Options) {
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

// Blob is the s3blob.Options every bucket is opened with: the same choice, threaded through to
// the upload manager.
func Blob() *s3blob.Options {
	return &s3blob.Options{RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired}
}
