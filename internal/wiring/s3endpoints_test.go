package wiring

import (
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyauth "github.com/aws/smithy-go/auth"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

func endpointParams() []s3.EndpointParameters {
	var out []s3.EndpointParameters
	for _, ep := range []string{"https://s3.fr-par.scw.cloud", "http://127.0.0.1:7070"} {
		for _, path := range []bool{true, false} {
			for _, bucket := range []string{"poc-state", "poc-images"} {
				for _, key := range []string{"", "clusters/acme-a-1.json"} {
					p := s3.EndpointParameters{Bucket: aws.String(bucket), Region: aws.String("fr-par"), Endpoint: aws.String(ep),
						ForcePathStyle: aws.Bool(path), UseFIPS: aws.Bool(false), UseDualStack: aws.Bool(false), Accelerate: aws.Bool(false)}
					if key != "" {
						p.Key = aws.String(key)
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// describe is what the client uses of a resolved endpoint.
func describe(e smithyendpoints.Endpoint) string {
	s := e.URI.String() + fmt.Sprint(e.Headers)
	opts, _ := smithyauth.GetAuthOptions(&e.Properties)
	for _, o := range opts {
		s += fmt.Sprintf(" %s %v %v", o.SchemeID, o.IdentityProperties.Values(), o.SignerProperties.Values())
	}
	return s
}

// The cache answers what the SDK's rules answer, for path-style and virtual-hosted buckets,
// with and without an object key, the first time and every later time; and each answer is the
// caller's own (the client rebases its auth options in place).
func TestCachedEndpointsAnswerAsTheRules(t *testing.T) {
	ctx := t.Context()
	rules := s3.NewDefaultEndpointResolverV2()
	c := newCachedEndpoints(rules)
	for _, p := range endpointParams() {
		want, err := rules.ResolveEndpoint(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			got, err := c.ResolveEndpoint(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if describe(got) != describe(want) {
				t.Fatalf("call %d for %s path-style %v: %s, want %s", i, *p.Bucket, *p.ForcePathStyle, describe(got), describe(want))
			}
			opts, _ := smithyauth.GetAuthOptions(&got.Properties)
			for _, o := range opts {
				o.SignerProperties.Set("mutated", true)
			}
			got.Headers.Set("X-Mutated", "1")
		}
	}
	if len(c.seen) != len(endpointParams()) {
		t.Errorf("%d resolutions kept, want one per distinct parameter set (%d)", len(c.seen), len(endpointParams()))
	}
}

// Concurrent requests share the cache, never an endpoint (run with -race).
func TestCachedEndpointsConcurrent(t *testing.T) {
	c := newCachedEndpoints(s3.NewDefaultEndpointResolverV2())
	p := endpointParams()[0]
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				e, err := c.ResolveEndpoint(t.Context(), p)
				if err != nil {
					t.Error(err)
					return
				}
				opts, _ := smithyauth.GetAuthOptions(&e.Properties)
				for _, o := range opts {
					o.SignerProperties.Set("rebased", true)
				}
			}
		}()
	}
	wg.Wait()
}

func TestCachedEndpointsBounded(t *testing.T) {
	c := newCachedEndpoints(s3.NewDefaultEndpointResolverV2())
	p := endpointParams()[0]
	for i := range maxCachedEndpoints + 10 {
		p.Key = aws.String(fmt.Sprintf("k%d", i))
		if _, err := c.ResolveEndpoint(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.seen) > maxCachedEndpoints {
		t.Fatalf("%d resolutions kept, over the bound %d", len(c.seen), maxCachedEndpoints)
	}
	if len(c.seen) != 10 {
		t.Errorf("%d kept after the cache was cleared at %d, want the 10 since", len(c.seen), maxCachedEndpoints)
	}
}

// The rules against the cache, for Scaleway's region: the ratio is what the soak gained.
func BenchmarkS3EndpointResolution(b *testing.B) {
	p := endpointParams()[0]
	for _, r := range []struct {
		name string
		res  s3.EndpointResolverV2
	}{{"rules", s3.NewDefaultEndpointResolverV2()}, {"cached", newCachedEndpoints(s3.NewDefaultEndpointResolverV2())}} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.res.ResolveEndpoint(b.Context(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
