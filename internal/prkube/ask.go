package prkube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/kubecert"
)

// JobAPI is what the job asks of GitHub with its GITHUB_TOKEN; *github.Client implements it.
type JobAPI interface {
	Dispatch(ctx context.Context, eventType string, payload any) error
	CheckRuns(ctx context.Context, sha, name string) ([]github.CheckRun, error)
}

// Ask is one job's request for its pull request's kubeconfig.
type Ask struct {
	API JobAPI
	// IDToken asks the runner for an OIDC token with an audience (github.RequestIDToken).
	IDToken func(ctx context.Context, audience string) (string, error)
	// The run asking, from the Actions environment and the pull_request event.
	PR         int
	RunID      int64
	RunAttempt int
	HeadSHA    string
	// Lifetime is the certificate's asked lifetime (0: the bot's default, kubecert.DefaultLifetime).
	Lifetime time.Duration
	// Poll is how often the answer is looked for (default 5 s); Redispatch how long a request may
	// go unanswered, or a working answer unchanged, before it is sent again (default 5 min: a
	// job of the bot's workflow that never started, or a run that died).
	Poll, Redispatch time.Duration
	// Mask hides a value from the job's log (::add-mask::); nil outside Actions.
	Mask func(string)
	Log  *slog.Logger
	Now  func() time.Time
}

// Result is what the job gets: the kubeconfig (it holds the job's private key: write it 0600,
// never print it) and what to say of it.
type Result struct {
	Kubeconfig []byte
	Cluster    string
	Server     string
	Subject    string
	NotAfter   time.Time
}

// DefaultRedispatch is how long a request may go unanswered, or its working answer unchanged,
// before the job sends it again; Heartbeat, how often the bot rewrites a working answer while it
// makes or waits for the cluster, is well under it, so that a live bot run is never taken for
// a dead one.
const (
	DefaultRedispatch = 5 * time.Minute
	Heartbeat         = time.Minute
)

// ErrRefused wraps a refusal or a failure the bot answered: asking again will not help.
var ErrRefused = errors.New("pocbot refused the kubeconfig")

func (a *Ask) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Ask) log() *slog.Logger {
	if a.Log != nil {
		return a.Log
	}
	return slog.Default()
}

// Run asks until the bot answers, ctx ends (the step's timeout) or the bot refuses.
func (a *Ask) Run(ctx context.Context) (Result, error) {
	poll := a.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	redispatch := a.Redispatch
	if redispatch <= 0 {
		redispatch = DefaultRedispatch
	}
	key, err := kubecert.NewKey()
	if err != nil {
		return Result{}, err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return Result{}, fmt.Errorf("prkube: encode the public key: %w", err)
	}
	for attempt := 1; ; attempt++ {
		req, err := a.request(ctx, base64.StdEncoding.EncodeToString(der))
		if err != nil {
			return Result{}, err
		}
		if err := a.API.Dispatch(ctx, EventType, req); err != nil {
			return Result{}, fmt.Errorf("ask pocbot for the kubeconfig: %w", err)
		}
		a.log().Info("kubeconfig asked of pocbot", "pull_request", a.PR, "run", a.RunID, "attempt", a.RunAttempt, "request", req.Nonce, "try", attempt)
		ans, err := a.await(ctx, req.Nonce, poll, redispatch)
		if errors.Is(err, errUnanswered) {
			a.log().Warn("no answer from pocbot's workflow: asking again (is the workflow on the default branch subscribed to repository_dispatch "+EventType+"? `bot doctor` checks it)",
				"request", req.Nonce, "waited", redispatch.String())
			continue
		}
		if err != nil {
			return Result{}, err
		}
		switch ans.State {
		case StateRefused, StateFailed:
			return Result{}, fmt.Errorf("%w: %s", ErrRefused, ans.Message)
		}
		return a.result(ans, key)
	}
}

// request builds a request with a fresh nonce and its bound OIDC token.
func (a *Ask) request(ctx context.Context, pub string) (Request, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return Request{}, fmt.Errorf("prkube: nonce: %w", err)
	}
	r := Request{V: Version, PR: a.PR, RunID: a.RunID, RunAttempt: a.RunAttempt, HeadSHA: a.HeadSHA, Key: pub,
		Expires: int64(a.Lifetime / time.Second), Nonce: hex.EncodeToString(nonce)}
	tok, err := a.IDToken(ctx, Audience(r))
	if err != nil {
		return Request{}, err
	}
	if a.Mask != nil {
		a.Mask(tok)
	}
	r.Token = tok
	return r, nil
}

var errUnanswered = errors.New("unanswered")

// await polls the check runs of the head commit for the answer to nonce: a final one is
// returned; none for redispatch, or a working one unchanged that long, is errUnanswered.
func (a *Ask) await(ctx context.Context, nonce string, poll, redispatch time.Duration) (Answer, error) {
	since, lastSeen := a.now(), ""
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		runs, err := a.API.CheckRuns(ctx, a.HeadSHA, CheckName)
		if err != nil {
			a.log().Warn("reading pocbot's answer failed; trying again", "err", err)
		}
		for _, cr := range runs {
			if cr.ExternalID != nonce {
				continue
			}
			ans, perr := ParseAnswer(cr.Text)
			if perr != nil {
				return Answer{}, perr
			}
			if ans.State != StateWorking {
				return ans, nil
			}
			if seen := ans.Message + cr.Updated.String(); seen != lastSeen {
				lastSeen, since = seen, a.now()
				a.log().Info("pocbot is on it", "cluster", ans.Cluster, "says", ans.Message)
			}
		}
		if a.now().Sub(since) >= redispatch {
			return Answer{}, errUnanswered
		}
		select {
		case <-ctx.Done():
			return Answer{}, fmt.Errorf("no kubeconfig from pocbot before the step's timeout (request %s): %w", nonce, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// result checks an issued answer against the job's key and writes the kubeconfig.
func (a *Ask) result(ans Answer, key *ecdsa.PrivateKey) (Result, error) {
	certDER, err1 := base64.StdEncoding.DecodeString(ans.Certificate)
	caDER, err2 := base64.StdEncoding.DecodeString(ans.CA)
	if err := errors.Join(err1, err2); err != nil {
		return Result{}, fmt.Errorf("prkube: the answer's certificate or CA is not base64: %w", err)
	}
	cert, err := x509.ParseCertificate(certDER)
	if err != nil {
		return Result{}, fmt.Errorf("prkube: the answer's certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return Result{}, fmt.Errorf("prkube: the answer's CA: %w", err)
	}
	mine, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	theirs, _ := x509.MarshalPKIXPublicKey(cert.PublicKey)
	if !bytes.Equal(mine, theirs) {
		return Result{}, errors.New("prkube: the answer's certificate is not for this job's key")
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return Result{}, fmt.Errorf("prkube: the answer's certificate is not signed by its CA: %w", err)
	}
	kc, err := kubecert.Kubeconfig(kubecert.Cluster{Name: ans.Cluster, Server: ans.Server, CAPEM: pemCert(caDER),
		Context: fmt.Sprintf("%s-pr-%d", ans.Cluster, a.PR)}, certDER, key)
	if err != nil {
		return Result{}, err
	}
	return Result{Kubeconfig: kc, Cluster: ans.Cluster, Server: ans.Server, Subject: cert.Subject.CommonName, NotAfter: cert.NotAfter}, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
