package s3opts_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// TestUploadWireOverTLS: over TLS, as against Scaleway, an upload through gocloud's s3blob carries
// no flexible checksum and no aws-chunked trailer when the bucket is opened with Blob() — and does
// when it is not (gocloud v0.49.0's upload manager ignores the client's setting), which is what
// the bot did before: the control case proves the observation can see a trailer.
func TestUploadWireOverTLS(t *testing.T) {
	srv := objstoretest.VersityWith(t, objstore.Options{TLS: true})
	objstoretest.Bucket(t, srv, "wire")
	if !strings.HasPrefix(srv.Endpoint, "https://") {
		t.Fatalf("endpoint %s is not TLS", srv.Endpoint)
	}
	for _, tc := range []struct {
		name     string
		opts     *s3blob.Options
		trailers bool
	}{
		{"the bot's choice", s3opts.Blob(), false},
		{"s3blob's default (the old wiring)", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := s3.Options{
				Region: objstore.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
				HTTPClient:  srv.HTTPClient(),
			}
			s3opts.Client(&o)
			b, err := s3blob.OpenBucket(t.Context(), s3.New(o), "wire", tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			var (
				mu   sync.Mutex
				puts []http.Header
			)
			srv.Observe(func(method, path string, h http.Header) {
				if method == http.MethodPut && strings.HasPrefix(path, "/wire/obj") {
					mu.Lock()
					puts = append(puts, h)
					mu.Unlock()
				}
			})
			defer srv.Observe(nil)
			data := strings.Repeat("state bytes ", 10000)
			if err := b.WriteAll(t.Context(), "obj", []byte(data), &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
				t.Fatalf("upload over TLS: %v", err)
			}
			if got, err := b.ReadAll(t.Context(), "obj"); err != nil || string(got) != data {
				t.Fatalf("read back over TLS: %d bytes, %v", len(got), err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(puts) != 1 {
				t.Fatalf("%d PutObject requests seen, want 1", len(puts))
			}
			h := puts[0]
			chunked := strings.Contains(h.Get("Content-Encoding"), "aws-chunked") || h.Get("X-Amz-Trailer") != "" ||
				strings.HasPrefix(h.Get("X-Amz-Content-Sha256"), "STREAMING-")
			var sums []string
			for k := range h {
				if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") || strings.EqualFold(k, "X-Amz-Sdk-Checksum-Algorithm") {
					sums = append(sums, k)
				}
			}
			if tc.trailers != chunked {
				t.Errorf("aws-chunked with a trailer: %v, want %v (Content-Encoding %q, X-Amz-Trailer %q, X-Amz-Content-Sha256 %q)",
					chunked, tc.trailers, h.Get("Content-Encoding"), h.Get("X-Amz-Trailer"), h.Get("X-Amz-Content-Sha256"))
			}
			if !tc.trailers && len(sums) > 0 {
				t.Errorf("checksum headers sent although none is required: %v", sums)
			}
		})
	}
}
