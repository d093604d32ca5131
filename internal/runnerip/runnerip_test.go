package runnerip

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"203.0.113.9\n", "203.0.113.9/32", true},
		{"  2001:db8::1 ", "2001:db8::1/128", true},
		{"::ffff:198.51.100.4", "198.51.100.4/32", true},
		{"0.0.0.0", "", false},
		{"<html>blocked</html>", "", false},
		{"203.0.113.0/24", "", false},
		{"fe80::1%eth0", "", false},
		{"", "", false},
	} {
		got, err := Parse(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"203.0.113.9\n", "2001:db8::1", "x", "", "::ffff:1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if err == nil && !strings.Contains(got, "/") {
			t.Fatalf("Parse(%q) = %q, not a CIDR", s, got)
		}
	})
}

// TestDetectFromTheEcho: the address the echo endpoint sees comes back as a /32; a failure says
// what to set.
func TestDetectFromTheEcho(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	got, err := Detect(t.Context(), srv.Client(), srv.URL)
	if err != nil || got != "127.0.0.1/32" {
		t.Fatalf("Detect = %q, %v; want 127.0.0.1/32", got, err)
	}

	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusBadGateway) }))
	defer broken.Close()
	for _, u := range []string{broken.URL, "http://checkip.example.com", "::"} {
		_, err := Detect(t.Context(), broken.Client(), u)
		if !errors.Is(err, ErrDetect) || !strings.Contains(err.Error(), "set POC_RUNNER_CIDR") {
			t.Errorf("Detect(%s) = %v, want a failure saying what to set", u, err)
		}
	}
}
