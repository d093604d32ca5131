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
	"encoding/xml"
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

// ScalewayReadings are the answers to a conditional DeleteObject that Scaleway's documentation
// leaves possible (it documents none): the bot must work under each of them.
var ScalewayReadings = []DeleteConditions{DeleteConditionsIgnored, DeleteConditionsRejected}

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

// Options chooses the dialect of a stand-in. The zero value is Scaleway's, each silent row of
// the assumptions register at its default (WithReadings picks others).
type Options struct {
	DeleteConditions DeleteConditions
	PutPrecondition  PutPrecondition
	DeleteMarkers    DeleteMarkers
	PresignScope     PresignScope
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
	iam     map[string]Access // keys given by AddUser/AddProjectKey and GrantIAM
	resolve KeyResolver       // every other key (ResolveKeys); nil: such a key has no access
	// roles are the versitygw accounts made so far (access key → role); account runs versitygw's
	// admin CLI to make or change one. regMu orders those runs.
	roles   map[string]string
	account func(ctx context.Context, args ...string) error
	regMu   sync.Mutex
	observe func(method, path string, h http.Header)
	// lifecycle holds each bucket's lifecycle configuration (the XML a client put), which
	// versitygw's posix backend does not implement.
	lifecycle map[string][]byte
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
		a, known, err := d.access(r.Context(), ak)
		if err != nil {
			writeS3Error(w, http.StatusInternalServerError, "InternalError", "the stand-in could not make the account of this key: "+err.Error())
			return
		}
		if !known {
			writeS3Error(w, http.StatusForbidden, "InvalidAccessKeyId", "The access key ID you provided does not exist in our records.")
			return
		}
		read := r.Method == http.MethodGet || r.Method == http.MethodHead
		if a == AccessNone || (a == AccessObjectsRead && (!read || !d.presignReaches(r))) {
			writeS3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied: the IAM policy of this key does not allow it (IAM and the bucket policy must both allow a request)")
			return
		}
	}
	if bucket, key := splitPath(r.URL.Path); bucket != "" && key == "" && r.URL.Query().Has("lifecycle") {
		d.serveLifecycle(w, r, bucket)
		return
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
	if d.opts.PutPrecondition == PutPreconditionIgnored && r.Method == http.MethodPut && hasConditional(r.Header) {
		// Kept to write it anyway once versitygw refused the condition (see modify).
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeS3Error(w, http.StatusBadRequest, "IncompleteBody", "could not read the body: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r = r.WithContext(context.WithValue(r.Context(), putBodyKey{}, b))
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
	case r.Method == http.MethodDelete && resp.StatusCode == http.StatusNoContent && len(r.URL.Query()) == 0:
		if bucket, key := splitPath(r.URL.Path); key == "" { // DeleteBucket: its configuration goes with it
			d.mu.Lock()
			delete(d.lifecycle, bucket)
			d.mu.Unlock()
		}
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
		return d.lostPut(resp)
	}
	return nil
}

// putBodyKey carries a conditional PutObject's body to modify, under PutPreconditionIgnored.
type putBodyKey struct{}

// lostPut answers a conditional PutObject that versitygw refused, as register row
// put-precondition plays it. Scaleway documents that a failed conditional write "fails", not the
// code it answers with: by default only the status, 412, is kept, so clients must recognise it.
func (d *dialect) lostPut(resp *http.Response) error {
	r := resp.Request
	resp.Body.Close()
	resp.Body, resp.ContentLength = http.NoBody, 0
	resp.Header.Del("Content-Length")
	switch d.opts.PutPrecondition {
	case PutPrecondition409:
		resp.StatusCode, resp.Status = http.StatusConflict, "409 Conflict"
	case PutPreconditionIgnored:
		body, _ := r.Context().Value(putBodyKey{}).([]byte)
		bucket, key := splitPath(r.URL.Path)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		out, err := d.admin.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
		if err != nil {
			return fmt.Errorf("objstore dialect: carry out the put of %s/%s whose condition is ignored: %w", bucket, key, err)
		}
		resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
		resp.Header.Set("ETag", aws.ToString(out.ETag))
	}
	return nil
}

// presignReaches tells whether a key whose IAM grants objects read reaches the request's object,
// under register row presign-scope: public/ only (the bucket policy narrows it), every object, or
// none.
func (d *dialect) presignReaches(r *http.Request) bool {
	switch d.opts.PresignScope {
	case PresignWide:
		return true
	case PresignRefused:
		return false
	}
	_, key := splitPath(r.URL.Path)
	return strings.HasPrefix(key, "public/")
}

// lifecycleConfiguration is what the stand-in reads of a PutBucketLifecycleConfiguration body: the
// elements Scaleway documents (lifecycle-rules-api.mdx: ID, Status, Filter/Prefix, Expiration,
// NoncurrentVersionExpiration, Transition, AbortIncompleteMultipartUpload).
type lifecycleConfiguration struct {
	XMLName xml.Name        `xml:"LifecycleConfiguration"`
	Rules   []lifecycleRule `xml:"Rule"`
}

type lifecycleRule struct {
	ID     string `xml:"ID"`
	Status string `xml:"Status"`
	Prefix string `xml:"Prefix"` // the legacy top-level prefix
	Filter struct {
		Prefix string `xml:"Prefix"`
	} `xml:"Filter"`
	Expiration *struct {
		ExpiredObjectDeleteMarker *bool `xml:"ExpiredObjectDeleteMarker"`
	} `xml:"Expiration"`
	NoncurrentVersionExpiration *struct {
		NoncurrentDays int `xml:"NoncurrentDays"`
	} `xml:"NoncurrentVersionExpiration"`
}

// serveLifecycle answers GetBucketLifecycleConfiguration, PutBucketLifecycleConfiguration and
// DeleteBucketLifecycle itself. The signature is not verified here (versitygw verifies every other
// request); only the root key and keys whose IAM policy grants full access are let through.
func (d *dialect) serveLifecycle(w http.ResponseWriter, r *http.Request, bucket string) {
	ak := accessKeyOf(r)
	a, _, err := d.access(r.Context(), ak)
	granted := err == nil && (ak == d.root || a == AccessFull)
	if ak == "" || !granted {
		writeS3Error(w, http.StatusForbidden, "AccessDenied", "Access Denied: the lifecycle configuration needs ObjectStorageFullAccess (or the bucket owner's key)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if _, err := d.admin.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		writeS3Error(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	switch r.Method {
	case http.MethodGet:
		d.mu.Lock()
		body, ok := d.lifecycle[bucket]
		d.mu.Unlock()
		if !ok {
			writeS3Error(w, http.StatusNotFound, "NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist")
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write(body)
	case http.MethodPut:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		var lc lifecycleConfiguration
		if err == nil {
			err = xml.Unmarshal(body, &lc)
		}
		if err != nil || len(lc.Rules) == 0 {
			writeS3Error(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema")
			return
		}
		for _, rule := range lc.Rules {
			if rule.Status != "Enabled" && rule.Status != "Disabled" {
				writeS3Error(w, http.StatusBadRequest, "MalformedXML", "a rule's Status must be Enabled or Disabled")
				return
			}
			if rule.Expiration != nil && rule.Expiration.ExpiredObjectDeleteMarker != nil && d.opts.DeleteMarkers == DeleteMarkersRefused {
				// Register row delete-markers, reading refused: the element is not in Scaleway's
				// documented list (lifecycle-rules-api.mdx).
				writeS3Error(w, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema")
				return
			}
		}
		d.mu.Lock()
		d.lifecycle[bucket] = body
		d.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	case http.MethodDelete:
		d.mu.Lock()
		delete(d.lifecycle, bucket)
		d.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeS3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The specified method is not allowed against this resource")
	}
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
