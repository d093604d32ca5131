// Package prkube is the protocol by which a pull request's own workflow gets a short-lived
// kubeconfig for the pull request's cluster, without ever holding pocbot's secrets.
//
// A pull request's workflow (event pull_request) runs the pull request's code, so it must never
// see the state key or the Scaleway keys, which live in the `poc` environment that only the
// default branch deploys from. It has its job's GITHUB_TOKEN and, when the workflow grants
// id-token: write, an Actions OIDC token. So the job asks, and the bot answers from a run of the
// default branch's workflow:
//
//  1. The job makes a key pair (ECDSA P-256) in memory. Its private half never leaves the job.
//  2. It asks the runner for an OIDC token whose audience is Audience(request): a digest of the
//     pull request, the run, its attempt, the head commit, the public key, the asked lifetime and
//     a nonce. GitHub signs the token; only code of that run can get one.
//  3. It sends the request as a repository_dispatch (event type EventType; its GITHUB_TOKEN needs
//     contents: write). GitHub runs the default branch's workflow for it (events made with a
//     GITHUB_TOKEN start no run, but for workflow_dispatch and repository_dispatch), in the `poc`
//     environment, with the bot's secrets.
//  4. The bot (Admit) verifies the token (issuer's keys, audience = this request's digest, dates),
//     that it names this repository, a pull_request run (never pull_request_target), this run and
//     attempt; reads the pull request (open, not from a fork, at the request's head commit) and the
//     run (live, of that commit, from this repository, its latest attempt) and the permission of
//     who triggered it (write). Then (Plan) the cluster: ready → a certificate; being made → wait
//     for it; none → create it when the repository's settings would for this pull request.
//  5. It signs a client certificate for the job's public key with the cluster's Kubernetes CA
//     (package kubecert: CN names the pull request and run, NotAfter ≤ min(asked, 6 h, the
//     cluster's expiry)) and answers in a check run on the head commit (CheckName, external id =
//     the nonce): the API server's URL, the CA and the certificate, all public. The job reads it
//     with checks: read, writes RUNNER_TEMP/…kubeconfig (0600) with its own key, and sets the
//     step output kubeconfig-path.
//
// A leaked answer gives nothing: a certificate without its key. A replayed request gets a new
// certificate for the same job's key (the audience binds it), useless to whoever replayed it, and
// only while that run is live. A leaked OIDC token is bound to its request's key and nonce. A
// leaked kubeconfig (the job's own code can print it) is cluster-admin until its NotAfter: the
// lifetime is the control, as Kubernetes cannot revoke a client certificate.
//
// The package is pure where it decides (Admit, Plan) and talks to GitHub through small
// interfaces where it acts (Ask).
package prkube

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/github"
)

// EventType is the repository_dispatch event type of a kubeconfig request (the bot's workflow
// subscribes to it; internal/github.RequestTypes lists it).
const EventType = github.KubeconfigRequest

// CheckName is the name of the check run that answers a request.
const CheckName = "pocbot kubeconfig"

// Version is the protocol version a request and an answer carry.
const Version = 1

// Request is a repository_dispatch's client_payload (at most 10 top-level properties and 64 KB:
// OpenAPI repos/create-dispatch-event).
type Request struct {
	V          int    `json:"v"`
	PR         int    `json:"pr"`
	RunID      int64  `json:"run_id"`
	RunAttempt int    `json:"run_attempt"`
	HeadSHA    string `json:"head_sha"`
	Key        string `json:"key"`     // the job's public key, PKIX DER, standard base64
	Expires    int64  `json:"expires"` // the asked lifetime in seconds; 0: the default
	Nonce      string `json:"nonce"`   // the answer's check run external id
	Token      string `json:"token"`   // the Actions OIDC token, audience Audience(r)
}

// maxKeyBytes bounds the public key a request may carry (a P-256 PKIX key is 91 bytes; an RSA
// 4096 one about 550).
const maxKeyBytes = 1024

// Decode reads a client_payload and checks its shape (not its truth: that is Admit's).
func Decode(payload []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(payload, &r); err != nil {
		return Request{}, fmt.Errorf("prkube: the request is no JSON object of the protocol: %w", err)
	}
	var errs []error
	if r.V != Version {
		errs = append(errs, fmt.Errorf("protocol version %d, this bot speaks %d (update the Action's pin in the workflow)", r.V, Version))
	}
	if r.PR <= 0 || r.RunID <= 0 || r.RunAttempt <= 0 {
		errs = append(errs, errors.New("pr, run_id and run_attempt must be positive"))
	}
	if !isHexSHA(r.HeadSHA) {
		errs = append(errs, errors.New("head_sha is no commit SHA"))
	}
	if _, err := r.PublicKey(); err != nil {
		errs = append(errs, err)
	}
	if r.Expires < 0 {
		errs = append(errs, errors.New("expires is negative"))
	}
	if len(r.Nonce) < 16 || len(r.Nonce) > 64 || strings.Trim(r.Nonce, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		errs = append(errs, errors.New("nonce must be 16 to 64 lowercase letters and digits"))
	}
	if r.Token == "" {
		errs = append(errs, errors.New("token (the job's OIDC token) is missing: the job needs `permissions: id-token: write`"))
	}
	if len(errs) > 0 {
		return Request{}, fmt.Errorf("prkube: invalid request: %w", errors.Join(errs...))
	}
	return r, nil
}

func isHexSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// PublicKey is the request's public key.
func (r Request) PublicKey() (any, error) {
	der, err := base64.StdEncoding.DecodeString(r.Key)
	if err != nil || len(der) == 0 || len(der) > maxKeyBytes {
		return nil, errors.New("key is no base64 public key")
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("key is no PKIX public key: %w", err)
	}
	return pub, nil
}

// Lifetime is the asked lifetime (0: the default).
func (r Request) Lifetime() time.Duration { return time.Duration(r.Expires) * time.Second }

// Audience is the OIDC audience that binds a token to this request: a digest of every field but
// the token, so that a token cannot be moved to another key, run, commit, lifetime or nonce.
func Audience(r Request) string {
	h := sha256.New()
	for _, f := range []string{"pocbot-kubeconfig-v" + strconv.Itoa(r.V), strconv.Itoa(r.PR), strconv.FormatInt(r.RunID, 10),
		strconv.Itoa(r.RunAttempt), r.HeadSHA, r.Key, strconv.FormatInt(r.Expires, 10), r.Nonce} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	return "pocbot:" + base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// Subject is the certificate's user name: the pull request, the run and its attempt, so that the
// cluster's audit log names who acted.
func Subject(r Request) string {
	return fmt.Sprintf("pocbot:pr-%d:run-%d.%d", r.PR, r.RunID, r.RunAttempt)
}
