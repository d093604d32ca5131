package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/settings"
)

// upSpec is the spec `bot up ARGS` gives a cluster with environment env, through the flags the
// up command defines.
func upSpec(t *testing.T, env map[string]string, args ...string) provision.Spec {
	t.Helper()
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	getenv := func(k string) string { return env[k] }
	sf := specFlags{}
	sf.define(&envFlags{fs: fs, getenv: getenv})
	if err := fs.Parse(args); err != nil {
		t.Fatalf("bot up %v: %v", args, err)
	}
	v, err := sf.values(fs, getenv)
	if err != nil {
		t.Fatal(err)
	}
	s := provision.DefaultSpec()
	s.Apply(v)
	return s
}

// A flag of `bot up` and the same flag of a `/poc up` comment reach the spec through one
// binding (the settings table's Spec column): the same words give the same cluster, flag by
// flag, and a flag not given leaves the spec as it is.
func TestUpFlagsBindAsCommentFlags(t *testing.T) {
	words := map[string]string{"talos": "v1.14.1", "admin-cidr": "203.0.113.0/24", "extensions": "siderolabs/iscsi-tools",
		"dns-zone": "example.com", "expose-edge": "true", "cp-count": "1", "cp-type": "PLAY2-MICRO", "worker-offer": "EM-B112X-SSD"}
	if got := upSpec(t, nil); !reflect.DeepEqual(got, provision.DefaultSpec()) {
		t.Errorf("bot up without flags changed the spec: %+v", got)
	}
	for _, row := range settings.CommentFlags() {
		if row.Spec == "" {
			continue
		}
		w, ok := words[row.Name]
		if !ok {
			t.Errorf("--%s: no sample value in this test", row.Comment)
			continue
		}
		r := commands.Parse("/poc up --"+row.Comment+"="+w, commands.ParseConfig{})
		if r.Command == nil {
			t.Fatalf("/poc up --%s=%s: %s", row.Comment, w, r.Reply)
		}
		fromComment := provision.DefaultSpec()
		fromComment.Apply(r.Command.Up.Spec)
		fromCLI := upSpec(t, nil, "--"+row.CLI+"="+w)
		if reflect.DeepEqual(fromComment, provision.DefaultSpec()) || !reflect.DeepEqual(fromCLI, fromComment) {
			t.Errorf("--%s=%s:\n bot up   %+v\n /poc up  %+v", row.Name, w, fromCLI, fromComment)
		}
	}
}

// What only the CLI gives: a zone with its region (flag or SCW_DEFAULT_ZONE) and the person's SSH
// key read from its file.
func TestUpFlagsOfTheOperator(t *testing.T) {
	if s := upSpec(t, map[string]string{"SCW_DEFAULT_ZONE": "nl-ams-2"}); s.Zone != "nl-ams-2" || s.Region != "nl-ams" {
		t.Errorf("SCW_DEFAULT_ZONE=nl-ams-2: zone %s, region %s", s.Zone, s.Region)
	}
	if s := upSpec(t, map[string]string{"SCW_DEFAULT_ZONE": "nl-ams-2"}, "--zone", "pl-waw-3"); s.Zone != "pl-waw-3" || s.Region != "pl-waw" {
		t.Errorf("--zone pl-waw-3 over the variable: zone %s, region %s", s.Zone, s.Region)
	}
	key := filepath.Join(t.TempDir(), "id.pub")
	if err := os.WriteFile(key, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := upSpec(t, nil, "--ssh-public-key-file", key); s.SSHPublicKey != "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA alice" {
		t.Errorf("--ssh-public-key-file: the spec holds %q", s.SSHPublicKey)
	}
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	sf := specFlags{}
	sf.define(&envFlags{fs: fs, getenv: func(string) string { return "" }})
	if err := fs.Parse([]string{"--ssh-public-key-file", key + ".missing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sf.values(fs, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "--ssh-public-key-file") {
		t.Errorf("a missing key file: %v, want an error naming the flag", err)
	}
}
