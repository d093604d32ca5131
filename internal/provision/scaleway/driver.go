// Package scaleway is the Scaleway driver of the provision engine: it adds to a provision.Graph
// the nodes of the seed's inventory (docs/seed.md, The cluster) — IAM SSH keys, reserved IPs, the control planes'
// security group and its rules, the shared snapshot imported from the image object, Block root
// volumes, Instance servers, the Elastic Metal worker, DNS records — and the sweepers that remove
// whatever still carries a cluster's exact tag. One file per product; scaleway-sdk-go clients.
package scaleway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/pocbot/pocbot/internal/provision"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// BucketChecker tells whether the image bucket can be reached (pre-flight). The object itself is
// made by the image chain (another node), so only the bucket is checked here.
type BucketChecker interface {
	BucketReachable(ctx context.Context, bucket string) error
}

// Config wires the driver.
type Config struct {
	Client    *scw.Client
	ProjectID string        // default: the client's default project
	Bucket    BucketChecker // optional pre-flight of the image bucket
}

// Driver builds Scaleway nodes into a graph.
type Driver struct {
	inst    *instance.API
	blk     *block.API
	bm      *baremetal.API
	iam     *iam.API
	dom     *domain.API
	project string
	org     string // the organization whose quotas the pre-flight reads
	bucket  BucketChecker
}

// New returns a driver; the client must carry credentials and a project.
func New(cfg Config) (*Driver, error) {
	if cfg.Client == nil {
		return nil, errors.New("scaleway driver: no client")
	}
	p := cfg.ProjectID
	if p == "" {
		p, _ = cfg.Client.GetDefaultProjectID()
	}
	if p == "" {
		return nil, errors.New("scaleway driver: no project id: set SCW_DEFAULT_PROJECT_ID")
	}
	org, _ := cfg.Client.GetDefaultOrganizationID() // "": the pre-flight reads no quota (SCW_DEFAULT_ORGANIZATION_ID)
	return &Driver{
		org:  org,
		inst: instance.NewAPI(cfg.Client), blk: block.NewAPI(cfg.Client), bm: baremetal.NewAPI(cfg.Client),
		iam: iam.NewAPI(cfg.Client), dom: domain.NewAPI(cfg.Client), project: p, bucket: cfg.Bucket,
	}, nil
}

// Node names the driver adds. Other packages hang their nodes on these (Graph.AddNeeds).
const (
	NodeSSHKey       = "iam-ssh-key"
	NodePersonKey    = "iam-ssh-key-person"
	NodeSecGroup     = "security-group"
	NodeSecRules     = "security-group-rules"
	NodeSnapshot     = "image-snapshot"
	NodeWorker       = "worker"
	NodeDNS          = "dns-records"
	NodeDNSEdge      = "dns-edge-records" // a pause's: EdgeDNSNode
	KindIP           = "instance.ip"
	KindSG           = "instance.security_group"
	KindServer       = "instance.server"
	KindVolume       = "block.volume"
	KindSnapshot     = "block.snapshot"
	KindBaremetal    = "baremetal.server"
	KindSSHKey       = "iam.ssh_key"
	KindDNS          = "domain.records"
	imageTagPrefix   = "pocbot-image="
	userDataKey      = "cloud-init"
	userDataSecretPx = "instance-user-data/"
)

// NodeIP, NodeVolume, NodeServer and NodePoweron name the per-control-plane nodes.
func NodeIP(i int) string      { return "ip-" + strconv.Itoa(i) }
func NodeVolume(i int) string  { return "volume-" + strconv.Itoa(i) }
func NodeServer(i int) string  { return "server-" + strconv.Itoa(i) }
func NodePoweron(i int) string { return "poweron-" + strconv.Itoa(i) }

// UserDataSecret is the state secret key whose content (when present) the poweron node writes as
// the server's cloud-init user data before powering it on: the Talos package fills it from a
// node it adds as a need of NodePoweron(i).
func UserDataSecret(i int) string { return userDataSecretPx + NodeServer(i) }

// Build adds the nodes and sweepers of spec's inventory to g.
func (d *Driver) Build(g *provision.Graph, spec provision.Spec) error {
	nodes := []provision.Node{d.sshKeyNode(NodeSSHKey, "bot", nil)}
	if spec.SSHPublicKey != "" {
		pk := spec.SSHPublicKey
		nodes = append(nodes, d.sshKeyNode(NodePersonKey, "person", &pk))
	}
	var ips []string
	for i := range spec.CPCount {
		nodes = append(nodes, d.ipNode(i))
		ips = append(ips, NodeIP(i))
	}
	nodes = append(nodes, d.secGroupNode(ips), d.secRulesNode(ips), d.snapshotNode(), d.workerNode())
	for i := range spec.CPCount {
		nodes = append(nodes, d.volumeNode(i), d.serverNode(i), d.poweronNode(i))
	}
	if spec.DNSZone != "" {
		nodes = append(nodes, d.dnsNode(ips))
	}
	for _, n := range nodes {
		if err := g.Add(n); err != nil {
			return err
		}
	}
	g.AddSweeper(provision.Sweeper{Name: "scaleway", Sweep: d.sweep})
	return nil
}

// classify turns an SDK error into the engine's vocabulary: transient errors are retried,
// permanent ones stop at once with a message naming what failed, the limit and what to do.
func classify(what, zone string, err error) error {
	if err == nil {
		return nil
	}
	var (
		quota *scw.QuotasExceededError
		stock *scw.OutOfStockError
		trans *scw.TransientStateError
		lock  *scw.ResourceLockedError
		inval *scw.InvalidArgumentsError
		perm  *scw.PermissionsDeniedError
		resp  *scw.ResponseError
		nerr  net.Error
	)
	switch {
	case errors.As(err, &quota):
		limit, res := "?", "resources"
		if len(quota.Details) > 0 {
			limit, res = strconv.Itoa(int(quota.Details[0].Quota)), quota.Details[0].Resource
		}
		return fmt.Errorf("%s: quota exceeded in %s (limit %s %s): delete unused %s or raise the quota in the Scaleway console: %w",
			what, zone, limit, res, res, err)
	case errors.As(err, &stock):
		return fmt.Errorf("%s: out of stock in %s: choose another offer or zone, or retry later: %w", what, zone, err)
	case errors.As(err, &inval):
		return fmt.Errorf("%s: invalid argument (a bug or a spec value the API refuses): %w", what, err)
	case errors.As(err, &perm):
		return fmt.Errorf("%s: permission denied: give the bot's API key the IAM permissions of deploy/ (Scaleway IAM policy): %w", what, err)
	case errors.As(err, &trans), errors.As(err, &lock):
		return provision.Transient(fmt.Errorf("%s: %w", what, err), 0)
	case errors.As(err, &resp) && (resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests):
		return provision.Transient(fmt.Errorf("%s: %w", what, err), 0)
	case errors.As(err, &nerr):
		return provision.Transient(fmt.Errorf("%s: %w", what, err), 0)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// notFound reports a 404 of any product (the SDK types it differently per API).
func notFound(err error) bool {
	var nf *scw.ResourceNotFoundError
	var resp *scw.ResponseError
	return errors.As(err, &nf) || (errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound)
}

// exact keeps the items whose tags carry this cluster's and this node's tags exactly.
func exactNode(tags []string, r *provision.Run, node string) bool {
	return provision.OwnedBy(tags, r.ClusterID()) && provision.HasTag(tags, provision.ResTag(node))
}

func zoneOf(r *provision.Run) scw.Zone { return scw.Zone(r.Spec().Zone) }

func ctxOpt(ctx context.Context) scw.RequestOption { return scw.WithContext(ctx) }
