// Package talos owns everything pocbot says to Talos Linux: the cluster's secrets bundle, the
// machine configurations (generated with the Talos machinery library, patched, then validated by
// machinery before any machine sees them), the installer image references, and the client side of
// the Talos API (maintenance-mode apply, trust check, bootstrap, kubeconfig) plus the Kubernetes
// /readyz health check. It knows nothing of GitHub, Scaleway or the state store: callers hand it
// bytes and addresses and keep what it returns.
//
// # Talking to a real node
//
//   - Configure tries a trusted (mutual TLS) call first and applies nothing to a node that answers
//     it: a configured node refuses every call without a client certificate. An insecure call
//     that meets a request for a client certificate (which a maintenance-mode node never makes)
//     stops at once with ErrConfigured instead of retrying.
//   - After a Reset the node still answers as configured until its reset sequence reboots it
//     (apid is not among the services the sequence stops): ApplyInsecureAfterReset waits that
//     out, within its deadline, where ApplyInsecure would stop at ErrConfigured.
//   - The disks are read from the block.Disk resources and the block.SystemDisk singleton (COSI),
//     with StorageService.Disks (kept by Talos "for compatibility") only for a node without the
//     resource API. InstallDisk checks the config's install target against them for both contracts:
//     .machine.install.disk, or the 1.14 UnattendedInstallConfig CEL selector evaluated as Talos
//     does (variables disk and system_disk).
//   - Bootstrap retries every answer but InvalidArgument and AlreadyExists (the latter is success)
//     within its deadline: a control plane answers FailedPrecondition until its container runtime
//     runs and its clock is in sync.
//   - The calls go through machinery's generated MachineService and StorageService clients and
//     COSI's state client on one channel per attempt (nodeAPI, api.go), wired as machinery's
//     client package wires them; that package itself is not linked (its Omni/SideroV1 signing
//     libraries weigh 1.55 MB of the release binary). TestNodeAPIAnswersAsMachineryClient holds
//     every call's answer to that client's on the same stand-in node. Go back to machinery's
//     client package, and delete nodeAPI, once that package stops linking the signing code
//     (gopenpgp, go-api-signature) into a binary that never signs: cmd/bot's
//     TestReleaseLinksNoTalosClientPackage, without the client package in its list, says when.
//     Until then nodeAPI stays, held call by call by its differential test, although the
//     release's size goal that asked for it is withdrawn (issue 32).
//   - SnapshotEtcd streams MachineService.EtcdSnapshot to the caller's sink (the state store's encrypted
//     streamed artifact) and checks the stream as etcd's restore will (etcdutl copyAndVerifyDB:
//     size mod 512 = 32, the appended SHA-256 is the database's), returning its size and SHA-256
//     for the caller to verify the stored copy against before deleting anything.
//   - RecoverEtcd follows Talos's recovery rules (the v1.13 disaster-recovery guide, and
//     services/etcd.go and v1alpha1_server.go at v1.13.9; DecideRecover): it reads the etcd
//     service of every control plane first. Running anywhere means an earlier run recovered the
//     cluster (a control plane replaced since joins it by itself), and a recover would start a
//     second etcd cluster: it leaves it alone. Otherwise it waits until the first control
//     plane's service is Preparing — its volumes mounted; before that EtcdRecover answers
//     FailedPrecondition, which the upload also waits out — or Failed: a control plane that
//     found no cluster to join for 30 minutes (constants.EtcdJoinTimeout) fails with an empty
//     data directory, and Bootstrap starts etcd anew from that state. It then uploads the
//     stored snapshot (MachineService.EtcdRecover), checking it on the way and against the
//     figures taken at the snapshot, and only then asks Bootstrap{recover_etcd}: a snapshot
//     that does not verify is never bootstrapped from. The restore's outcome is the etcd
//     service's state, read until Running or Failed; Failed after a Bootstrap that answered
//     AlreadyExists is an earlier restore that left data behind (the node needs its EPHEMERAL
//     reset).
//
// # The runner
//
// The bot's runner must reach the nodes during its run and never after; a GitHub-hosted runner
// comes from a new address at every run. Read against the Talos source at v1.13.9:
//
//   - A live patch of the rule documents would apply without a reboot: apply-config's no-reboot
//     check compares the v1alpha1 document alone (internal/app/machined/pkg/runtime/v1alpha1/
//     v1alpha1_runtime.go, CanApplyImmediate: cfg.RawV1Alpha1()), and NetworkRuleConfig is a
//     document of its own. But only a runner that already reaches the node can patch it: the
//     next run, from another address, would meet a firewall that drops it and no API to reopen
//     it (the worker has no security group). So no runner's address is ever written into a
//     machine configuration.
//   - The control planes' Talos firewall admits the Talos API (50000) and the Kubernetes API
//     (6443) from everyone, and the Scaleway security group gates them: it holds the runner's
//     CIDR for the length of its run only (provision/netpolicy, GroupGated). Both APIs
//     authenticate every caller (mutual TLS with the talosconfig; client certificates or tokens).
//   - The worker's Talos firewall admits its Talos API from the admin CIDRs and the node IPs. The
//     bot reaches it through the first control plane (Route, Through): apid's router forwards a
//     call whose "node" metadata names another node to that node's apid, from its own address,
//     and serves a call without it itself (internal/app/apid/pkg/director/director.go, Director
//     and singleDirector); the forwarded call carries the caller's roles in metadata, trusted
//     from the forwarding apid's os:impersonator certificate (internal/app/apid/pkg/backend/
//     apid.go GetConnection; pkg/grpc/middleware/authz/injector.go). A node in maintenance mode
//     routes nothing (internal/app/machined/pkg/controllers/runtime/api_service_config.go:
//     NodeRoutingDisabled until a config), so the worker's first, insecure apply stays direct:
//     it has no config yet, hence no firewall. Configure gives that apply up as soon as the
//     worker answers through the control plane (a rerun after an apply whose answer was lost).
//   - A parked worker's firewall admits its Talos API from everyone (ParkFirewall): it holds
//     nothing of a cluster, answers mutual TLS under its park CA only, and the up that adopts it
//     runs from an address unknown when it is parked (no control plane can forward to it: it
//     trusts another CA).
//
// # Version contract
//
// The config is generated for the contract of Input.TalosVersion (v1.13.11 by default → the 1.13
// contract) with machinery v1.14.1, which knows the contracts up to 1.14:
//   - 1.12 and 1.13: the v1alpha1 form (machine and cluster sections plus a HostnameConfig
//     document). machinery v1.14.1 emits it byte for byte as v1.13.9 did, which a test of this
//     upgrade checked. The Kubernetes version is explicit, never machinery's default (1.37.0,
//     which Talos 1.13 refuses): PinnedKubernetesVersion (see "Cilium").
//   - 1.14: the multi-document form, whatever machinery's generate emits for the 1.14 contract:
//     Kubernetes settings in Kube* documents (KubeAPIServerConfig, KubeProxyConfig,
//     KubeNodeConfig, KubeletConfig, …) and the install target in an UnattendedInstallConfig
//     document instead of .machine.install. PinnedKubernetesVersion unless
//     Input.KubernetesVersion says otherwise.
//   - later minors fail with ErrUnsupportedTalosVersion, as do minors before 1.12.
//
// An explicit Input.KubernetesVersion is checked against machinery's compatibility table for the
// Talos version (Talos 1.13: 1.31–1.36; 1.14: 1.32–1.37). The /poc up grammar accepts up to
// settings.MaxTalosMinor (v1.14); a test keeps the two in step.
//
// The seed's three validation errors (docs/seed.md, Talos configuration) come from mixing the two forms, and the 1.14 path
// avoids each by construction: no .machine.install next to UnattendedInstallConfig (the install
// disk and image are generate options, so machinery writes the document itself); no v1alpha1
// cluster.network next to a KubeFlannelCNIConfig document (that document is deleted and nothing
// is patched into cluster.network); the install disk is always set. machinery v1.14 no longer
// requires an install target in metal mode, so Validate adds that check itself.
//
// # The values pocbot sets (and why)
//
// Common to every node:
//   - cluster.network.cni.name: none — Cilium is the CNI, installed at bootstrap (below);
//   - cluster.proxy.disabled: true — Cilium replaces kube-proxy;
//   - machine.install.image: the installer of the same Image Factory schematic as the boot image,
//     from the registry of the factory in use (Input.FactoryURL, i.e. POC_IMAGE_FACTORY_URL;
//     factory.talos.dev by default): <host>/scaleway-installer/<id>:<version> for the control
//     planes, <host>/metal-installer/<id>:<version> for the worker, so an upgrade keeps the
//     schematic's extensions;
//   - never machine.features.stableHostname: with the 1.12+ contracts the generated HostnameConfig
//     document already carries the stable hostname, and both together fail validation.
//
// Control planes only (one config shared by all of them):
//   - machine.certSANs and cluster.apiServer.certSANs: the API DNS name (from the cluster endpoint),
//     every control-plane IP and Input.CertSANs;
//   - cluster.allowSchedulingOnControlPlanes: false — the Elastic Metal worker runs the workloads;
//   - cluster.apiServer.extraArgs.service-node-port-range: 80-443 — NodePorts 80 and 443 for the
//     edge gateway on the worker;
//   - cluster.etcd.advertisedSubnets: the control-plane IPs as /32 — etcd peers talk over the
//     addresses the security group opens (2379/2380 from node IPs). cluster.etcd is forbidden on a
//     worker, so it lives in this patch only;
//   - cluster.inlineManifests "cilium": Cilium's chart rendered by the bot (see "Cilium") with
//     CiliumValues: ipam.mode kubernetes, kubeProxyReplacement true, k8sServiceHost localhost,
//     k8sServicePort 7445 (KubePrism), routingMode tunnel, tunnelProtocol vxlan (see "Routing"),
//     encryption wireguard (UDP 51871), hostFirewall and hubble off, nodePort.range 80,443,
//     securityContext.capabilities without SYS_MODULE (Talos forbids module loading from pods),
//     cgroup.autoMount off, cgroup.hostRoot /sys/fs/cgroup, and the agent, operator and envoy
//     images by digest.
//
// # Routing
//
// Cilium runs in tunnel mode (VXLAN) with WireGuard, because native routing cannot cross
// Scaleway's L3 subnets. What Cilium's sources say. The v1.18.1 tag itself could not be read here
// (the cilium/cilium snapshot is over the fetch limit): each file was read in the one copy the
// search index stores, whose line is said with each; a claim about 1.18.1 rests on that:
//   - Documentation/network/concepts/routing.rst (a copy of the 1.17+ line: it documents
//     routing-mode, underlay-protocol and direct-routing-skip-unreachable): encapsulation only
//     needs the nodes to reach each other over IP (UDP 8472 for VXLAN); native routing hands pod
//     traffic to the host's routing table, and auto-direct-node-routes only works "if all nodes
//     share a single L2 network".
//   - pkg/datapath/linux/node.go, createDirectRouteSpec (a copy older than 1.14, still on
//     logrus; the refusal is what routing.rst's L2 requirement describes): a direct route to a
//     node reached through a gateway is refused ("route to destination … contains gateway …,
//     must be directly reachable"). The control planes' public addresses are routed /32s and the
//     Elastic Metal worker sits in its own subnet, each behind a Scaleway gateway: no route to
//     another node's pod CIDR would exist.
//   - bpf/lib/wireguard.h (a copy of the 1.18 line: it reads its settings through CONFIG()),
//     wg_maybe_redirect_to_encrypt: in tunnel mode every overlay packet is
//     redirected to WireGuard before any identity check ("In tunneling mode WG needs to encrypt
//     tunnel traffic"), so a pod's and a host's traffic to a remote pod both leave as VXLAN inside
//     WireGuard (cilium PR #29000, "bpf: Encap with cilium_{vxlan,geneve} before passing to WG":
//     an option in 1.14, the only behaviour since 1.15, "a side effect … host-to-remote-pod
//     traffic is going to be encrypted"). Without tunneling, a source of identity HOST is not
//     encrypted (the HOST_ID check): in native mode a host's traffic to a remote pod (the API
//     server to a webhook, Cilium's health probes) would leave for the gateway with a pod-CIDR
//     destination and be lost, while pods' traffic rides WireGuard.
//
// So, in tunnel mode, traffic to a remote pod leaves as WireGuard (UDP 51871) between node
// addresses, and once decrypted on cilium_wg0 it is VXLAN (UDP 8472) from the peer node's
// address, which Talos's ingress chain judges again (it exempts lo, siderolink and kubespan only:
// nftables_chain_config.go @v1.13.9). The network-policy table (provision/netpolicy) opens both
// between nodes in every node's Talos firewall, and only 51871 in the security group, which
// never meets the decrypted VXLAN. Input.CiliumRouting = RoutingNative
// (provision.Spec.CiliumRouting "native") brings native routing back, for a flat L2 network; on
// Scaleway its up fails the routing readiness check (ready.go).
//
// # Cilium
//
// Cilium 1.18.1, whose documented Kubernetes compatibility is 1.30–1.33 (Documentation/network/
// kubernetes/compatibility.rst, read @v1.18.14: the page says a release branch keeps the
// Kubernetes versions it tests for its whole maintenance, so 1.18.1's are the same); every
// contract therefore pins Kubernetes 1.33.6 (PinnedKubernetesVersion), which Talos 1.12, 1.13 and
// 1.14 all run (machinery's compatibility table). The agent, operator and envoy images by digest
// come from the v1.18.1 release's manifests list.
//
// The install is the Talos guide's "inline manifest" method (docs.siderolabs.com, Kubernetes
// guides, Deploy Cilium CNI: Helm, inline manifest), where the guide's `helm template` is done by
// the bot: it fetches the chart archive pinned by digest (settings cilium-chart, i.e.
// POC_CILIUM_CHART; DefaultCiliumChart says where the digest comes from) into the image bucket
// once (chart.Fetch: nothing that does not match the digest is used or cached), renders it with
// its own renderer (package chart: Helm's SDK would add 36.9 MB to the release binary) and puts
// the manifest in the control planes' config. Why this method and not the cilium CLI in a Job:
//   - nothing is fetched by version at bootstrap: the CLI v0.18.2 embeds charts up to
//     1.17.0-rc.2 and downloads 1.18.1's from helm.cilium.io, unpinned (cilium-cli
//     internal/helm/helm.go), where the rendered manifest names every image by digest
//     (CheckManifestImages refuses anything else, and a test scans every generated config);
//   - it converges: Talos's manifest controller creates what is missing and never updates what
//     exists (manifest_apply.go @v1.13.9), on every control plane whenever etcd is healthy, so a
//     run cut short is finished by the next one, where a retried `cilium install` Job fails with
//     "name still in use";
//   - no CLI image (cilium-cli-ci: Ubuntu and three cloud CLIs) is pulled onto a 20 GB control
//     plane.
//
// The price: Talos never updates an inline manifest's objects (the guide: edit the configs and
// run `talosctl upgrade-k8s`), which a throw-away cluster does not need; and the manifest rides
// in every control plane's config and user data (limited to 1 MiB per key, UserDataLimit, which
// Generate enforces): Cilium 1.18.1's rendering is 52 kB, its control-plane config about 80 kB.
//
// The host firewall is off: Cilium's host firewall without host policies enforces nothing, and
// Talos warns that a CNI host firewall can take precedence over its own; Talos's ingress firewall
// (firewall.go) is the node's gate. Hubble is off, so its port (4244) is not in the table.
//
// # Ready
//
// /readyz answers 200 before any network plugin runs. CheckReady (ready.go) asks the Kubernetes
// API what `cilium status --wait` waits on and more, in the order of ReadyChecks: every node Ready
// (nodes), the Cilium DaemonSet and operator ready (cilium), CoreDNS ready (cluster-dns), the API
// server's host reaching every CoreDNS pod through the pods proxy (routing: host → remote pod),
// and a probe pod on every node reaching every other node's Cilium health endpoint (pod-network:
// pod ↔ pod across nodes, netprobe.go). The probe's pods run the Cilium agent image, pinned by
// digest and already on every node, and are deleted once read. The up waits for all five
// (cluster-ready); /poc status and bot status report the same five (clusterops.Status).
//
// Where 1.14 moved a setting to its own document, the 1.14 config sets it there instead:
//   - CNI none: the generated KubeFlannelCNIConfig document is deleted ($patch: delete); there is
//     no custom-CNI KubeExternalManifestConfig either, so no built-in CNI is deployed;
//   - kube-proxy off: KubeProxyConfig enabled: false. Flannel and kube-proxy are cluster add-ons
//     deployed from the control planes, and their documents are control-plane only: the worker's
//     config carries neither (and no v1alpha1 cluster.network or cluster.proxy);
//   - allowSchedulingOnControlPlanes: false: the generated KubeNodeConfig taints the control planes
//     node-role.kubernetes.io/control-plane:NoSchedule;
//   - API server certSANs: KubeAPIServerConfig certExtraSANs, from the generate options (the same
//     list as machine.certSANs); service-node-port-range: KubeAPIServerConfig extraArgs;
//   - cluster.etcd.advertisedSubnets: still the v1alpha1 cluster.etcd section (1.14 has no etcd
//     document), control-plane config only;
//   - the Cilium install: a KubeInlineManifestConfig document named cilium, same contents;
//   - machine.install.disk/image: the UnattendedInstallConfig document (installer.image, and
//     provisioning.diskSelector.match: disk.dev_path == "<disk>", wipe: false), one per role;
//   - the worker's HostnameConfig patch is the same in both forms.
//
// The 1.14 contract also turns on machinery defaults pocbot leaves as generated: a
// SecurityProfileConfig with workloadIsolation: true, a FilesystemTrimConfig, and the host DNS
// settings in a ResolverConfig document.
//
// Worker only:
//   - a HostnameConfig document with auto: off and hostname: Input.WorkerHostname (edge-01);
//   - machine.install.disk: the disk found in the rescue system.
//
// Validation uses machinery's own validators: "cloud" mode (no install step required) for the
// control planes, which boot from a volume made from the Talos snapshot, and "metal" mode (install
// required: disk or selector) for the worker. A validation error is returned with the validator's
// own words.
package talos
