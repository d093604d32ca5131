package provision

import (
	"strings"
	"testing"
)

func TestDefaultSpecIsSeed(t *testing.T) {
	s := DefaultSpec()
	if s.Zone != "fr-par-1" || s.Region != "fr-par" || s.CPCount != 3 || s.CPInstanceType != "PLAY2-NANO" ||
		s.CPVolumeSizeGB != 20 || s.CPVolumeIOPS != 5000 || s.BaremetalOffer != "EM-A116X-SSD" ||
		s.BaremetalHostname != "edge-01" || s.DNSZone != "" || s.APIHostname != "k8s-poc" ||
		s.EdgeHostname != "edge" || s.TalosVersion != "v1.13.11" || len(s.TalosExtensions) != 0 ||
		len(s.AdminCIDRs) != 1 || s.AdminCIDRs[0] != "0.0.0.0/0" || s.ExposeEdgeOnControlPlane {
		t.Errorf("DefaultSpec differs from the seed's cluster (docs/seed.md): %+v", s)
	}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "POC_IMAGE_BUCKET") {
		t.Errorf("default spec without bucket: %v, want a POC_IMAGE_BUCKET hint", err)
	}
	s.ImageBucket = "pocbot-images"
	if err := s.Validate(); err != nil {
		t.Errorf("default spec with bucket: %v", err)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Spec)
		want string
	}{
		{"even cp", func(s *Spec) { s.CPCount = 2 }, "odd"},
		{"zone", func(s *Spec) { s.Zone = "paris" }, "zone \"paris\""},
		{"zone region", func(s *Spec) { s.Zone = "nl-ams-1" }, "not in region"},
		{"iops", func(s *Spec) { s.CPVolumeIOPS = 3000 }, "5000 or 15000"},
		{"cidr", func(s *Spec) { s.AdminCIDRs = []string{"10.0.0.1/8"} }, "host bits"},
		{"cidr v6", func(s *Spec) { s.AdminCIDRs = []string{"::/0"} }, "IPv4"},
		{"no cidr", func(s *Spec) { s.AdminCIDRs = nil }, "admin_cidrs is empty"},
		{"hostnames", func(s *Spec) { s.DNSZone = "example.com"; s.EdgeHostname = "k8s-poc" }, "must differ"},
		{"dns zone", func(s *Spec) { s.DNSZone = "nodot" }, "dns_zone"},
		{"version", func(s *Spec) { s.TalosVersion = "1.13" }, "talos_version"},
		{"ssh key", func(s *Spec) { s.SSHPublicKey = "hello" }, "ssh_public_key"},
		{"1gbps", func(s *Spec) { s.BaremetalBandwidth1Gbps = true }, "only false"},
		{"ok with dns", func(s *Spec) { s.DNSZone = "example.com" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			s.ImageBucket = "b-images"
			tt.mod(&s)
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestClusterID(t *testing.T) {
	for id, ok := range map[string]bool{"acme-42": true, "t-4": true, "": false, "-a": false, "A": false,
		strings.Repeat("a", 40): true, strings.Repeat("a", 41): false, "a_b": false} {
		if err := ValidateClusterID(id); (err == nil) != ok {
			t.Errorf("ValidateClusterID(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestDiff(t *testing.T) {
	a := DefaultSpec()
	b := a
	b.AdminCIDRs = []string{"203.0.113.0/24"}
	b.CPCount = 5
	b.Zone = "fr-par-2"
	in, ref := Diff(a, b)
	if len(in) != 1 || in[0].Field != "admin_cidrs" {
		t.Errorf("inPlace = %+v", in)
	}
	if len(ref) != 2 || ref[0].Field != "zone" || ref[1].Field != "cp_count" || !strings.Contains(ref[0].Why, "/poc down") {
		t.Errorf("refused = %+v", ref)
	}
	if in, ref := Diff(a, a); len(in)+len(ref) != 0 {
		t.Errorf("Diff of equal specs: %v %v", in, ref)
	}
}

func TestSSHKeyRoundTrip(t *testing.T) {
	k, err := GenerateSSHKey("pocbot-x")
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.Signer()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.PublicKey, "ssh-ed25519 ") || !strings.HasSuffix(k.PublicKey, " pocbot-x") ||
		!strings.HasPrefix(string(k.PrivateKey), "-----BEGIN OPENSSH PRIVATE KEY-----") {
		t.Errorf("key pair format: %q", k.PublicKey)
	}
	if s.PublicKey().Type() != "ssh-ed25519" {
		t.Errorf("signer type %s", s.PublicKey().Type())
	}
}

// Validate accepts what the comment grammar accepts and refuses what it refuses: a comment may ask
// for a pre-release (`--talos v1.14.0-rc.1`), and the three places that read an extension name
// (comment, spec, schematic) accept the same names.
func TestSpecValidateAgreesWithTheCommentGrammar(t *testing.T) {
	talos := func(s *Spec, v string) { s.TalosVersion = v }
	extension := func(s *Spec, v string) { s.TalosExtensions = []string{v} }
	for _, tc := range []struct {
		field string
		set   func(*Spec, string)
		v     string
		ok    bool
	}{
		{"talos_version", talos, "v1.13.11", true}, {"talos_version", talos, "v1.14.0-rc.1", true},
		{"talos_version", talos, "v1.14.0-beta.0", true}, {"talos_version", talos, "1.13.11", false},
		{"talos_version", talos, "v1.13", false}, {"talos_version", talos, "v1.14.0-foo", false},
		{"extension", extension, "siderolabs/iscsi-tools", true}, {"extension", extension, "gvisor", true},
		{"extension", extension, "a/b/c", false}, {"extension", extension, "Siderolabs/x", false},
		{"extension", extension, "-x", false}, {"extension", extension, "a//b", false},
	} {
		s := DefaultSpec()
		s.ImageBucket = "talos-images"
		tc.set(&s, tc.v)
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s %q: err = %v, want ok=%v", tc.field, tc.v, err, tc.ok)
		}
	}
}
