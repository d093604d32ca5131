package prkube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/kubecert"
)

// fakeBot answers dispatched requests in check runs, as the bot's workflow would: behave decides
// the answer to the n-th request (nil: no answer at all).
type fakeBot struct {
	t      *testing.T
	ca     *kubecert.CA
	mu     sync.Mutex
	n      int
	runs   []github.CheckRun
	behave func(n int, r Request) *Answer
}

func newFakeBot(t *testing.T, behave func(int, Request) *Answer) *fakeBot {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour * 24), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	kd, _ := x509.MarshalECPrivateKey(k)
	ca, err := kubecert.ParseCA(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
	if err != nil {
		t.Fatal(err)
	}
	return &fakeBot{t: t, ca: ca, behave: behave}
}

func (b *fakeBot) Dispatch(_ context.Context, eventType string, payload any) error {
	r := payload.(Request)
	if eventType != EventType || r.Token != "token-for-"+Audience(r) {
		b.t.Errorf("dispatch %s with a token not bound to the request", eventType)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	a := b.behave(b.n, r)
	if a == nil {
		return nil
	}
	if a.State == StateIssued {
		pub, _ := r.PublicKey()
		der, err := b.ca.Sign(pub, kubecert.Subject{User: Subject(r), Groups: []string{kubecert.AdminGroup}}, time.Now(), time.Now().Add(r.Lifetime()))
		if err != nil {
			b.t.Fatal(err)
		}
		a.Certificate, a.CA = base64.StdEncoding.EncodeToString(der), base64.StdEncoding.EncodeToString(b.ca.Cert.Raw)
		a.NotAfter, a.Subject = time.Now().Add(r.Lifetime()), Subject(r)
	}
	status, conclusion, title, summary, text := a.Check(r.RunID, r.RunAttempt)
	b.runs = append(b.runs, github.CheckRun{ID: int64(b.n), Name: CheckName, HeadSHA: r.HeadSHA, ExternalID: r.Nonce, Status: status,
		Conclusion: conclusion, Title: title, Summary: summary, Text: text, Updated: time.Now()})
	return nil
}

func (b *fakeBot) CheckRuns(_ context.Context, sha, name string) ([]github.CheckRun, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]github.CheckRun(nil), b.runs...), nil
}

func asker(api JobAPI, masked *[]string) *Ask {
	return &Ask{API: api, PR: 7, RunID: 900, RunAttempt: 1, HeadSHA: sha, Lifetime: 30 * time.Minute,
		IDToken: func(_ context.Context, aud string) (string, error) { return "token-for-" + aud, nil },
		Mask:    func(s string) { *masked = append(*masked, s) },
		Poll:    time.Millisecond, Redispatch: 50 * time.Millisecond}
}

func TestAskGetsAKubeconfigForItsOwnKey(t *testing.T) {
	bot := newFakeBot(t, func(n int, r Request) *Answer {
		if n == 1 {
			return nil // the first dispatch's run never starts
		}
		return &Answer{State: StateIssued, Cluster: "acme-shop-7", Server: "https://192.0.2.1:6443"}
	})
	var masked []string
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := asker(bot, &masked).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if bot.n != 2 {
		t.Errorf("%d dispatches, want 2 (the unanswered one sent again)", bot.n)
	}
	if len(masked) != 2 || !strings.HasPrefix(masked[0], "token-for-pocbot:") {
		t.Errorf("masked %q, want each request's OIDC token", masked)
	}
	cl, err := kubecert.ClusterOf(res.Kubeconfig)
	if err != nil || cl.Server != "https://192.0.2.1:6443" || res.Subject != "pocbot:pr-7:run-900.1" {
		t.Errorf("result %+v, cluster %+v, %v", res, cl, err)
	}
	if d := time.Until(res.NotAfter); d > 30*time.Minute || d < 29*time.Minute {
		t.Errorf("NotAfter in %s, asked 30m", d)
	}
}

func TestAskStopsAtARefusal(t *testing.T) {
	bot := newFakeBot(t, func(int, Request) *Answer { return &Answer{State: StateRefused, Message: "pull request #7 is closed"} })
	var masked []string
	_, err := asker(bot, &masked).Run(t.Context())
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "closed") || bot.n != 1 {
		t.Fatalf("err = %v after %d dispatches, want the refusal after one", err, bot.n)
	}
}

// A working answer keeps the job waiting (no second request) while it changes; the step's
// timeout ends the wait with what was asked.
func TestAskWaitsWhileTheBotWorks(t *testing.T) {
	bot := newFakeBot(t, func(int, Request) *Answer {
		return &Answer{State: StateWorking, Cluster: "acme-shop-7", Message: "provisioning"}
	})
	var masked []string
	a := asker(bot, &masked)
	a.Redispatch = time.Hour
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := a.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "timeout") || bot.n != 1 {
		t.Fatalf("err = %v after %d dispatches", err, bot.n)
	}
}

// A certificate for another key (a confused or hostile answer) is refused.
func TestAskRefusesACertificateForAnotherKey(t *testing.T) {
	bot := newFakeBot(t, func(int, Request) *Answer {
		return &Answer{State: StateIssued, Cluster: "acme-shop-7", Server: "https://192.0.2.1:6443"}
	})
	other := newFakeBot(t, nil)
	var masked []string
	a := asker(&keySwapper{fakeBot: bot, other: other.ca}, &masked)
	if _, err := a.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "not for this job's key") {
		t.Fatalf("err = %v", err)
	}
}

// keySwapper answers with a certificate for a key of its own.
type keySwapper struct {
	*fakeBot
	other *kubecert.CA
}

func (k *keySwapper) Dispatch(ctx context.Context, et string, payload any) error {
	r := payload.(Request)
	key, _ := kubecert.NewKey()
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	r.Key = base64.StdEncoding.EncodeToString(der)
	r.Token = "token-for-" + Audience(r)
	return k.fakeBot.Dispatch(ctx, et, r)
}
