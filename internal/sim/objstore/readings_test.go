package objstore_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/blob"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// The dialect's constants follow their register rows' readings, so that WithReadings maps a
// reading to the behaviour of that name.
func TestReadingsFollowTheRegister(t *testing.T) {
	t.Parallel()
	for id, names := range map[string][]string{
		assume.DeleteConditions: {objstore.DeleteConditionsIgnored.String(), objstore.DeleteConditionsRejected.String(), objstore.DeleteConditionsHonoured.String()},
	} {
		if got := assume.MustLookup(id).Values(); !slices.Equal(got, names) {
			t.Errorf("%s: the register reads %v, the stand-in %v", id, got, names)
		}
	}
	for _, tc := range []struct {
		rs   assume.Readings
		want objstore.Options
	}{
		{assume.Readings{assume.PutPrecondition: "409"}, objstore.Options{PutPrecondition: objstore.PutPrecondition409}},
		{assume.Readings{assume.PutPrecondition: "ignored"}, objstore.Options{PutPrecondition: objstore.PutPreconditionIgnored}},
		{assume.Readings{assume.DeleteMarkers: "kept"}, objstore.Options{DeleteMarkers: objstore.DeleteMarkersKept}},
		{assume.Readings{assume.DeleteMarkers: "refused"}, objstore.Options{DeleteMarkers: objstore.DeleteMarkersRefused}},
		{assume.Readings{assume.PresignScope: "wide"}, objstore.Options{PresignScope: objstore.PresignWide}},
		{assume.Readings{assume.PresignScope: "refused"}, objstore.Options{PresignScope: objstore.PresignRefused}},
		{assume.Readings{assume.DeleteConditions: "rejected"}, objstore.Options{DeleteConditions: objstore.DeleteConditionsRejected}},
		{assume.Readings{}, objstore.Options{}},
	} {
		if got := (objstore.Options{}).WithReadings(tc.rs); got != tc.want {
			t.Errorf("WithReadings(%v) = %+v, want %+v", tc.rs, got, tc.want)
		}
	}
}

// Register row put-precondition: a conditional PutObject that loses is a bare 412, a 409, or
// written anyway, as the reading says.
func TestLostConditionalPutByReading(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reading string
		status  int // 0: written
	}{{"412", http.StatusPreconditionFailed}, {"409", http.StatusConflict}, {"ignored", 0}} {
		t.Run(tc.reading, func(t *testing.T) {
			s := objstoretest.VersityWith(t, objstore.Options{}.WithReadings(assume.Readings{assume.PutPrecondition: tc.reading}))
			objstoretest.Bucket(t, s, "bkt")
			c := s.Client()
			put := func(body string) error {
				_, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader([]byte(body)), IfNoneMatch: aws.String("*")})
				return err
			}
			if err := put("first"); err != nil {
				t.Fatal(err)
			}
			err := put("second")
			var re *smithyhttp.ResponseError
			switch {
			case tc.status == 0 && err != nil:
				t.Fatalf("the second create: %v, want it written", err)
			case tc.status != 0 && (!errors.As(err, &re) || re.HTTPStatusCode() != tc.status):
				t.Fatalf("the second create: %v, want %d", err, tc.status)
			}
			out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(out.Body)
			if want := map[bool]string{true: "second", false: "first"}[tc.status == 0]; string(got) != want {
				t.Errorf("the object holds %q, want %q", got, want)
			}
		})
	}
}

// Register row presign-scope: a key whose IAM grants objects read reaches public/ only, every
// object, or none.
func TestPresignScopeByReading(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reading           string
		public, elsewhere int
	}{{"narrowed", 200, 403}, {"wide", 200, 200}, {"refused", 403, 403}} {
		t.Run(tc.reading, func(t *testing.T) {
			s := objstoretest.VersityWith(t, objstore.Options{}.WithReadings(assume.Readings{assume.PresignScope: tc.reading}))
			objstoretest.Bucket(t, s, "bkt")
			for _, k := range []string{"public/x", "clusters/x"} {
				if _, err := s.Client().PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(k), Body: bytes.NewReader([]byte("x"))}); err != nil {
					t.Fatal(err)
				}
			}
			ak, sk := "AKREAD"+tc.reading, "secret-"+tc.reading+"-0123456789"
			if err := s.AddProjectKey(t.Context(), ak, sk); err != nil {
				t.Fatal(err)
			}
			s.GrantIAM(ak, objstore.AccessObjectsRead)
			signer, err := s.OpenBucketAs(t.Context(), "bkt", ak, sk)
			if err != nil {
				t.Fatal(err)
			}
			defer signer.Close()
			for key, want := range map[string]int{"public/x": tc.public, "clusters/x": tc.elsewhere} {
				u, err := signer.SignedURL(t.Context(), key, &blob.SignedURLOptions{Expiry: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				resp, err := s.HTTPClient().Get(u)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("a link to %s: %d, want %d", key, resp.StatusCode, want)
				}
			}
		})
	}
}
