package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// TestPresignCredential is hole 7 of issue 11: a signed link is posted in public comments and step
// outputs, and names its signer's access key id (X-Amz-Credential). With POC_PRESIGN_ACCESS_KEY and
// POC_PRESIGN_SECRET_KEY set, the link is signed by that credential, which the bucket policy of
// docs/install.md limits to reading public/*: the main key id appears nowhere in the link, the link
// still downloads, and the presign credential cannot read the state.
func TestPresignCredential(t *testing.T) {
	srv := objstoretest.Versity(t)
	const bucket = "poc-state"
	objstoretest.Bucket(t, srv, bucket)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const presignAK, presignSK = "PRESIGNREADER0000001", "presign-secret-presign-secret-0000000001"
	if err := srv.AddUser(ctx, presignAK, presignSK); err != nil {
		t.Fatal(err)
	}
	// docs/install.md's policy with versitygw's principal syntax ({"AWS": […]} for {"SCW": …}).
	policy := `{"Version": "2012-10-17", "Statement": [{"Sid": "PresignReadsPublicOnly", "Effect": "Allow",
		"Principal": {"AWS": ["` + presignAK + `"]}, "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::` + bucket + `/public/*"]}]}`
	if err := srv.PutBucketPolicy(ctx, bucket, policy); err != nil {
		t.Fatal(err)
	}
	// docs/install.md: the presign key's application also gets ObjectStorageObjectsRead by IAM
	// (Scaleway grants what IAM and the bucket policy both allow).
	srv.GrantIAM(presignAK, objstore.AccessObjectsRead)
	env := map[string]string{
		"POC_STATE_URL": srv.BucketURL(bucket), "POC_STATE_KEY": "base64key://" + strings.Repeat("A", 43) + "=",
		"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
		"POC_PRESIGN_ACCESS_KEY": presignAK, "POC_PRESIGN_SECRET_KEY": presignSK,
	}
	a := newApp(io.Discard, io.Discard, func(k string) string { return env[k] })
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	store, err := openStore(ctx, func(k string) string { return env[k] }, a, &closers)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	data := []byte("age-encryption.org/v1 ...")
	if err := store.PutPublic(ctx, "kubeconfig/c1/alice.age", data); err != nil {
		t.Fatal(err)
	}
	u, err := store.SignedURL(ctx, "kubeconfig/c1/alice.age", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(u, srv.AccessKey) || !strings.Contains(u, "X-Amz-Credential="+presignAK+"%2F") {
		t.Fatalf("signed URL must name the presign key %s and never the main key %s:\n%s", presignAK, srv.AccessKey, u)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("GET the presigned link: %s %q", resp.Status, got)
	}
	// The presign credential reads public/ only: a state object is out of its reach.
	if _, err := store.PutArtifact(ctx, "c1", "kubeconfig", []byte("secret")); err != nil {
		t.Fatal(err)
	}
	ro, err := srv.OpenBucketAs(ctx, bucket, presignAK, presignSK)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.ReadAll(ctx, "artifacts/c1/kubeconfig"); err == nil {
		t.Error("the presign credential read artifacts/c1/kubeconfig: the bucket policy does not limit it")
	}
	if got, err := ro.ReadAll(ctx, "public/kubeconfig/c1/alice.age"); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the presign credential cannot read public/: %v", err)
	}

	t.Run("half a credential is refused", func(t *testing.T) {
		env2 := map[string]string{}
		for k, v := range env {
			env2[k] = v
		}
		delete(env2, "POC_PRESIGN_SECRET_KEY")
		var cl []func()
		defer func() {
			for _, c := range cl {
				c()
			}
		}()
		_, err := openStore(ctx, func(k string) string { return env2[k] }, a, &cl)
		if err == nil || !strings.Contains(err.Error(), "POC_PRESIGN_SECRET_KEY") {
			t.Fatalf("want an error naming POC_PRESIGN_SECRET_KEY, got %v", err)
		}
	})
}
