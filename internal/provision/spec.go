package provision

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/pocbot/pocbot/internal/settings"
)

// EmptySchematicID is the Image Factory id of the schematic with no customisation (no
// extensions); the default image key is derived from it.
const EmptySchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

// Spec is what one cluster is made of. Field names follow the seed's variables (docs/seed.md, The cluster).
type Spec struct {
	Zone   string `json:"zone"`
	Region string `json:"region"`

	CPCount        int    `json:"cp_count"`
	CPInstanceType string `json:"cp_instance_type"`
	CPVolumeSizeGB int    `json:"cp_volume_size_gb"`
	CPVolumeIOPS   int    `json:"cp_volume_iops"`

	BaremetalOffer    string `json:"baremetal_offer"`
	BaremetalHostname string `json:"baremetal_hostname"`
	// BaremetalBandwidth1Gbps is the seed's option; only false is supported (no option ordered).
	BaremetalBandwidth1Gbps bool `json:"baremetal_bandwidth_1gbps"`

	// ImageBucket is the seed's object_bucket_name: required (POC_IMAGE_BUCKET).
	ImageBucket string `json:"image_bucket"`
	// ImageKey is the QCOW2 object the control planes' snapshot is imported from; shared by
	// every cluster with the same schematic and version (see ImageKeyFor).
	ImageKey string `json:"image_key"`

	DNSZone      string `json:"dns_zone"`
	APIHostname  string `json:"api_hostname"`
	EdgeHostname string `json:"edge_hostname"`
	DNSTTL       int    `json:"dns_ttl"`

	TalosVersion    string   `json:"talos_version"`
	TalosExtensions []string `json:"talos_extensions"`

	AdminCIDRs               []string `json:"admin_cidrs"`
	ExposeEdgeOnControlPlane bool     `json:"expose_edge_on_control_plane"`
	// CiliumRouting is Cilium's routing mode: "" is tunnel mode (VXLAN) with WireGuard, the one
	// that crosses Scaleway's L3 subnets (provision/talos doc, "Routing"); "native" forces native
	// routing with auto direct node routes, which cannot work there: kept so that tests (and an
	// operator on a flat L2 network) can show it fail.
	CiliumRouting string `json:"cilium_routing,omitempty"`

	// ServiceAccountKey is the type of the key generated, once, to sign the cluster's
	// service-account tokens; "" (a state written before the setting) is rsa.
	ServiceAccountKey settings.ServiceAccountKey `json:"service_account_key,omitempty"`

	// SSHPublicKey is a person's public key (the seed's ssh_public_key_path, read by the caller),
	// registered next to the key pair the bot generates for the cluster. Optional.
	SSHPublicKey string `json:"ssh_public_key,omitempty"`
}

// ImageKeyFor names the shared QCOW2 object of one schematic and Talos version, so that every
// cluster with the same image reuses one object and one snapshot.
func ImageKeyFor(schematic, version string) string {
	return "talos/" + schematic + "/" + version + "/scaleway-amd64.qcow2"
}

// DNSNames are a cluster's records in its DNS zone, relative to the zone: the seed's host names
// under one label per cluster (`k8s-poc.<cluster>`, `edge.<cluster>`), so that two clusters in one
// zone never share a name and no cluster's name is one the zone already serves (`edge`, the apex).
type DNSNames struct{ API, Edge string }

// DNSNames returns the names of cluster's records in spec.DNSZone.
func (s Spec) DNSNames(cluster string) DNSNames {
	return DNSNames{API: s.APIHostname + "." + cluster, Edge: s.EdgeHostname + "." + cluster}
}

// FQDN is a record name of DNSNames in the spec's zone, without the trailing dot.
func (s Spec) FQDN(name string) string { return name + "." + strings.TrimSuffix(s.DNSZone, ".") }

// DefaultSpec returns the seed's defaults. ImageBucket has no default (the seed requires it).
func DefaultSpec() Spec {
	return Spec{
		Zone:              settings.DefaultZone,
		Region:            "fr-par",
		CPCount:           settings.DefaultCPCount,
		CPInstanceType:    settings.DefaultCPType,
		CPVolumeSizeGB:    20,
		CPVolumeIOPS:      5000,
		BaremetalOffer:    settings.DefaultWorkerOffer,
		BaremetalHostname: "edge-01",
		ImageKey:          ImageKeyFor(EmptySchematicID, settings.DefaultTalosVersion),
		DNSZone:           "",
		APIHostname:       "k8s-poc",
		EdgeHostname:      "edge",
		DNSTTL:            300,
		TalosVersion:      settings.DefaultTalosVersion,
		TalosExtensions:   []string{},
		AdminCIDRs:        []string{settings.DefaultAdminCIDR},
	}
}

var (
	zoneRe     = regexp.MustCompile(`^[a-z]{2}-[a-z]{3}-[1-9]$`)
	regionRe   = regexp.MustCompile(`^[a-z]{2}-[a-z]{3}$`)
	hostRe     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	bucketRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	clusterRe  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	dnsZoneRe  = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}$`)
	sshKeyTRe  = regexp.MustCompile(`^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$`)
	errInvalid = errors.New("invalid cluster spec")
)

// Validate reports every problem of the spec at once, each naming the field and what to do.
func (s Spec) Validate() error {
	var probs []string
	add := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	if !zoneRe.MatchString(s.Zone) {
		add("zone %q is not a Scaleway zone (like fr-par-1)", s.Zone)
	}
	if !regionRe.MatchString(s.Region) {
		add("region %q is not a Scaleway region (like fr-par)", s.Region)
	} else if zoneRe.MatchString(s.Zone) && !strings.HasPrefix(s.Zone, s.Region+"-") {
		add("zone %q is not in region %q: use a zone of that region", s.Zone, s.Region)
	}
	if s.ServiceAccountKey != "" {
		if err := settings.CheckServiceAccountKey(string(s.ServiceAccountKey)); err != nil {
			add("service_account_key %v", err)
		}
	}
	if s.CPCount < 1 || s.CPCount%2 == 0 || s.CPCount > 7 {
		add("cp_count %d: use an odd number between 1 and 7 (etcd needs an odd quorum)", s.CPCount)
	}
	if s.CPInstanceType == "" {
		add("cp_instance_type is empty: name an Instance type such as PLAY2-NANO")
	}
	if s.CPVolumeSizeGB < 5 || s.CPVolumeSizeGB > 10000 {
		add("cp_volume_size_gb %d: use 5 to 10000", s.CPVolumeSizeGB)
	}
	if s.CPVolumeIOPS != 5000 && s.CPVolumeIOPS != 15000 {
		add("cp_volume_iops %d: Block volumes offer 5000 or 15000", s.CPVolumeIOPS)
	}
	if s.BaremetalOffer == "" {
		add("baremetal_offer is empty: name an Elastic Metal offer such as EM-A116X-SSD")
	}
	if !hostRe.MatchString(s.BaremetalHostname) {
		add("baremetal_hostname %q: use lowercase letters, digits and dashes", s.BaremetalHostname)
	}
	if s.BaremetalBandwidth1Gbps {
		add("baremetal_bandwidth_1gbps: only false is supported (the 1 Gbps option is not ordered)")
	}
	if s.ImageBucket == "" {
		add("image_bucket is empty: set POC_IMAGE_BUCKET (the seed's object_bucket_name)")
	} else if !bucketRe.MatchString(s.ImageBucket) {
		add("image_bucket %q is not a valid bucket name", s.ImageBucket)
	}
	if s.ImageKey == "" || strings.HasPrefix(s.ImageKey, "/") {
		add("image_key %q: give the object key of the QCOW2 image (no leading slash)", s.ImageKey)
	}
	if s.DNSZone != "" {
		if !dnsZoneRe.MatchString(s.DNSZone) {
			add("dns_zone %q is not a domain name", s.DNSZone)
		}
		if !hostRe.MatchString(s.APIHostname) {
			add("api_hostname %q: use lowercase letters, digits and dashes", s.APIHostname)
		}
		if !hostRe.MatchString(s.EdgeHostname) {
			add("edge_hostname %q: use lowercase letters, digits and dashes", s.EdgeHostname)
		}
		if s.APIHostname == s.EdgeHostname {
			add("api_hostname and edge_hostname are both %q: they must differ", s.APIHostname)
		}
	}
	if s.DNSTTL < 60 || s.DNSTTL > 86400 {
		add("dns_ttl %d: use 60 to 86400 seconds", s.DNSTTL)
	}
	if err := settings.CheckTalosVersion(s.TalosVersion); err != nil {
		add("talos_version: %v", err)
	}
	for _, e := range s.TalosExtensions {
		if err := settings.CheckExtension(e); err != nil {
			add("talos_extensions: %v", err)
		}
	}
	if len(s.AdminCIDRs) == 0 {
		add("admin_cidrs is empty: nobody could reach the Kubernetes and Talos APIs; give at least one CIDR")
	}
	for _, c := range s.AdminCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil || !p.Addr().Is4() {
			add("admin_cidrs: %q is not an IPv4 CIDR (like 203.0.113.0/24)", c)
		} else if p.Masked() != p {
			add("admin_cidrs: %q has host bits set; did you mean %s?", c, p.Masked())
		}
	}
	if s.SSHPublicKey != "" && !sshKeyTRe.MatchString(strings.TrimSpace(s.SSHPublicKey)) {
		add("ssh_public_key is not an OpenSSH public key line (ssh-ed25519 AAAA...)")
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", errInvalid, strings.Join(probs, "; "))
	}
	return nil
}

// ValidateClusterID checks the cluster id the caller chose: [a-z0-9-], at most 40 characters, so
// that "poc-<id>-<suffix>" fits every Scaleway name and the exact tag stays unambiguous.
func ValidateClusterID(id string) error {
	if len(id) == 0 || len(id) > 40 || !clusterRe.MatchString(id) {
		return fmt.Errorf("cluster id %q: use 1 to 40 characters among a-z, 0-9 and '-', not starting or ending with '-'", id)
	}
	return nil
}

// Change is one field that differs between two specs.
type Change struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
	// Why explains a refused change (what to do instead).
	Why string `json:"why,omitempty"`
}

// inPlaceFields can change on a running cluster: security-group rules are PUT again, DNS records
// PATCHed, a person's key added.
var inPlaceFields = map[string]bool{
	"admin_cidrs": true, "expose_edge_on_control_plane": true, "dns_ttl": true,
	"dns_zone": true, "api_hostname": true, "edge_hostname": true, "ssh_public_key": true,
}

// Diff compares the spec a cluster was made with to a requested one. inPlace lists what the
// engine converges on the running cluster; refused lists what needs a new cluster (down, then up).
func Diff(old, new Spec) (inPlace, refused []Change) {
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(new)
	t := ov.Type()
	for i := range t.NumField() {
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		a, b := ov.Field(i).Interface(), nv.Field(i).Interface()
		if sa, ok := a.([]string); ok {
			sb := b.([]string)
			if slices.Equal(sa, sb) || (len(sa) == 0 && len(sb) == 0) {
				continue
			}
		} else if a == b {
			continue
		}
		c := Change{Field: name, Old: fmt.Sprint(a), New: fmt.Sprint(b)}
		if inPlaceFields[name] {
			inPlace = append(inPlace, c)
			continue
		}
		c.Why = name + " cannot change on an existing cluster: run /poc down, then /poc up with the new value"
		refused = append(refused, c)
	}
	return inPlace, refused
}
