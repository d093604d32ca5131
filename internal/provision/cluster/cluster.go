// Package cluster assembles the whole seed cluster as one provision graph: the Scaleway inventory
// (the scaleway driver's nodes), the image chain (the shared QCOW2 object the snapshot is imported
// from), the Talos machine configs delivered as the control planes' user data, the worker's disk
// written from its rescue system, its first configuration in maintenance mode, the etcd bootstrap
// and the admin kubeconfig. It knows nothing of GitHub nor of where the state is kept.
//
// The control planes' user data (their whole config, keys included) is cleared only once every
// control plane answers over mutual TLS: a Talos node reads its user data when it boots, and one
// that boots after the clear would sit in maintenance mode with an open API.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/rescue"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// Nodes this package adds to the driver's graph.
const (
	NodeImageObject  = "image-object"
	NodeTalosSecrets = "talos-secrets"
	NodeTalosConfig  = "talos-config"
	NodeWorkerImage  = "worker-image"  // docs/seed.md, Work outside the state, 2: rescue, dd, reboot
	NodeWorkerConfig = "worker-config" // docs/seed.md, Work outside the state, 3: maintenance-mode apply
	NodeBootstrap    = "bootstrap"
	NodeCPTrusted    = "control-planes-trusted" // every control plane answers over mutual TLS
	NodeKubeconfig   = "kubeconfig"
	NodeClusterReady = "cluster-ready" // every node Ready, Cilium up, DNS, host → remote pod, pod ↔ pod (talos.CheckReady)
	NodeClearUD      = "clear-user-data"
	NodeAdminOpen    = "admin-access-open"  // temporary rule for the runner, when admin CIDRs miss it
	NodeAdminClose   = "admin-access-close" // removes it once the APIs are no longer needed
)

// State keys (provision.State Secrets and Outputs) other packages read.
const (
	SecretTalos       = "talos/secrets"
	SecretTalosconfig = "talos/talosconfig"
	SecretKubeconfig  = "kubeconfig"

	OutAPIEndpoint   = "api_endpoint"   // https://…:6443
	OutTalosNodes    = "talos_nodes"    // comma list of control-plane IPs
	OutWorkerIP      = "worker_ip"      // also the edge address
	OutWorkerDisk    = "worker_disk"    // found in rescue
	OutRescueHostKey = "rescue_hostkey" // SHA256 fingerprint first seen
	OutImageSHA256   = "image_sha256"
	OutImageBytes    = "image_bytes_downloaded"
)

// Config wires the outside parties of a cluster.
type Config struct {
	Driver *scaleway.Driver
	// FactoryURL is the Image Factory base (POC_IMAGE_FACTORY_URL).
	FactoryURL string
	// ImageBucket is the bucket named by Spec.ImageBucket, opened for writing the shared image
	// (and the cache of the Cilium chart).
	ImageBucket *blob.Bucket
	// CiliumChart is the Cilium chart pinned by digest (POC_CILIUM_CHART); zero:
	// talos.DefaultCiliumChart.
	CiliumChart chart.Source
	// RescuePort is the rescue system's SSH port (22 on Scaleway).
	RescuePort int
	// RescuePasswordWait bounds the wait for rescue_server.password when the rescue system's
	// sudo wants it and the API has not shown it yet (default 5 min).
	RescuePasswordWait time.Duration
	// ReadyTimeout bounds the wait for the cluster's network checks (cluster-ready; default
	// 10 min): a check still failing then fails the up, naming it.
	ReadyTimeout time.Duration
	// TalosPort is the Talos API port (50000).
	TalosPort int
	// KubePort is the Kubernetes API port (6443).
	KubePort int
	// RunnerCIDR is the address the bot runs from (POC_RUNNER_CIDR). When the spec's admin CIDRs
	// do not cover it, the control planes' group gets a temporary rule for it during the run; no
	// node's Talos firewall ever names it (the worker is reached through a control plane).
	// Empty: the admin CIDRs are trusted to cover the runner.
	RunnerCIDR string
	// ImageLocker serializes the clusters that make the same shared image (object and snapshot),
	// so that a second cluster reuses what the first made instead of racing it. Optional.
	ImageLocker ImageLocker
	// Pool, when set, lets an up adopt a parked worker of the same zone, offer, Talos version
	// and schematic, and a down run under WithParkFor park the worker there instead of
	// deleting it.
	Pool Pool
	// ParkTimeout bounds a park (default DefaultParkTimeout); past it the worker is deleted.
	ParkTimeout time.Duration
	// Snapshots keeps the etcd snapshot of a paused cluster (BuildPause; a resume's bootstrap
	// recovers from it). Optional for Build; a cluster with a recorded snapshot needs it.
	Snapshots Snapshots
	Now       func() time.Time
	Log       *slog.Logger
}

// ImageLocker takes a lock named by an image key, across processes; release gives it back. The
// context it returns ends when the lock is lost: the image is made under it.
type ImageLocker interface {
	LockImage(ctx context.Context, key string) (held context.Context, release func(), err error)
}

// SchematicID is the Image Factory schematic of a spec's extensions.
func SchematicID(spec provision.Spec) string {
	_, id := images.Schematic(spec.TalosExtensions)
	return id
}

// Endpoint is the Kubernetes API URL the configs and kubeconfig name: the cluster's DNS name when
// a zone is set, the first control plane's address otherwise.
func Endpoint(spec provision.Spec, clusterID string, cpIPs []string, kubePort int) string {
	host := ""
	if spec.DNSZone != "" {
		host = spec.FQDN(spec.DNSNames(clusterID).API)
	} else if len(cpIPs) > 0 {
		host = cpIPs[0]
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(kubePort))
}

// Build adds the driver's inventory and the Talos/image nodes of spec to g.
func Build(g *provision.Graph, spec provision.Spec, cfg Config) error {
	if cfg.Driver == nil || cfg.ImageBucket == nil || cfg.FactoryURL == "" {
		return errors.New("cluster: Config needs a driver, an image bucket and the Image Factory URL")
	}
	if cfg.RescuePort == 0 {
		cfg.RescuePort = 22
	}
	if cfg.RescuePasswordWait == 0 {
		cfg.RescuePasswordWait = 5 * time.Minute
	}
	if cfg.TalosPort == 0 {
		cfg.TalosPort = netpolicy.PortApid
	}
	if cfg.KubePort == 0 {
		cfg.KubePort = netpolicy.PortKubeAPI
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := cfg.Driver.Build(g, spec); err != nil {
		return err
	}
	b := &builder{cfg: cfg, spec: spec}
	var ipNodes, poweron []string
	for i := range spec.CPCount {
		ipNodes = append(ipNodes, scaleway.NodeIP(i))
		poweron = append(poweron, scaleway.NodePoweron(i))
	}
	nodes := []provision.Node{
		{Name: NodeImageObject, Kind: "object_storage.object", Apply: b.imageObject, Timeout: 30 * time.Minute},
		{Name: NodeTalosSecrets, Kind: "talos.secrets", Apply: b.talosSecrets},
		// The configs carry every node's ingress firewall, which names the worker's address (never
		// the runner's: see firewall): hence the worker before them.
		{Name: NodeTalosConfig, Kind: "talos.config", Needs: append([]string{NodeTalosSecrets, scaleway.NodeWorker}, ipNodes...), Apply: b.talosConfig,
			Preflight: b.ciliumPreflight},
		{Name: NodeWorkerImage, Kind: "rescue.write", Needs: []string{scaleway.NodeWorker, scaleway.NodeSSHKey}, Apply: b.workerImage, Timeout: 45 * time.Minute},
		{Name: NodeWorkerConfig, Kind: "talos.apply", Needs: []string{NodeWorkerImage, NodeTalosConfig}, Apply: b.workerConfig, Timeout: 15 * time.Minute},
		{Name: NodeBootstrap, Kind: "talos.bootstrap", Needs: append([]string{NodeTalosConfig}, poweron...), Apply: b.bootstrap, Timeout: 15 * time.Minute},
		{Name: NodeCPTrusted, Kind: "talos.trust", Needs: append([]string{NodeTalosConfig}, poweron...), Apply: b.controlPlanesTrusted, Timeout: 15 * time.Minute},
		{Name: NodeClearUD, Kind: "instance.user_data", Needs: []string{NodeCPTrusted}, Apply: b.clearUserData},
		{Name: NodeKubeconfig, Kind: "talos.kubeconfig", Needs: []string{NodeBootstrap, NodeWorkerConfig}, Apply: b.kubeconfig, Timeout: 15 * time.Minute},
		{Name: NodeAdminOpen, Kind: "instance.security_group_rule", Apply: b.adminOpen},
		{Name: NodeClusterReady, Kind: "kubernetes.ready", Needs: []string{NodeKubeconfig}, Apply: b.clusterReady, Timeout: 15 * time.Minute},
		{Name: NodeAdminClose, Kind: "instance.security_group_rule", Needs: []string{NodeClusterReady, NodeClearUD, scaleway.NodeSecRules}, Apply: b.adminClose},
	}
	for _, n := range nodes {
		if apply, log := n.Apply, b.cfg.Log; apply != nil && log != nil {
			talosLog := log.With("component", "talos")
			n.Apply = func(ctx context.Context, r *provision.Run) error { return apply(talos.WithLogger(ctx, talosLog), r) }
		}
		if err := g.Add(n); err != nil {
			return err
		}
	}
	if err := g.AddNeeds(scaleway.NodeSecGroup, NodeAdminOpen); err != nil {
		return err
	}
	if err := g.AddNeeds(scaleway.NodeSnapshot, NodeImageObject); err != nil {
		return err
	}
	if err := g.WrapApply(scaleway.NodeWorker, b.adoptOrOrder); err != nil {
		return err
	}
	if err := g.WrapDestroy(scaleway.NodeWorker, b.parkOrDelete); err != nil {
		return err
	}
	if err := g.WrapPreflight(scaleway.NodeWorker, b.stockUnlessParked); err != nil {
		return err
	}
	if cfg.ImageLocker != nil {
		if err := g.WrapApply(NodeImageObject, b.underImageLock(b.imageObjectStored)); err != nil {
			return err
		}
		if err := g.WrapApply(scaleway.NodeSnapshot, func(importSnapshot applyFunc) applyFunc {
			return b.underImageLock(cfg.Driver.SnapshotAvailable)(b.fromStoredObject(importSnapshot))
		}); err != nil {
			return err
		}
	}
	for _, p := range poweron {
		if err := g.AddNeeds(p, NodeTalosConfig); err != nil {
			return err
		}
	}
	return g.Validate()
}

type builder struct {
	cfg  Config
	spec provision.Spec
}

// applyFunc is a node's Apply (provision.Node).
type applyFunc = func(ctx context.Context, r *provision.Run) error

// fromStoredObject runs importSnapshot once the image object is stored. The object step may have
// found it whole without the lock, and a prune that held the lock meanwhile (`bot images prune`
// deletes the snapshot, then the object) may have removed it since: under the lock, the object is
// looked up again and streamed again when it is gone (what the object step recorded stands when
// it is there).
func (b *builder) fromStoredObject(importSnapshot applyFunc) applyFunc {
	return func(ctx context.Context, r *provision.Run) error {
		spec := r.Spec()
		_, ok, err := images.Lookup(ctx, b.cfg.ImageBucket, spec.ImageKey)
		if err != nil {
			return fmt.Errorf("image %s in bucket %s: %w", spec.ImageKey, spec.ImageBucket, err)
		}
		if !ok {
			if err := b.imageObject(ctx, r); err != nil {
				return err
			}
		}
		return importSnapshot(ctx, r)
	}
}

// underImageLock runs apply holding the lock of the spec's image: the object upload and the
// snapshot import of one image happen once, whichever cluster comes first. What is made already
// needs no lock: done, checked first without it, records it (an object is visible only whole, a
// snapshot is used only once available) and says so; anything else (missing, importing, a
// look-up that failed) goes through the lock and apply.
func (b *builder) underImageLock(done func(ctx context.Context, r *provision.Run) (bool, error)) func(apply applyFunc) applyFunc {
	return func(apply applyFunc) applyFunc {
		return func(ctx context.Context, r *provision.Run) error {
			if ok, err := done(ctx, r); err == nil && ok {
				return nil
			}
			spec := r.Spec()
			held, release, err := b.cfg.ImageLocker.LockImage(ctx, spec.ImageBucket+"/"+spec.ImageKey)
			if err != nil {
				return fmt.Errorf("lock the shared image %s: %w", spec.ImageKey, err)
			}
			defer release()
			if err := apply(held, r); err != nil {
				if cause := context.Cause(held); held.Err() != nil && ctx.Err() == nil {
					return fmt.Errorf("make the shared image %s: %w (%w)", spec.ImageKey, err, cause)
				}
				return err
			}
			return nil
		}
	}
}

// imageObjectStored records the spec's image object when the bucket holds it whole (the object
// and its manifest agree), without downloading anything.
func (b *builder) imageObjectStored(ctx context.Context, r *provision.Run) (bool, error) {
	obj, ok, err := images.Lookup(ctx, b.cfg.ImageBucket, r.Spec().ImageKey)
	if err != nil || !ok {
		return false, err
	}
	return true, b.recordImage(ctx, r, obj, false)
}

func (b *builder) imageObject(ctx context.Context, r *provision.Run) error {
	spec := r.Spec()
	doc, id := images.Schematic(spec.TalosExtensions)
	obj, downloaded, err := images.EnsureObject(ctx, b.cfg.FactoryURL, b.cfg.ImageBucket, spec.ImageKey,
		images.Source{SchematicYAML: doc, SchematicID: id, Version: spec.TalosVersion}, images.Options{Log: b.cfg.Log})
	if err != nil {
		return fmt.Errorf("image %s in bucket %s: %w", spec.ImageKey, spec.ImageBucket, err)
	}
	return b.recordImage(ctx, r, obj, downloaded)
}

// recordImage records the image object the cluster boots from.
func (b *builder) recordImage(ctx context.Context, r *provision.Run, obj images.Object, downloaded bool) error {
	n := int64(0)
	if downloaded {
		n = obj.Size
		r.Note(NodeImageObject, fmt.Sprintf("streamed %d MiB from the Image Factory", obj.Size>>20))
	} else {
		r.Note(NodeImageObject, "reused the shared image "+obj.Key)
	}
	return r.Set(ctx, nil, map[string]string{OutImageBytes: strconv.FormatInt(n, 10), OutImageSHA256: obj.SHA256})
}

func (b *builder) talosSecrets(ctx context.Context, r *provision.Run) error {
	if _, ok := r.Secret(SecretTalos); ok {
		return nil // generated once, reused by every later up
	}
	bundle, err := talos.NewSecrets(r.Spec().TalosVersion, r.Spec().ServiceAccountKey)
	if err != nil {
		return err
	}
	return r.SetSecret(ctx, SecretTalos, bundle)
}

func cpIPs(r *provision.Run) ([]string, error) {
	var ips []string
	for i := range r.Spec().CPCount {
		rec, ok := r.Resource(scaleway.NodeIP(i))
		if !ok || rec.Attrs["address"] == "" {
			return nil, fmt.Errorf("no address recorded for %s", scaleway.NodeIP(i))
		}
		ips = append(ips, rec.Attrs["address"])
	}
	return ips, nil
}

func (b *builder) generate(ctx context.Context, r *provision.Run) (*talos.Configs, []string, error) {
	spec := r.Spec()
	ips, err := cpIPs(r)
	if err != nil {
		return nil, nil, err
	}
	bundle, ok := r.Secret(SecretTalos)
	if !ok {
		return nil, nil, errors.New("no Talos secrets bundle in state")
	}
	disk, _ := r.Output(OutWorkerDisk)
	if disk == "" {
		disk = "/dev/sda" // provisional: the worker's config is generated again once rescue found its disk
	}
	var sans []string
	if spec.DNSZone != "" {
		sans = append(sans, spec.FQDN(spec.DNSNames(r.ClusterID()).API))
	}
	fw, err := firewall(r, ips)
	if err != nil {
		return nil, nil, err
	}
	cilium, err := b.ciliumChart(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfgs, err := talos.Generate(ctx, talos.Input{
		ClusterName: r.ClusterID(), Endpoint: Endpoint(spec, r.ClusterID(), ips, b.cfg.KubePort), TalosVersion: spec.TalosVersion,
		Secrets: bundle, SchematicID: SchematicID(spec), FactoryURL: b.cfg.FactoryURL, ControlPlaneIPs: ips, CertSANs: sans,
		WorkerHostname: spec.BaremetalHostname, WorkerInstallDisk: disk, Firewall: fw, CiliumRouting: spec.CiliumRouting, CiliumChart: cilium,
	})
	if err != nil {
		return nil, nil, err
	}
	return cfgs, ips, nil
}

func (b *builder) talosConfig(ctx context.Context, r *provision.Run) error {
	cfgs, ips, err := b.generate(ctx, r)
	if err != nil {
		return err
	}
	secrets := map[string][]byte{SecretTalosconfig: cfgs.Talosconfig}
	for i := range r.Spec().CPCount {
		// Cloud-init user data: the scaleway image reads it at first boot and comes up configured,
		// so no control plane ever waits in maintenance mode with an open insecure API.
		secrets[scaleway.UserDataSecret(i)] = cfgs.ControlPlane
	}
	// One save: the control planes' poweron waits for this node.
	return r.Set(ctx, secrets, map[string]string{OutTalosNodes: strings.Join(ips, ","),
		OutAPIEndpoint: Endpoint(r.Spec(), r.ClusterID(), ips, b.cfg.KubePort)})
}

func (b *builder) metalImageURL(spec provision.Spec) string {
	return images.MetalRawZstURL(b.cfg.FactoryURL, SchematicID(spec), spec.TalosVersion)
}

func (b *builder) workerImage(ctx context.Context, r *provision.Run) error {
	spec := r.Spec()
	w, ok := r.Resource(scaleway.NodeWorker)
	if !ok {
		return errors.New("no worker recorded")
	}
	url := b.metalImageURL(spec)
	disk, _ := r.Output(OutWorkerDisk)
	if disk != "" && r.Trigger(NodeWorkerImage) == rescue.TriggerHash(url, disk, w.ID) {
		r.Note(NodeWorkerImage, "image already written to "+disk)
		return nil
	}
	if parkTC, _ := r.Secret(SecretParkTalosconfig); len(parkTC) > 0 && disk != "" && outputOf(r, outParkServer) == w.ID {
		// An adoption recorded this server and stopped before its trigger: its disk is the one
		// the pool entry proved re-imaged with this image.
		return r.SetTrigger(ctx, NodeWorkerImage, rescue.TriggerHash(url, disk, w.ID))
	}
	boot, res, err := b.rescueWrite(ctx, r, "")
	if err != nil {
		return err
	}
	// The rescue host key is new at every rescue boot: record the one seen, and say so. A park
	// configuration the disk held is gone with it.
	b.cfg.Log.Info("recorded the rescue system's host key (trusted on first use)", "worker", w.ID, "host_key", res.HostKey)
	if err := r.Set(ctx, map[string][]byte{SecretParkTalosconfig: nil},
		map[string]string{OutWorkerIP: boot.IP, OutRescueHostKey: res.HostKey, OutWorkerDisk: res.Disk}); err != nil {
		return err
	}
	r.Note(NodeWorkerImage, fmt.Sprintf("wrote %d MiB to %s; rebooting to disk", res.BytesWritten>>20, res.Disk))
	if _, err := b.cfg.Driver.RebootWorker(ctx, r, "normal"); err != nil {
		return err
	}
	return r.SetTrigger(ctx, NodeWorkerImage, rescue.TriggerHash(url, res.Disk, w.ID))
}

// rescueWrite reboots the worker into its rescue system, writes the spec's pinned metal image
// over disk ("": the one rescue.ChooseDisk picks) and reads it back (rescue.WriteImage); the
// worker stays in rescue. It is the up's first write and the park's re-image.
func (b *builder) rescueWrite(ctx context.Context, r *provision.Run, disk string) (scaleway.WorkerBoot, rescue.Result, error) {
	spec := r.Spec()
	w, _ := r.Resource(scaleway.NodeWorker)
	url := b.metalImageURL(spec)
	boot, err := b.cfg.Driver.RebootWorker(ctx, r, "rescue")
	if err != nil {
		return boot, rescue.Result{}, err
	}
	signer, err := r.SSHKey().Signer()
	if err != nil {
		return boot, rescue.Result{}, err
	}
	r.Note(NodeWorkerImage, "rescue system up; writing "+url)
	img := rescue.Image{Zstd: url, XZ: images.MetalRawXZURL(b.cfg.FactoryURL, SchematicID(spec), spec.TalosVersion)}
	// rescue_server may be empty or late: log in as the rescue user with the key passed in
	// ssh_key_ids, and wait for the password only if sudo asks for one.
	res, err := rescue.WriteImage(ctx, rescue.Target{
		Addr: net.JoinHostPort(boot.IP, strconv.Itoa(b.cfg.RescuePort)), User: boot.RescueUser,
		Password: boot.RescuePassword, Signer: signer, RetryInterval: r.PollInterval(), Disk: disk,
		SudoPassword: func(ctx context.Context) (string, error) {
			return b.cfg.Driver.RescuePassword(ctx, r, b.cfg.RescuePasswordWait)
		},
	}, img, b.cfg.Log)
	if err != nil {
		return boot, res, fmt.Errorf("write the Talos metal image to worker %s from rescue: %w", w.ID, err)
	}
	return boot, res, nil
}

func (b *builder) workerConfig(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	w, _ := r.Resource(scaleway.NodeWorker)
	ip, _ := r.Output(OutWorkerIP)
	if ip == "" {
		ip = w.Attrs["ipv4"]
	}
	talosconfig, _ := r.Secret(SecretTalosconfig)
	addr := net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort))
	// Configured, the worker's firewall admits the nodes and the admin CIDRs only: the bot's
	// trusted calls go through the first control plane's apid.
	trusted, err := b.throughCP(r, ip)
	if err != nil {
		return err
	}
	trigger := r.Trigger(NodeWorkerImage)
	if trigger != "" && r.Trigger(NodeWorkerConfig) == trigger {
		return talos.WaitTrustedAt(ctx, trusted, talosconfig)
	}
	cfgs, _, err := b.generate(ctx, r)
	if err != nil {
		return err
	}
	if adopted, err := b.applyOverPark(ctx, r, addr, trusted, cfgs.Worker, talosconfig); adopted || err != nil {
		if err != nil {
			return err
		}
		r.Note(NodeWorkerConfig, "applied over the park configuration (authenticated)")
		return r.SetTrigger(ctx, NodeWorkerConfig, trigger)
	}
	// A trusted call first: a rerun after the apply (the trigger not recorded yet) finds the
	// worker configured, and a configured node refuses every insecure call.
	disks, err := talos.Configure(ctx, addr, trusted, cfgs.Worker, talosconfig)
	if err != nil {
		return fmt.Errorf("configure the worker %s: %w", ip, err)
	}
	if disks == nil {
		r.Note(NodeWorkerConfig, "already configured: answers over mutual TLS")
	} else {
		r.Note(NodeWorkerConfig, "applied in maintenance mode; disks seen: "+strings.Join(talos.DiskPaths(disks), ", "))
	}
	return r.SetTrigger(ctx, NodeWorkerConfig, trigger)
}

// throughCP is the route to the node at ip through the first control plane's apid, which
// forwards the call from its own address (talos.Through): how the bot reaches the configured
// worker, whose Talos firewall never admits a runner.
func (b *builder) throughCP(r *provision.Run, ip string) (talos.Route, error) {
	ips, err := cpIPs(r)
	if err != nil {
		return talos.Route{}, err
	}
	return talos.Through(b.talosAddr(ips[0]), ip), nil
}

func (b *builder) firstCP(r *provision.Run) (string, []byte, error) {
	ips, err := cpIPs(r)
	if err != nil {
		return "", nil, err
	}
	tc, ok := r.Secret(SecretTalosconfig)
	if !ok {
		return "", nil, errors.New("no talosconfig in state")
	}
	return ips[0], tc, nil
}

func (b *builder) bootstrap(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	if snap, _ := r.Output(OutEtcdSnapshot); snap != "" {
		return b.recoverEtcd(ctx, r, snap) // a resume: etcd from the pause's snapshot
	}
	ip, tc, err := b.firstCP(r)
	if err != nil {
		return err
	}
	return talos.Bootstrap(ctx, net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort)), tc)
}

// controlPlanesTrusted waits until every control plane answers over mutual TLS, i.e. each one read
// its config from the user data at boot. Only then may the user data go: a control plane that
// boots later than the others and finds none sits in maintenance mode, its API open to anyone.
func (b *builder) controlPlanesTrusted(ctx context.Context, r *provision.Run) error {
	ips, err := cpIPs(r)
	if err != nil {
		return err
	}
	tc, ok := r.Secret(SecretTalosconfig)
	if !ok {
		return errors.New("no talosconfig in state")
	}
	for i, ip := range ips {
		if err := talos.WaitTrusted(ctx, net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort)), tc); err != nil {
			return fmt.Errorf("control plane %d (%s) never came up with its config from the user data: %w", i, ip, err)
		}
	}
	return nil
}

func (b *builder) clearUserData(ctx context.Context, r *provision.Run) error {
	for i := range r.Spec().CPCount {
		if err := b.cfg.Driver.ClearUserData(ctx, r, i); err != nil {
			return err
		}
		// The copy the poweron node used is no longer needed either.
		if err := r.SetSecret(ctx, scaleway.UserDataSecret(i), nil); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) kubeconfig(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	ip, tc, err := b.firstCP(r)
	if err != nil {
		return err
	}
	kc, err := talos.Kubeconfig(ctx, net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort)), tc)
	if err != nil {
		return err
	}
	// Dial the first control plane even when the kubeconfig names a DNS name not resolvable yet.
	if err := talos.ReadyzVia(ctx, kc, net.JoinHostPort(ip, strconv.Itoa(b.cfg.KubePort))); err != nil {
		return fmt.Errorf("Kubernetes API of %s not ready: %w", r.ClusterID(), err)
	}
	if old, ok := r.Secret(SecretKubeconfig); ok && string(old) == string(kc) {
		return nil
	}
	return r.SetSecret(ctx, SecretKubeconfig, kc)
}

// Covered tells whether one of cidrs contains the whole of runner.
func Covered(cidrs []string, runner string) (bool, error) {
	rp, err := netip.ParsePrefix(runner)
	if err != nil {
		if a, aerr := netip.ParseAddr(runner); aerr == nil {
			rp = netip.PrefixFrom(a, a.BitLen())
		} else {
			return false, fmt.Errorf("runner address %q is neither an IP nor a CIDR", runner)
		}
	}
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		if p.Bits() <= rp.Bits() && p.Contains(rp.Addr()) {
			return true, nil
		}
	}
	return false, nil
}

func (b *builder) adminOpen(ctx context.Context, r *provision.Run) error {
	if b.cfg.RunnerCIDR == "" {
		return nil
	}
	ok, err := Covered(r.Spec().AdminCIDRs, b.cfg.RunnerCIDR)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	r.Note(NodeAdminOpen, "admin CIDRs do not cover the runner: temporary rule for "+b.cfg.RunnerCIDR)
	return r.SetOutput(ctx, scaleway.OutAdminTemporary, b.cfg.RunnerCIDR)
}

// clusterReady waits until the cluster's network works (talos.WaitReady): /readyz answers long
// before any network plugin runs. A check still failing at the deadline fails the step with its
// name, what explains it, and what to try.
func (b *builder) clusterReady(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(b.cfg.ReadyTimeout, talos.DefaultWaitTimeout))
	defer cancel()
	ip, _, err := b.firstCP(r)
	if err != nil {
		return err
	}
	kc, ok := r.Secret(SecretKubeconfig)
	if !ok {
		return errors.New("no kubeconfig in state")
	}
	if _, err := talos.WaitReady(ctx, talos.ReadyInput{Kubeconfig: kc, DialAddr: net.JoinHostPort(ip, strconv.Itoa(b.cfg.KubePort)), Nodes: r.Spec().CPCount + 1}); err != nil {
		return fmt.Errorf("cluster %s: %w", r.ClusterID(), err)
	}
	return nil
}

func (b *builder) adminClose(ctx context.Context, r *provision.Run) error {
	if v, _ := r.Output(scaleway.OutAdminTemporary); v != "" {
		if err := r.SetOutput(ctx, scaleway.OutAdminTemporary, ""); err != nil {
			return err
		}
		r.Note(NodeAdminClose, "removing the temporary admin rule")
	}
	// Always: a retry after a failed PUT finds the output already cleared, and the group must
	// still lose the rule. Nothing is sent when the group already holds the spec's rules.
	return b.cfg.Driver.RefreshRules(ctx, r)
}
