package objstore

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DeleteConditions is how the stand-in answers a DeleteObject that carries a conditional header
// (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, x-amz-if-match-*).
type DeleteConditions int

const (
	// DeleteConditionsIgnored (the default): the header is ignored and the object deleted, as if
	// it were absent. Scaleway documents conditional headers for PutObject, CopyObject and
	// CompleteMultipartUpload only, and its DeleteObject lists none; what it does with one is
	// undocumented (source silent: the stricter reading, under which a delete meant to be
	// conditional removes whatever is there).
	DeleteConditionsIgnored DeleteConditions = iota
	// DeleteConditionsRejected: the request is refused with 501 NotImplemented, the answer
	// Scaleway documents for conditional headers it does not implement on CopyObject.
	DeleteConditionsRejected
	// DeleteConditionsHonoured: a generic S3 server (AWS, versitygw): 412 on a mismatch.
	DeleteConditionsHonoured
)

func (d DeleteConditions) String() string {
	switch d {
	case DeleteConditionsIgnored:
		return "ignored"
	case DeleteConditionsRejected:
		return "rejected"
	case DeleteConditionsHonoured:
		return "honoured"
	}
	return fmt.Sprintf("DeleteConditions(%d)", int(d))
}

// ParseDeleteConditions reads "ignored", "rejected" or "honoured" (DeleteConditions.String).
func ParseDeleteConditions(s string) (DeleteConditions, error) {
	for _, d := range []DeleteConditions{DeleteConditionsIgnored, DeleteConditionsRejected, DeleteConditionsHonoured} {
		if s == d.String() {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%q is not one of ignored, rejected, honoured", s)
}

// Options chooses the dialect of a stand-in. The zero value is Scaleway's.
type Options struct {
	DeleteConditions DeleteConditions
	// TLS serves the endpoint over HTTPS with a self-signed certificate for 127.0.0.1 (trusted by
	// the Server's own clients and by HTTPClient).
	TLS bool
}

// Access is what a Scaleway IAM policy grants an access key on Object Storage.
type Access int

const (
	// AccessNone: no IAM policy (an API key of an application without one).
	AccessNone Access = iota
	// AccessObjectsRead: ObjectStorageObjectsRead, GET and HEAD of objects.
	AccessObjectsRead
	// AccessFull: ObjectStorageFullAccess.
	AccessFull
)

// dialect is the reverse proxy in front of versitygw that makes it answer as Scaleway does.
type dialect struct {
	opts    Options
	backend *url.URL
	root    string     // the root access key: IAM grants it everything
	admin   *s3.Client // root client straight to versitygw, for the deletes it must carry out

	mu      sync.Mutex
	iam     map[string]Access
	observe func(method, path string, h http.Header)
}

var conditionalHeaders = []string{"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
	"X-Amz-If-Match-Last-Modified-Time", "X-Amz-If-Match-Size"}

func (d *dialect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	obs := d.observe
	d.mu.Unlock()
	if obs != nil {
		obs(r.Method, r.URL.Path, r.Header.Clone())
	}
	if ak := accessKeyOf(r); ak != "" && ak != d.root {
		d.mu.Lock()
		a := d.iam[ak]
		d.mu.Unlock()
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if a == AccessNone || (a == AccessObjectsRead && !read) {
			writeS3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied: the IAM policy of this key does not allow it (IAM and the bucket policy must both allow a request)")
			return
		}
	}
	if d.isDeleteObject(r) && hasConditional(r.Header) {
		switch d.opts.DeleteConditions {
		case DeleteConditionsRejected:
			writeS3Error(w, http.StatusNotImplemented, "NotImplemented", "A header you provided implies functionality that is not implemented")
			return
		case DeleteConditionsIgnored:
			// The header must stay (it is signed); a 412 from versitygw is turned into the
			// delete that ignoring it would have done, below.
		}
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(d.backend)
			pr.Out.Host = pr.In.Host // SigV4 signs the Host header
		},
		ModifyResponse: d.modify,
		FlushInterval:  -1,
	}
	rp.ServeHTTP(w, r)
}

func (d *dialect) modify(resp *http.Response) error {
	r := resp.Request
	switch {
	case d.opts.DeleteConditions == DeleteConditionsIgnored && d.isDeleteObject(r) && hasConditional(r.Header) &&
		resp.StatusCode == http.StatusPreconditionFailed:
		// versitygw authenticated the request (it checks the signature and the bucket policy
		// before the precondition), then refused it on the header that Scaleway ignores.
		bucket, key := splitPath(r.URL.Path)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if _, err := d.admin.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			return fmt.Errorf("objstore dialect: carry out the delete of %s/%s whose condition is ignored: %w", bucket, key, err)
		}
		resp.Body.Close()
		resp.StatusCode, resp.Status = http.StatusNoContent, "204 No Content"
		resp.Body, resp.ContentLength = http.NoBody, 0
		resp.Header.Del("Content-Type")
		resp.Header.Del("Content-Length")
	case resp.StatusCode == http.StatusPreconditionFailed && r.Method == http.MethodPut:
		// Scaleway documents that a failed conditional write "fails", not the error code it
		// answers with: only the status is kept, so clients must recognise the 412 itself.
		resp.Body.Close()
		resp.Body, resp.ContentLength = http.NoBody, 0
		resp.Header.Del("Content-Length")
	}
	return nil
}

// isDeleteObject: DELETE /bucket/key (path style), not AbortMultipartUpload (?uploadId) nor
// DeleteObjectTagging (?tagging).
func (d *dialect) isDeleteObject(r *http.Request) bool {
	if r.Method != http.MethodDelete {
		return false
	}
	q := r.URL.Query()
	if q.Has("uploadId") || q.Has("tagging") {
		return false
	}
	_, key := splitPath(r.URL.Path)
	return key != ""
}

func hasConditional(h http.Header) bool {
	for _, k := range conditionalHeaders {
		if h.Get(k) != "" {
			return true
		}
	}
	return false
}

func splitPath(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// accessKeyOf returns the access key id a request is signed with: the Credential of its
// Authorization header, or of its X-Amz-Credential query parameter (a presigned URL).
func accessKeyOf(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if cred == "" {
		auth := r.Header.Get("Authorization")
		_, after, ok := strings.Cut(auth, "Credential=")
		if !ok {
			return ""
		}
		cred = after
	}
	ak, _, _ := strings.Cut(cred, "/")
	return ak
}

func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n<Error><Code>%s</Code><Message>%s</Message></Error>", code, msg)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	_, _ = io.Copy(w, &b)
}

// selfSigned makes a certificate for 127.0.0.1 valid for a day, and the pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "pocbot objstore stand-in"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool, nil
}
