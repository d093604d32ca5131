package wiring

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/version"
)

// ScalewayClient builds the Scaleway client from getenv's SCW_* variables, with a transport that
// retries 429 (honouring Retry-After) and, for requests safe to repeat, 5xx. A POST answered 5xx is
// not repeated: it may have taken effect, so the node looks its resource up by tag first.
func ScalewayClient(getenv func(string) string) (*scw.Client, error) {
	env := settings.Env(getenv)
	ak, sk := env.String("scw-access-key"), env.String("scw-secret-key")
	if ak == "" || sk == "" {
		return nil, errors.New("SCW_ACCESS_KEY and SCW_SECRET_KEY are not set: give the bot's Scaleway API key (IAM application)")
	}
	// Under the retries, so that a recording holds every attempt as the API saw it.
	base, err := record.Wrap(getenv, record.Scaleway, http.DefaultTransport)
	if err != nil {
		return nil, err
	}
	opts := []scw.ClientOption{
		scw.WithHTTPClient(&http.Client{Transport: &scaleway.RetryTransport{Base: base}, Timeout: 2 * time.Minute}),
		scw.WithAuth(ak, sk),
		scw.WithUserAgent(version.UserAgent()),
		scw.WithDefaultZone(scw.Zone(env.String("zone"))),
		scw.WithDefaultRegion(scw.Region(env.String("scw-region"))),
	}
	if env.Given("scw-api-url") {
		opts = append(opts, scw.WithAPIURL(env.String("scw-api-url")))
	}
	if v := env.String("scw-project"); v != "" {
		opts = append(opts, scw.WithDefaultProjectID(v))
	}
	if v := env.String("scw-organization"); v != "" {
		opts = append(opts, scw.WithDefaultOrganizationID(v))
	}
	c, err := scw.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("scaleway client from SCW_* variables: %w", err)
	}
	return c, nil
}
