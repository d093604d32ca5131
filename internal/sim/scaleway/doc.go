// Package scaleway is an in-process emulator of the parts of the Scaleway API
// that pocbot uses: Instance (reserved IPs, security groups and their rules,
// servers, actions, user data, server types), Block Storage (volumes,
// snapshots, import from Object Storage, volume types), Elastic Metal (offers
// with stock, servers without install, rescue / normal reboots), IAM SSH keys
// and Domain records.
//
// It exists because Scaleway cannot be reached from the test machines, so
// every claim about provisioning rests on it: it answers with
// scaleway-sdk-go's own types, the real status codes, wrappers, pagination
// and error bodies (shapes taken from the recordings in
// testdata/cassettes), and it enforces the real API's rules
// (a running server is not deleted, an attached IP or an in-use volume is not
// deleted, quotas, exactly one volume source, the QCOW2 magic of an imported
// object).
//
// Time. Every asynchronous transition (server poweron, snapshot import,
// Elastic Metal delivery, …) is an event scheduled at now+latency×TimeFactor
// on an internal queue. Events are applied in time order whenever the
// emulator is touched (every request, Inventory, UserData) and, once Start
// runs, by a ticker, so hooks fire even when nobody polls. Given a Clock and
// a request sequence, the observed states are deterministic.
//
// Faults. Options.Faults injects, from a seeded generator, 5xx and 429
// answers. By default a fault is decided BEFORE the request takes effect, so
// retrying it is always safe. AfterEffectRate makes a mutating request take
// effect and then answer 500 anyway: the client cannot know whether its
// create happened, which is what forces the bot to find-or-create by tag
// instead of blindly retrying a POST.
//
// Loopback addresses. Reserved IPs and Elastic Metal servers get unique
// 127.x.y.z addresses (never 127.0.0.1) so that the Talos and rescue
// stand-ins can listen on exactly the address the bot read from the API.
//
// # Contract: the Elastic Metal rescue reboot
//
//	| behaviour | source |
//	|---|---|
//	| POST …/servers/{id}/reboot with boot_type "rescue" reboots into rescue; normal (or unset) into the disk | Elastic Metal API, server actions (https://www.scaleway.com/en/developers/api/elastic-metal/server-actions); scaleway-sdk-go v1.39.0 api/baremetal/v1 RebootServer doc |
//	| the rescue image installs the keys of ssh_key_ids and no other (a server delivered without install has no keys of its own); no id, no key | same page and RebootServerRequest.SSHKeyIDs ("Additional SSH public key IDs to configure on rescue image") |
//	| an ssh_key_ids id that is not a key of the server's project is refused, 400 naming ssh_key_ids | source silent: stricter reading chosen |
//	| once ready in rescue the server reports rescue_server {user "rescue", password} | ServerRescueServer in scaleway-sdk-go v1.39.0; user from docs-content pages/elastic-metal/how-to/use-rescue-mode.mdx |
//	| rescue_server may come late (Options.RescueServerDelay) or never (Options.HideRescueServer) | no recording shows what it holds or when (issue 10): tests try both |
//
// # Contract: the security group in front of an Instance (InboundAllowed)
//
//	| behaviour | source |
//	|---|---|
//	| a new inbound connection to an Instance's public IP is judged by the Instance's security group; the world refuses what it does not accept | Instance API, security groups (https://www.scaleway.com/en/developers/api/instance/#path-security-groups); scaleway-sdk-go v1.39.0 api/instance/v1 SecurityGroup (inbound_default_policy, stateful) |
//	| inbound rules are read in position order, the first whose protocol (ANY matches all), destination port range (none: every port) and ip_range match decides (accept or drop); none matching, inbound_default_policy decides | scaleway-sdk-go v1.39.0 SecurityGroupRule (position, protocol, dest_port_from/to, ip_range, action); first-match order: source silent, stricter reading chosen |
//	| only new connections are judged (the group is stateful: replies and established flows pass) | SecurityGroup.Stateful in scaleway-sdk-go v1.39.0 ("Defines whether the security group is stateful") |
//	| an Elastic Metal server (or a detached IP) has no security group: everything reaches it | Elastic Metal API has no security group (SPEC §2; https://www.scaleway.com/en/developers/api/elastic-metal/) |
//	| the rules apply from the PUT on (the syncing → available delay is not modelled for traffic) | source silent: the rules are read as stored |
package scaleway
