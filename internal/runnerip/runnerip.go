// Package runnerip finds the address this process's connections leave from (its egress), as an
// HTTPS echo endpoint sees it, when POC_RUNNER_CIDR does not say it: the runner must be admitted
// to the cluster's APIs for its run, and a GitHub-hosted runner's address changes from run to run.
//
// The endpoint answers a GET with the caller's address as plain text (optionally with a trailing
// newline), as https://checkip.amazonaws.com does; `bot sim` serves one on loopback.
package runnerip

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// DefaultEchoURL is the echo endpoint used when POC_RUNNER_ECHO_URL is unset.
const DefaultEchoURL = settings.DefaultRunnerEchoURL

// Timeout bounds one detection.
const Timeout = 10 * time.Second

// ErrDetect is wrapped by every detection failure.
var ErrDetect = errors.New("cannot detect the runner's address")

// Detect asks echoURL for this process's address and returns it as a one-address CIDR
// (a.b.c.d/32). Plain http is accepted only for a loopback endpoint (the emulated world's).
func Detect(ctx context.Context, c *http.Client, echoURL string) (string, error) {
	fail := func(err error) error {
		return fmt.Errorf("%w from %s: %w; set POC_RUNNER_CIDR to the runner's egress address (a self-hosted runner with a static egress is the way to a narrow admin_cidrs), or POC_RUNNER_ECHO_URL to an echo endpoint this runner reaches", ErrDetect, echoURL, err)
	}
	u, err := url.Parse(echoURL)
	if err != nil || u.Host == "" {
		return "", fail(errors.New("not a URL"))
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && isLoopback(u.Hostname())) {
		return "", fail(errors.New("the echo endpoint must be https (plain http only on loopback)"))
	}
	if c == nil {
		c = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, echoURL, nil)
	if err != nil {
		return "", fail(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", fail(err)
	}
	defer resp.Body.Close() //nolint:errcheck
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	if err != nil {
		return "", fail(err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fail(fmt.Errorf("answered %s", resp.Status))
	}
	cidr, err := Parse(string(body))
	if err != nil {
		return "", fail(err)
	}
	return cidr, nil
}

// Parse reads an echo endpoint's answer: one IP address, surrounding white space allowed. It
// returns the address's one-address CIDR.
func Parse(body string) (string, error) {
	s := strings.TrimSpace(body)
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		if len(s) > 64 {
			s = s[:64] + "…"
		}
		return "", fmt.Errorf("the answer %q is not an IP address", s)
	}
	a = a.Unmap()
	if a.IsUnspecified() || a.IsMulticast() {
		return "", fmt.Errorf("the answer %s is not a unicast address", a)
	}
	return netip.PrefixFrom(a, a.BitLen()).String(), nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Handler is an echo endpoint: it answers every GET with the caller's address.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			http.Error(w, "no remote address", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = fmt.Fprintln(w, ap.Addr().Unmap())
	})
}
