// Package statestore owns pocbot's remote state: one encrypted document per cluster in a bucket
// (gocloud.dev/blob URL: s3://… for Scaleway Object Storage, file:///… as the embedded default),
// a lock object per cluster with a lease, encrypted artifacts (kubeconfig) and plaintext public
// objects with signed URLs.
//
// It knows nothing of clusters beyond their names: a Document is a public Header, listable without
// the key, plus an opaque Body encrypted client-side (envelope encryption: a fresh AES-256-GCM data
// key per write, wrapped by a gocloud.dev/secrets keeper; the header is bound as associated data).
//
// Every write that matters is conditional on what was read (If-None-Match for a new object,
// If-Match on the ETag for an update; on file:// an exclusive link for a new object and an flock
// plus compare-then-rename for an update), so a concurrent writer is never silently overwritten,
// across goroutines and processes alike.
//
// Key layout in the bucket:
//
//	clusters/<cluster>.state     the document (format below)
//	locks/<cluster>.lock         a cluster's lock: JSON LockInfo, plaintext (who holds it is not secret)
//	locks/<kind>/<name>.lock     the other kinds of lock (admission, image): see LockKey, Hold
//	artifacts/<cluster>/<name>   encrypted like a document
//	public/<key>                 plaintext objects meant to be handed out by signed URL
//	probe/<random>               short-lived objects written by CheckBackend
//	keys/header-mac              the header MAC master secret, wrapped by the keeper (mac.go)
//
// Object format (version 2), all integers big-endian:
//
//	"PBSTATE\x00" | u8 format | u32 hlen | header JSON | 32-byte header MAC | u16 klen |
//	wrapped data key | 12-byte nonce | AES-256-GCM ciphertext | SHA-256 of everything before
//
// Version 1 (still read) has no header MAC. The GCM associated data is everything from the magic
// to the nonce, so a header, wrapped key or body moved between objects fails to decrypt: Get
// authenticates the header that way. List authenticates it without decrypting: the MAC is
// HMAC-SHA256 over the magic … header JSON, under a key derived (HKDF) from a secret that the
// keeper unwraps once per process; a header that fails it is authenticated by decryption, or
// reported (ListError) and never returned. ListUnverified is the listing without the key, for
// display only. The trailing SHA-256 is not a security measure: it
// lets the store tell a damaged object ("tampered or corrupted") from a wrong key, since the keeper
// cannot tell the two apart.
package statestore
