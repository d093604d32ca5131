package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// refreshMargin is how long before its expiry an installation token is replaced: a request
// must not leave with a token that expires on the way (GitHub's tokens live one hour).
const refreshMargin = 2 * time.Minute

// installationTokens mints the installation token through go-github's
// Apps.CreateInstallationToken (POST /app/installations/{id}/access_tokens, operation
// apps/create-installation-access-token) on a client authenticated with the App's JWT, narrowed
// to the repositories and permissions in opts, and mints a new one shortly before it expires.
// The token is opaque: nothing here depends on its length or shape (GitHub's stateless tokens,
// ghs_<app id>_<JWT>, are about 520 characters).
type installationTokens struct {
	app    *gh.Client // authenticated with the App's JWT
	id     int64
	opts   *gh.InstallationTokenOptions
	now    func() time.Time
	onMint func(token string)

	mu      sync.Mutex
	token   string
	expires time.Time
}

// Token returns a token valid for at least refreshMargin, minting one when needed.
func (s *installationTokens) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token != "" && s.now().Add(refreshMargin).Before(s.expires) {
		return s.token, nil
	}
	t, resp, err := s.app.Apps.CreateInstallationToken(ctx, s.id, s.opts)
	if err != nil {
		return "", apiError(fmt.Sprintf("mint an installation token (installation %d)", s.id), resp, err)
	}
	if t.GetToken() == "" {
		return "", fmt.Errorf("github: GitHub answered the token request of installation %d without a token", s.id)
	}
	s.token, s.expires = t.GetToken(), t.GetExpiresAt().Time
	if s.expires.IsZero() {
		s.expires = s.now().Add(time.Hour) // GitHub's documented lifetime
	}
	if s.onMint != nil {
		s.onMint(s.token)
	}
	return s.token, nil
}

// installationTransport authenticates each request with the current installation token.
type installationTransport struct {
	next   http.RoundTripper
	tokens *installationTokens
}

func (t *installationTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.tokens.Token(req.Context())
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.next.RoundTrip(r)
}

// mintRefusedForID says whether GitHub refused to mint with this installation id because the id
// is wrong for the repository (unknown: 404; another account's installation: 422), which a
// look-up of the repository's installation can fix; a bad App key (401) cannot.
func mintRefusedForID(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusNotFound || ae.Status == http.StatusUnprocessableEntity)
}

// unprocessable is a 422 from GitHub.
func unprocessable(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusUnprocessableEntity
}
