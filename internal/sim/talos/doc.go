// Package talos is the stand-in for Talos Linux nodes: machinery's MachineService and
// StorageService, and the COSI resource API (cosi.resource.State), over real gRPC and TLS on a
// loopback address, plus the Kubernetes API server's /readyz endpoint once the cluster is
// bootstrapped.
//
// A node boots for NodeOptions.BootDelay (its API does not answer meanwhile), then reads its user
// data once, as Talos's platform code does: a cloud node that finds a config comes up configured,
// one that finds none sits in maintenance mode. In maintenance it serves its disks (block.Disk
// resources, the block.SystemDisk of the disk it booted from, and StorageService.Disks kept for
// compatibility) and Version, and accepts ApplyConfiguration only for a config that machinery
// validates for the node's mode (and, on metal, whose install disk exists). Once configured it
// speaks mutual TLS only: its certificate is signed by the Talos OS CA of the applied config, and
// a client must present a certificate from that CA with the os:admin role. Bootstrap is refused
// until the node is ready (container runtime, then time sync), works once per cluster (again →
// AlreadyExists); Kubeconfig returns an admin kubeconfig signed by the cluster's Kubernetes CA,
// and every configured control plane of a bootstrapped cluster serves /readyz over TLS from that
// CA.
//
// Workers hold no CA key (as in Talos, where trustd on a control plane signs their certificates).
// A configured worker joins over the network, from its own address: its kubelet reaches a control
// plane's Kubernetes API (6443), then it sends a CSR with the machine token to that control
// plane's trustd (SecurityService on 50001, served by every configured control plane). Until that
// works — no bootstrapped cluster yet, or a security group or firewall refusing — the worker has no
// certificate and its TLS handshakes fail.
//
// # Contract
//
// Every behaviour the stand-in enforces, and where the real node does it. Paths are in
// github.com/siderolabs/talos; "@v1.13.9 / @v1.14.0-rc.1" are the tags read (the newest tags of the
// mirror; v1.14.1's internal/ tree was not available, its pkg/machinery module is the one in
// go.mod). Timings are not in the source: the world (internal/sim/world) sets estimates.
//
//	behaviour                                                   | source @ tag
//	------------------------------------------------------------|--------------------------------------------------------------
//	API silent while booting (handshake fails → Unavailable)    | internal/app/machined/pkg/system/services/apid.go @v1.14.0-rc.1 (apid is a service started by the boot sequence)
//	user data read once, at boot; 404/empty → no config         | internal/app/machined/pkg/runtime/v1alpha1/platform/scaleway/scaleway.go (Configuration) @v1.13.9, @v1.14.0-rc.1
//	no config from the platform → maintenance mode              | internal/app/machined/pkg/controllers/config/acquire.go (loadFromPlatform, ErrNoConfigSource) @v1.13.9, @v1.14.0-rc.1
//	maintenance: server-only TLS, no client certificate asked   | internal/app/machined/pkg/controllers/secrets/api.go (reconcileMaintenance) and internal/app/apid/pkg/provider/provider.go (ServerConfig) @v1.14.0-rc.1
//	configured: mutual TLS, client cert from the OS CA required | internal/app/apid/pkg/provider/provider.go (tls.Mutual) @v1.14.0-rc.1; internal/app/machined/pkg/controllers/runtime/api_service_config.go (SkipVerifyingClientCert false once configured)
//	roles from the client certificate's O= (os:admin)           | pkg/grpc/middleware/authz/injector.go (Enabled mode) @v1.14.0-rc.1
//	a client with os:impersonator (another apid) gets the roles of the talos-role metadata | pkg/grpc/middleware/authz/injector.go (Enabled mode: "trust gRPC metadata from clients with impersonator role") @v1.13.9
//	a call whose "node" metadata names another node is forwarded to that node's apid from this node's own address (the target's network and firewall judge that address), with this node's os:impersonator client certificate from the OS CA, the caller's roles as talos-role metadata, "proxyfrom" set and "node"/"nodes" removed; without "node", or with "proxyfrom", served here (forward.go) | internal/app/apid/pkg/director/director.go (Director, singleDirector) and internal/app/apid/pkg/backend/apid.go (GetConnection) @v1.13.9; internal/app/machined/pkg/controllers/secrets/api.go (apid client certificate: Organization os:impersonator) @v1.13.9
//	"node" with more than one value → InvalidArgument "node metadata must be single-valued" | director.go (Director) @v1.13.9
//	a node in maintenance mode forwards nothing: the call is served there | internal/app/machined/pkg/controllers/runtime/api_service_config.go (NodeRoutingDisabled true until a config) @v1.13.9
//	not modelled: one-2-many ("nodes" naming other nodes) and forwarding from a worker → Unimplemented; the answer is passed back as the target gave it (apid's AppendInfo node metadata left out); "node" naming the node itself is served here (the real apid dials its own address) | simplifications: the bot forwards single calls through a control plane only
//	Faults (harnesses only): a call answered Unavailable before  | internal/app/apid/pkg/backend @v1.14.0-rc.1 (apid proxies to machined over a local socket; a backend that does not answer reaches the client as its gRPC status); grpc-go codes.Unavailable ("transient"); which calls may fail: source silent, any call, never after effect
//	its handler runs, or late                                   |
//	Bootstrap, Kubeconfig need os:admin                         | internal/app/machined/pkg/system/services/machined.go (rules) @v1.14.0-rc.1
//	apply: bad YAML or validation error → InvalidArgument       | internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go (ApplyConfiguration) @v1.14.0-rc.1
//	apply validated for the platform mode (cloud/metal)         | pkg/machinery/config/validation (machinery v1.14.1, ValidateAtRuntime in v1alpha1_server.go)
//	metal: install disk must exist (path, or 1.14 CEL selector) | pkg/machinery/cel/celenv/celenv.go (DiskLocator: disk, system_disk) and internal/app/machined/pkg/controllers/block/internal/volumes/locate.go @v1.14.0-rc.1
//	a configured node takes a new config only over mTLS from an os:admin (insecure apply on a configured node fails at the handshake); the node reboots into it, machine type change included | apid tls.Mutual (above); internal/app/machined/pkg/controllers/secrets/api.go ("machine type changed" restarts the API secrets) @v1.14.0-rc.1
//	Reset needs os:admin over mTLS; a maintenance node does not serve it | machined.go rules @v1.14.0-rc.1 (Reset: admin); maintenance: reconcileMaintenance above
//	Reset: SYSTEM_DISK with UserDisksToWipe, USER_DISKS with SystemPartitionsToWipe → error; an unknown partition label → "failed to get volume status with label" | v1alpha1_server.go (Reset) @v1.14.0-rc.1 l.632-720
//	Reset replies at once, the sequence runs after: wipe, then reboot (Reboot) or power off | v1alpha1_server.go (Reset: go Controller.Run(SequenceReset)) and v1alpha1_sequencer.go (Reset: ResetSystemDiskSpec, then Reboot or Shutdown) @v1.14.0-rc.1
//	until the reset's reboot the API answers as configured (mutual TLS): the sequence stops pods, cri and trustd, not apid; its duration (Latency.ResetWipe) is an estimate | v1alpha1_sequencer.go (Reset, stopAllPhaselist) and v1alpha1_sequencer_tasks.go (StopServicesEphemeral: StopWithRevDepenencies "cri", "trustd") @v1.14.0-rc.1; duration: source silent
//	STATE holds the config: wiped → back in maintenance (metal), user data read again (cloud); EPHEMERAL holds etcd and pods | pkg/machinery/constants/constants.go (StatePartitionLabel, EphemeralPartitionLabel, ConfigFilename "saved config in STATE") @v1.14.0-rc.1; acquire.go (above)
//	apply, reset reboots, the kube-apiserver's readiness after Bootstrap, an etcd snapshot's start and a recovery's restore take time (NodeOptions.Latency) | source silent on durations: estimates (latency.go)
//	Bootstrap before the container runtime runs → FailedPrecondition "bootstrap is not available yet" | v1alpha1_server.go (Bootstrap, IsBootstrapAllowed) @v1.13.9 l.443, @v1.14.0-rc.1 l.414; internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_runtime.go (IsBootstrapAllowed: cri running and healthy)
//	Bootstrap on a worker → Unimplemented "bootstrap is only available on control plane nodes" | internal/app/internal/machinehelper/machinehelper.go (CheckControlplane) @v1.14.0-rc.1
//	Bootstrap before NTP sync → FailedPrecondition "time is not in sync yet" | v1alpha1_server.go (Bootstrap) @v1.13.9 l.454, @v1.14.0-rc.1 l.432
//	Bootstrap twice → AlreadyExists "etcd data directory is not empty" | v1alpha1_server.go (Bootstrap) @v1.13.9 l.458, @v1.14.0-rc.1 l.436
//	Kubeconfig on a worker → Unimplemented                      | v1alpha1_server.go (Kubeconfig → CheckControlplane) @v1.14.0-rc.1 l.1258
//	Bootstrap/Kubeconfig in maintenance → Unimplemented         | simplification: a real node refuses them earlier (authz gives a client without certificate the reader role only)
//	COSI resource API served, read-only                         | v1alpha1_server.go (RegisterStateServer with resources.AccessPolicy) @v1.13.9 l.151-158, @v1.14.0-rc.1 l.152-159
//	write → PermissionDenied "write access is not allowed"; unknown type → PermissionDenied "resource type %q is not supported"; unknown namespace likewise | internal/app/resources/access.go @v1.13.9, @v1.14.0-rc.1
//	block.Disk and block.SystemDisk readable without certificate in maintenance (not sensitive; COSI Get/List allow the reader role) | pkg/machinery/resources/block/disk.go, system_disk.go (machinery v1.14.1); machined.go rules @v1.14.0-rc.1
//	StorageService.Disks kept "for compatibility"; system_disk flag | internal/app/storaged/server.go @v1.14.0-rc.1
//	NoResourceAPI: COSI calls → Unimplemented (service absent)  | gRPC's answer for an unregistered service; option for clients' compatibility path
//	worker certificate signed by a control plane (trustd), machine token checked | internal/app/trustd/internal/reg/reg.go and internal/app/trustd/main.go (token credentials) @v1.14.0-rc.1
//	admin kubeconfig: system:masters client cert from the Kubernetes CA | internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go (Kubeconfig) @v1.14.0-rc.1
//
// # Contract: etcd and the Kubernetes objects (etcd.go, etcdapi.go, k8sapi.go)
//
// Etcd (go.etcd.io/etcd at the versions Talos's go.mod pins: v3.6.12 for v1.13.9, v3.7.1 for
// v1.14.0-rc.1) is modelled as a keyspace per cluster; the Kubernetes objects live in it under the
// apiserver's keys, so they survive exactly what etcd survives.
//
//	| behaviour | source |
//	|---|---|
//	| the keyspace exists from Bootstrap (empty, or restored) until the last member holding it goes (deleted, reset, reconfigured): etcd's data is on each control plane's EPHEMERAL | pkg/machinery/constants/constants.go (EtcdDataPath /var/lib/etcd; EphemeralPartitionLabel) @v1.14.0-rc.1 |
//	| EtcdSnapshot: os:admin (operator, etcd:backup not modelled); worker → Unimplemented "etcd snapshot is only available on control plane nodes"; no etcd → "failed reading etcd snapshot: …" (code Unknown) | internal/app/machined/pkg/system/services/machined.go (rules) and v1alpha1_server.go (EtcdSnapshot) @v1.13.9 l.1956, @v1.14.0-rc.1 l.1965; internal/app/internal/machinehelper/machinehelper.go (CheckControlplane) |
//	| the snapshot stream is the database followed by its SHA-256 (etcd sends the hash as the last message); the database is a multiple of 4096 bytes, so size mod 512 = 32 marks the hash | server/etcdserver/api/v3rpc/maintenance.go (Snapshot) and etcdutl/snapshot/v3_snapshot.go (hasChecksum) @etcd v3.6.12; bbolt page size. The body inside is the stand-in's own (JSON), not bbolt |
//	| EtcdRecover: os:admin; /var/lib not there yet (NodeOptions.VarLibDelay after the node was configured) → FailedPrecondition "etcd service is not ready for recovery yet", checked before the control-plane check; control planes only; the upload replaces /var/lib/etcd.snapshot (O_TRUNC), an upload cut short leaves none | v1alpha1_server.go (EtcdRecover: os.Stat(filepath.Dir(EtcdRecoverySnapshotPath)), then CheckControlplane) @v1.13.9 l.1995; machined.go rules. The delay: source silent (estimate, sim/world TalosVarLib), at most the container runtime's: containerd keeps its state under /var/lib |
//	| Bootstrap{recover_etcd} answers as soon as etcd is started in bootstrap mode; the restore runs in the etcd service, so its failure is the service's (ServiceList: etcd Failed, the error as message), never Bootstrap's error | internal/app/machined/pkg/system/services/etcd.go (BootstrapEtcd l.701, argsForControlPlane → recoverFromSnapshot l.589) @v1.14.0-rc.1 |
//	| restore: Status first (a file that is not a database → "error verifying snapshot", nothing written); then the hash: missing → "snapshot missing hash but --skip-hash-check=false", different → "expected sha256 …", unless recover_skip_hash_check | etcd.go (recoverFromSnapshot: manager.Status, then Restore with SkipHashCheck) @v1.14.0-rc.1; etcdutl snapshot/v3_snapshot.go (copyAndVerifyDB) @etcd v3.6.12 |
//	| a hash failure leaves the data directory not empty (etcdutl copied the database before comparing), so the next Bootstrap → AlreadyExists; a Status failure leaves it empty | etcdutl copyAndVerifyDB (writes member/snap/db, then checks) @v3.6.12; v1alpha1_server.go (Bootstrap: "etcd data directory is not empty") |
//	| the snapshot is removed once etcd was restored from it | etcd.go (recoverFromSnapshot: os.Remove(EtcdRecoverySnapshotPath)) @v1.14.0-rc.1 |
//	| ServiceList lists the etcd service only; each control plane has its own (etcdsvc.go) | machine.proto ServiceList (machinery v1.14.1); the other services are not modelled |
//	| a control plane's etcd service: Waiting until the container runtime runs, the time is synced and /var/lib is mounted; then Preparing ("Running pre state") while its pre-step looks for a running cluster to join | internal/app/machined/pkg/system/service_runner.go (Run: waitFor the conditions and volumes, then StatePreparing "Running pre state", PreFunc) and services/etcd.go (Condition, DependsOn cri, Volumes /var/lib and the etcd data) @v1.13.9 |
//	| Preparing with another control plane running etcd → a member of that cluster after Latency.EtcdJoin (estimate) | services/etcd.go (argsForControlPlane → buildInitialCluster: MemberAddAsLearner, retried every 3 s) @v1.13.9 |
//	| no cluster to join for EtcdJoinTimeout (constants.EtcdJoinTimeout, 30 min) → Failed "Failed to run pre stage: failed to build initial etcd cluster: …", data directory still empty (the text after the wrapping is the stand-in's) | services/etcd.go (buildInitialCluster: retry.Constant(constants.EtcdJoinTimeout)); service_runner.go ("failed to run pre stage: %w"); system.go (Start: Failed with the error, first letter upper-cased) @v1.13.9 |
//	| the boot gives up at BootTimeout (constants.BootTimeout, 70 min) and the node reboots: the service starts again at Waiting. The reboot's API outage is not modelled | v1alpha1_sequencer_tasks.go (StartAllServices: WithTimeout(BootTimeout)) and internal/app/machined/main.go (handle: reboot after a failed sequence) @v1.13.9 |
//	| Bootstrap, whatever the service's state (Preparing, Failed): refused with AlreadyExists only when this node's data directory is not empty; it starts etcd in bootstrap mode on this node alone, so beside a cluster that runs on other control planes it starts a second one (Node.EtcdClusters counts them) | v1alpha1_server.go (Bootstrap) @v1.13.9 l.458; services/etcd.go (BootstrapEtcd: Stop, "Bootstrap requested", a new Etcd{Bootstrap: true}) @v1.13.9 |
//	| a member's kube-apiserver serves its own member's keyspace; a control plane whose member does not run serves the cluster's first-started one (simplification: the real apiserver, on 127.0.0.1:2379, fails); EtcdSnapshot reads the node's own member only | internal/app/machined/pkg/controllers/k8s/control_plane.go (EtcdServers 127.0.0.1:2379) @v1.13.9; EtcdSnapshot: etcd.NewLocalClient |
//	| Kubernetes REST: /api, /apis, /api/v1 discovery; namespaces get/list/create; configmaps and secrets get/list/create/update/delete under /api/v1/namespaces/{ns}/…; JSON objects; errors as metav1.Status with reason and code (404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid, 400 BadRequest) | https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/config-map-v1/ and …/secret-v1/; https://kubernetes.io/docs/reference/using-api/api-concepts/ |
//	| names: RFC 1123 subdomains; the namespace must exist (built-ins default, kube-system, kube-public, kube-node-lease); body namespace or name different from the URL's → 400; update with a stale resourceVersion → 409; update of a missing object → 404 (no create on update) | k8s.io/apimachinery validation (IsDNS1123Subdomain); NamespaceLifecycle admission; apiserver generic registry (AllowCreateOnUpdate false for configmaps, secrets) |
//	| Secret data must be base64; stringData is folded into data and never returned; type defaults to Opaque | https://kubernetes.io/docs/reference/kubernetes-api/config-and-storage-resources/secret-v1/ |
//	| every path needs the kubeconfig's client certificate (as /readyz) | the apiserver's x509 authentication; the stand-in has no anonymous access: source silent on a POC's flags, the stricter reading |
//	| objects are stored as JSON (the apiserver stores protobuf) | simplification: only the stand-in reads its keyspace |
//
// # Contract: network policy (firewall.go, trustd.go)
//
//	| behaviour | source |
//	|---|---|
//	| every listener (50000, 50001, 6443, 10250) admits a new connection only if NodeOptions.Network (the world's security group) and then the node's ingress firewall accept it; refused → reset at accept | https://docs.siderolabs.com/talos/v1.13/networking/ingress-firewall; reset instead of a silent drop: simplification for fast tests |
//	| no config, or default accept without rules → no filtering | internal/app/machined/pkg/controllers/network/nftables_chain_config.go (Run: no chain) @v1.13.9 |
//	| block: accept when a rule matches protocol, destination port range and a source subnet not in its except; accept traffic from the pod/service subnets to the pod/service subnets (both ends matched: a pod to its node's own address needs a rule); drop the rest | nftables_chain_config.go (buildIngressChain, "allow Kubernetes pod/service traffic") @v1.13.9 |
//	| accept: drop a connection to a rule's ports from a source outside the rule's subnets | nftables_chain_config.go (buildIngressChain, inverted source match) @v1.13.9 |
//	| lo, siderolink, kubespan always accepted | not modelled: loopback stands for the public network here |
//	| worker trusted only after its kubelet reached the Kubernetes API (endpoints of the control planes read from Kubernetes) | internal/app/machined/pkg/controllers/k8s/endpoint.go (watchEndpointsOnWorker waits for the kubelet kubeconfig) and controllers/secrets/api.go (worker waits for endpoints) @v1.13.9 |
//	| a worker configured by an apply joins only once the apply's reboot is over (its kubelet and its CSR come from the booted node); not trusted yet, it tries again every NodeOptions.JoinRetry | v1alpha1_server.go (ApplyConfiguration answers, then the node reboots into the config) @v1.14.0-rc.1; the interval: source silent (Talos backs off up to a minute), the world keeps it under a modeled second because the profile counts no retry |
//	| trustd: gRPC+TLS on 50001 with the OS-CA certificate; "token" metadata must be the machine token; the CSR is signed for server auth only, Organization removed | internal/app/trustd/main.go, internal/app/trustd/internal/reg/reg.go, pkg/grpc/gen/remote.go @v1.13.9 |
//	| kubelet serves TLS on 10250 (self-signed serving certificate) | machinery constants.KubeletPort; kubelet's default without serverTLSBootstrap |
//
// # Contract: cluster network (network.go)
//
//	| behaviour | source |
//	|---|---|
//	| a control plane's Kubernetes API serves nodes, the cilium DaemonSet, the cilium-operator and coredns Deployments, CiliumNodes, kube-system pods by label, pod logs, the pods proxy, and the create and delete of network probe pods | Kubernetes API (core/v1 nodes, pods, pods/log, pods/proxy; apps/v1); cilium.io/v2 CiliumNode (spec.health.ipv4) |
//	| a Cilium agent pod's container status: running once ready, waiting ContainerCreating before; on a node that cannot pull the agent's image (NodeOptions.ImagePullBlocked), waiting ImagePullBackOff "Back-off pulling image …" and never ready | core/v1 ContainerStatus (state.waiting reason, message); the kubelet's ErrImagePull / ImagePullBackOff reasons (kubernetes pkg/kubelet/images/types.go); register: node-egress |
//	| each control plane runs the manifest controller once its etcd member runs (kube-apiserver up): the objects of the config's inline manifests, namespaces first, then CRDs, then the rest in order; an object already in the keyspace is skipped, never updated; a missing one is created; a failure stops the run (NodeOptions.ManifestFault, harnesses) and the controller runs again later (after 50 ms here), so runs cut short converge | internal/app/machined/pkg/controllers/k8s/manifest_apply.go @v1.13.9 (Run: waits for etcd healthy; apply: sort namespaces, CRDs; inventory or Get → skip; Apply; connection errors stop the run) |
//	| the CNI is installed when the keyspace holds the DaemonSet kube-system/cilium and the ConfigMap kube-system/cilium-config; its routing mode, auto direct routes and WireGuard are that ConfigMap's routing-mode, auto-direct-node-routes and enable-wireguard; the agents start when the DaemonSet was created | Cilium's agent options as the chart writes them into cilium-config (the bot renders the chart; the tests and the world render the project's own chart, sim/cnichart, with Cilium's value names) |
//	| without the CNI every node is NotReady "cni plugin not initialized"; with it, a node is Ready NodeOptions.Latency.CNIReady after it registered (control plane: its API up; worker: trusted) or after the CNI was installed, whichever is later | kubelet's NetworkPluginNotReady condition; the delay: source silent, estimate |
//	| native routing with auto direct node routes: every agent logs a refused route to each node not on its segment ("contains gateway …, must be directly reachable") | cilium pkg/datapath/linux/node.go (createDirectRouteSpec), read in a copy older than 1.14 (provision/talos doc.go, "Routing") |
//	| tunnel mode with WireGuard: a host's or a pod's flow to a remote pod is VXLAN inside WireGuard: the destination's network and Talos firewall must admit UDP 51871 from the source node's address, and its Talos firewall the decrypted VXLAN, UDP 8472 from that address | cilium bpf/lib/wireguard.h (wg_maybe_redirect_to_encrypt: overlay → WireGuard before the HOST_ID check), copy of the 1.18 line; cilium PR #29000 (the default since 1.15); talos nftables_chain_config.go @v1.13.9 (only lo, siderolink, kubespan exempt) |
//	| tunnel mode without encryption: VXLAN UDP 8472 from the source node's address, judged by the destination's network and firewall | cilium Documentation/network/concepts/routing.rst (Encapsulation), copy of the 1.17+ line |
//	| native routing: a pod's flow to a remote pod rides WireGuard (UDP 51871, no route needed); a host's is not encrypted and needs auto direct routes on one segment | wireguard.h (the HOST_ID check outside tunnel mode); routing.rst (Native-Routing: "if all nodes share a single L2 network") |
//	| one direction judged per flow: replies are established traffic | talos nftables_chain_config.go @v1.13.9 (ct state established accepted first); the group is created stateful (SecurityGroup.Stateful in scaleway-sdk-go v1.39.0, sim/scaleway's contract) |
//	| CoreDNS's replicas run on the worker; the pods proxy to one answers only when its node is Ready and the host path from the serving control plane works, else 503 "error trying to reach service" | where the scheduler puts them: source silent, the stricter reading (the only untainted node); the 503 text: kube-apiserver's proxy error |
//	| each node's Cilium health endpoint is an address of its pod CIDR (CiliumNode spec.health.ipv4) answering HTTP on 4240 once its agent is ready | cilium pkg/health/probe/responder (GET /hello → 200); the address inside the pod CIDR: cilium IPAM; which address: the stand-in's |
//	| a probe pod (one /bin/bash container, spec.nodeName) is Pending until its node is Ready, Running for NodeOptions.Latency.NetProbe, then Succeeded when every "address:port" argument answered (a health endpoint of a Ready node whose pod → pod path works), else Failed; its log has "ok T" / "fail T WHY" per target; other pods are refused 422 "not modeled" | the bot's probe script (provision/talos netprobe.go) run by kubelet; the delay: source silent, estimate; refusing other pods: the stand-in's scope |
//	| probe pods live in the stand-in's memory, not in etcd (they do not survive an etcd restore) | simplification: only the bot creates them, and it deletes them once read |
//	| node segments: NodeOptions.Subnet and Gateway; zero = the address's own /32 | the world sets them (sim/world contract) |
package talos
