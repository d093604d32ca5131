package statestore

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/objstore"
)

// TestSignedURLIsChecked: a link signed by a presigning key the bucket refuses (Scaleway: IAM
// grants it nothing, although the bucket policy allows public/) is never returned as if it
// worked: SignedURL answers ErrDeadLink with the status and what to fix. Before, the link was
// signed locally and handed out, and every GET through it was a 403.
func TestSignedURLIsChecked(t *testing.T) {
	t.Parallel()
	w := s3World(t)
	ctx := t.Context()
	u, _ := url.Parse(w.cfg("").StateURL)
	bucket := u.Host
	const ak, sk = "PRESIGNLINKCHECK0001", "presign-link-check-secret-000000000001"
	if err := w.srv.AddUser(ctx, ak, sk); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["` + ak + `"]},
		"Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::` + bucket + `/public/*"]}]}`
	if err := w.srv.PutBucketPolicy(ctx, bucket, policy); err != nil {
		t.Fatal(err)
	}
	signer, err := w.srv.OpenBucketAs(ctx, bucket, ak, sk)
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	s := w.open(t, newKey(t), WithPresignBucket(signer))
	if err := s.PutPublic(ctx, "c/k.age", []byte("age-encryption.org/v1 ...")); err != nil {
		t.Fatal(err)
	}
	link, err := s.SignedURL(ctx, "c/k.age", time.Minute)
	var dle *DeadLinkError
	if !errors.As(err, &dle) || !errors.Is(err, ErrDeadLink) || link != "" || !strings.HasPrefix(dle.Status, "403") ||
		!strings.Contains(dle.Fix, "ObjectStorageObjectsRead") {
		t.Fatalf("link signed by a key without IAM: %q, %v; want no link and a DeadLinkError naming 403 and the IAM fix", link, err)
	}
	w.srv.GrantIAM(ak, objstore.AccessObjectsRead)
	if link, err = s.SignedURL(ctx, "c/k.age", time.Minute); err != nil || !strings.Contains(link, ak) {
		t.Fatalf("link signed by a key with IAM read and the bucket policy: %q, %v", link, err)
	}
}
