// Package talos owns everything pocbot says to Talos Linux: the cluster's secrets bundle, the
// machine configurations (generated with the Talos machinery library, patched, then validated by
// machinery before any machine sees them), the installer image references, and the client side of
// the Talos API (maintenance-mode apply, trust check, bootstrap, kubeconfig) plus the Kubernetes
// /readyz health check. It knows nothing of GitHub, Scaleway or the state store: callers hand it
// bytes and addresses and keep what it returns.
//
// # Version contract
//
// The config is generated for the contract of Input.TalosVersion (v1.13.11 by default → the 1.13
// contract). machinery v1.13.9 has no 1.14 contract and no 1.14 document types (no
// UnattendedInstallConfig, no KubeFlannelCNIConfig), so it cannot emit the 1.14 multi-document
// form: asking for 1.14 or later fails with ErrUnsupportedTalosVersion instead of producing a
// config that a 1.14 node would half-understand.
//
// # The values pocbot sets (and why)
//
// Common to every node:
//   - cluster.network.cni.name: none — Cilium is the CNI, installed at bootstrap (below);
//   - cluster.proxy.disabled: true — Cilium replaces kube-proxy;
//   - machine.install.image: the installer of the same Image Factory schematic as the boot image
//     (factory.talos.dev/scaleway-installer/<id>:<version> for the control planes,
//     factory.talos.dev/metal-installer/<id>:<version> for the worker), so an upgrade keeps the
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
//   - cluster.inlineManifests "cilium-install": a ServiceAccount bound to cluster-admin and a Job
//     (host network, tolerating the control-plane taint, KubePrism on localhost:7445) running the
//     cilium CLI, the "job" method of the Talos Cilium guide, with these Helm values:
//     ipam.mode=kubernetes, kubeProxyReplacement=true, k8sServiceHost=localhost,
//     k8sServicePort=7445, routingMode=native, ipv4NativeRoutingCIDR=<pod CIDR>,
//     autoDirectNodeRoutes=true, encryption.enabled=true, encryption.type=wireguard (Cilium's
//     WireGuard listens on UDP 51871), hostFirewall.enabled=true, nodePort.range=80\,443,
//     securityContext.capabilities without SYS_MODULE (Talos forbids module loading from pods),
//     cgroup.autoMount.enabled=false, cgroup.hostRoot=/sys/fs/cgroup.
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
