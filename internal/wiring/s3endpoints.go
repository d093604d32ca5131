package wiring

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyauth "github.com/aws/smithy-go/auth"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// cachedEndpoints remembers the S3 client's endpoint resolutions. The rules are a pure function
// of their parameters (s3.EndpointResolverV2), and evaluating them is costly for a region the
// AWS partition table does not list, such as Scaleway's fr-par: every request compiles each
// partition's region regexp again (aws-sdk-go-v2 v1.47.3,
// internal/endpoints/awsrulesfn/partition.go, getPartition). In the soak, that was a tenth of
// the CPU of the bot processes.
type cachedEndpoints struct {
	next s3.EndpointResolverV2
	mu   sync.Mutex
	seen map[string]smithyendpoints.Endpoint
}

// maxCachedEndpoints bounds the memory: the parameters carry the object key, and a long run
// (the reaper over many clusters) meets many.
const maxCachedEndpoints = 512

func newCachedEndpoints(next s3.EndpointResolverV2) *cachedEndpoints {
	return &cachedEndpoints{next: next, seen: map[string]smithyendpoints.Endpoint{}}
}

func (c *cachedEndpoints) ResolveEndpoint(ctx context.Context, p s3.EndpointParameters) (smithyendpoints.Endpoint, error) {
	k, err := json.Marshal(p) // the values behind the pointers, not their addresses
	if err != nil {
		return c.next.ResolveEndpoint(ctx, p)
	}
	key := string(k)
	c.mu.Lock()
	e, ok := c.seen[key]
	c.mu.Unlock()
	if !ok {
		if e, err = c.next.ResolveEndpoint(ctx, p); err != nil {
			return e, err
		}
		c.mu.Lock()
		if len(c.seen) >= maxCachedEndpoints {
			clear(c.seen)
		}
		c.seen[key] = e
		c.mu.Unlock()
	}
	return copyEndpoint(e), nil
}

// copyEndpoint gives each request its own headers, property map and auth options, as a fresh
// resolution would: the client rebases the endpoint's auth options in place
// (aws-sdk-go-v2/service/s3 v1.114.3 endpoint_auth_resolver.go, rebaseProps).
func copyEndpoint(e smithyendpoints.Endpoint) smithyendpoints.Endpoint {
	out := smithyendpoints.Endpoint{URI: e.URI, Headers: e.Headers.Clone()}
	if e.URI.User != nil {
		u := *e.URI.User
		out.URI.User = &u
	}
	out.Properties.SetAll(&e.Properties)
	if opts, ok := smithyauth.GetAuthOptions(&e.Properties); ok {
		cp := make([]*smithyauth.Option, len(opts))
		for i, o := range opts {
			c := &smithyauth.Option{SchemeID: o.SchemeID}
			c.IdentityProperties.SetAll(&o.IdentityProperties)
			c.SignerProperties.SetAll(&o.SignerProperties)
			cp[i] = c
		}
		smithyauth.SetAuthOptions(&out.Properties, cp)
	}
	return out
}
