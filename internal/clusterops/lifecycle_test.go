package clusterops_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The "done when": after 20 up/down cycles on a versioned state bucket, nothing older
// than the lifecycle bound is left — no noncurrent version, no delete marker — once the stand-in
// applies the rule `bot init` writes (ApplyLifecycle, a day past the bound), under every reading
// of register row delete-markers. The cycles are the bot's own Up and Down (locks, the state
// document, the kubeconfig artifact, the tombstone) on a graph of one step: the state bucket is
// the question, not the cluster. Before the bot deleted the versions of what it removes, the
// readings kept and refused left one delete marker per removed object.
func TestTwentyCyclesLeaveNothingOlderThanTheLifecycleBound(t *testing.T) {
	t.Parallel()
	objstoretest.Require(t)
	for _, reading := range assume.MustLookup(assume.DeleteMarkers).Values() {
		t.Run("delete-markers="+reading, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			srv, err := objstore.StartVersityWith(ctx, t.TempDir(), objstore.Options{}.WithReadings(assume.Readings{assume.DeleteMarkers: reading}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			const bucket = "state"
			if err := srv.CreateBucket(ctx, bucket); err != nil {
				t.Fatal(err)
			}
			c := srv.Client()
			if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			// What `bot init` does: the rule with ExpiredObjectDeleteMarker, without it when refused.
			lc := statestore.Lifecycle(true)
			if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: lc}); err != nil {
				if reading != "refused" {
					t.Fatalf("the lifecycle rule: %v", err)
				}
				lc = statestore.Lifecycle(false)
				if _, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: lc}); err != nil {
					t.Fatal(err)
				}
			}
			ops := oneStepOps(t, srv, bucket)
			spec := provision.DefaultSpec()
			spec.ImageBucket = "images"
			for i := range 20 {
				name := fmt.Sprintf("acme-cycle-%d", i%3)
				if _, err := ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"}); err != nil {
					t.Fatalf("up %d: %v", i, err)
				}
				if _, err := ops.Down(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "down"}); err != nil {
					t.Fatalf("down %d: %v", i, err)
				}
			}
			noncurrent, markers := versionsOf(t, c, bucket)
			if noncurrent == 0 {
				t.Fatal("20 cycles left no noncurrent version: the bucket is not versioned, the test proves nothing")
			}
			if markers != 0 {
				t.Errorf("the bot's removals left %d delete markers", markers)
			}
			if _, err := srv.ApplyLifecycle(ctx, time.Now().Add(time.Duration(statestore.NoncurrentDays+1)*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			if noncurrent, markers := versionsOf(t, c, bucket); noncurrent != 0 || markers != 0 {
				t.Errorf("past the lifecycle bound: %d noncurrent versions and %d delete markers left", noncurrent, markers)
			}
		})
	}
}

// oneStepOps are the bot's operations on the state bucket of srv, over a graph of one step that
// hands out a kubeconfig (so that an up writes its artifact and a down removes it).
func oneStepOps(t *testing.T, srv *objstore.Server, bucket string) *clusterops.Ops {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	b, err := srv.OpenBucket(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	store, err := statestore.Open(t.Context(), statestore.Config{StateURL: "s3://" + bucket, KeyURL: "base64key://" + base64.URLEncoding.EncodeToString(key)},
		statestore.WithBucket(b))
	if err != nil {
		t.Fatal(err)
	}
	step := provision.Node{Name: "step", Kind: "step",
		Apply: func(ctx context.Context, r *provision.Run) error {
			return r.SetSecret(ctx, cluster.SecretKubeconfig, []byte("apiVersion: v1\nkind: Config\n"))
		},
		Destroy: func(context.Context, *provision.Run) error { return nil }}
	return &clusterops.Ops{Store: store, LockLease: 5 * time.Second, LockWait: 10 * time.Second,
		Engine: provision.Options{PollInterval: 5 * time.Millisecond},
		Build:  func(g *provision.Graph, _ provision.Spec) error { return g.Add(step) }}
}

// versionsOf counts the bucket's noncurrent versions and delete markers.
func versionsOf(t *testing.T, c *s3.Client, bucket string) (noncurrent, markers int) {
	t.Helper()
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}
	for {
		page, err := c.ListObjectVersions(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Versions {
			if !aws.ToBool(v.IsLatest) {
				noncurrent++
			}
		}
		markers += len(page.DeleteMarkers)
		if !aws.ToBool(page.IsTruncated) {
			return noncurrent, markers
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}
