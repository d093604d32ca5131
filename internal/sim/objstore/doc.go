// Package objstore runs a real S3 server (versitygw, posix backend) on a loopback port, behind a
// small reverse proxy that makes it answer as Scaleway Object Storage does, so that tests,
// `bot sim`, the demo and the soak talk to Object Storage through the same client libraries as
// production (aws-sdk-go-v2 via gocloud.dev/blob/s3blob).
//
// The server runs versitygw's internal IAM (--iam-dir, beside the posix root, never inside it), so
// that a test can add a second, unprivileged account (AddUser) and restrict it with a bucket policy
// (PutBucketPolicy), as an operator does on Scaleway for the presigning credential. Sources:
// versitygw cmd/versitygw/main.go (--iam-dir, the admin API on the S3 port when no --admin-port),
// cmd/internal/gwcli/admin.go (`admin create-user`, roles admin/user/userplus),
// auth/bucket_policy_principals.go (a principal is {"AWS": [access key ids]} or "*"); Scaleway's
// own principal syntax ({"SCW": "application_id:<id>"}) differs only there, see docs/install.md.
//
// # Contract: what the dialect proxy enforces
//
// The proxy (dialect.go) sits between the clients and versitygw; versitygw still authenticates
// every request (SigV4, the Host header is kept) and applies the bucket policy. Sources are
// scaleway/docs-content pages (pages/object-storage/api-cli/…):
//
//	| behaviour | source |
//	|---|---|
//	| If-None-Match: * and If-Match: <etag> are honoured on PutObject (CopyObject, CompleteMultipartUpload: versitygw's own) | using-conditional-writes.mdx |
//	| a failed conditional PutObject: 412 with no error body (default), 409, or the condition ignored and the object written | register: put-precondition (using-conditional-writes.mdx: the write "fails", no code) |
//	| DeleteObject with a conditional header (If-Match, If-None-Match, If-(Un)Modified-Since, x-amz-if-match-*): ignored and the object deleted (default), 501 NotImplemented, or 412 | register: delete-conditions (object-operations.mdx lists no conditional header for DeleteObject) |
//	| a request signed by a key other than the root one is granted only what its IAM policy allows (GrantIAM; none by default) and, then, what the bucket policy allows (versitygw): a presigned GET by a key with no IAM policy is a 403 even where the bucket policy allows it | combining-iam-and-object-storage.mdx ("must first be granted access via an IAM policy, and optionally via a bucket policy"); bucket-policy.mdx |
//	| with ResolveKeys, any other key is asked of the resolver at every request (the world answers from the Scaleway stand-in's IAM): its versitygw account is made at its first request (role admin: it reaches every bucket, and the proxy narrows it to what the resolver grants; a bucket policy does not narrow it further, Scaleway's would), and a key the resolver does not know is refused with 403 InvalidAccessKeyId | combining-iam-and-object-storage.mdx (access "via an IAM policy, and optionally via a bucket policy": without one, IAM decides); the error code: AWS S3's error list for an unknown key, Scaleway source silent |
//	| AccessObjectsRead grants GET and HEAD only; AccessFull everything | IAM permission sets ObjectStorageObjectsRead, ObjectStorageFullAccess (combining-iam-and-object-storage.mdx) |
//	| what an AccessObjectsRead key (the presigning key) reaches under docs/install.md's bucket policy: public/ only (default), every object, or none | register: presign-scope |
//	| a key added by AddProjectKey reaches every bucket (versitygw's admin role), as a project's API key reaches the project's buckets by IAM; versitygw does not narrow it by a bucket policy, Scaleway would | combining-iam-and-object-storage.mdx (access by IAM policy, optionally narrowed by a bucket policy); versitygw cmd/internal/gwcli/admin.go (role admin) |
//	| versioning (PutBucketVersioning, GetBucketVersioning, versions of objects): versitygw's posix backend with --versioning-dir | bucket-operations.mdx (PutBucketVersioning, GetBucketVersioning); versitygw cmd/internal/gwcli/posix.go v1.8.0 (--versioning-dir) |
//	| Put/Get/DeleteBucketLifecycle(Configuration): answered by the proxy (versitygw's posix backend has none), stored per bucket, dropped with the bucket; a rule's Status must be Enabled or Disabled; no configuration is 404 NoSuchLifecycleConfiguration; only the root key or a full-access key may (the signature of these requests is not verified: a stand-in's shortcut) | lifecycle-rules-api.mdx (rule elements: ID, Status, Filter/Prefix, Expiration, NoncurrentVersionExpiration, Transition, AbortIncompleteMultipartUpload); manage-lifecycle-rules.mdx |
//	| ApplyLifecycle(now) runs the enabled rules: NoncurrentVersionExpiration deletes versions noncurrent (since their successor was written) for NoncurrentDays; Expiration ExpiredObjectDeleteMarker deletes a marker left alone, or keeps it, or a configuration carrying it is refused 400 MalformedXML | lifecycle-rules-api.mdx (NoncurrentVersionExpiration); ExpiredObjectDeleteMarker is not documented: register: delete-markers; Scaleway runs rules daily, tests choose now |
//	| optional TLS on loopback with a self-signed certificate (Options.TLS): the wire production uses | Scaleway endpoints are https://s3.<region>.scw.cloud (object-storage-aws-cli.mdx) |
//
// What stays undocumented is in the assumptions register (internal/assume; docs/assumptions.md),
// each row with the probe of `bot doctor --live` that settles it on the user's real bucket; the
// stand-in plays every reading (Options.WithReadings, `bot sim --reading`).
package objstore
