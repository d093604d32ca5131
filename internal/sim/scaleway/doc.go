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
// and error bodies, and it enforces the real API's rules. Each rule, and
// where it comes from, is in the contract table below.
//
// Structure. Every operation is one net/http ServeMux method-and-pattern
// route (routes.go), on the paths of scaleway-sdk-go v1.39.0's
// api/*/v*/*_sdk.go; anything else is the gateway's bare 404. The zoned
// resources live in one generic table per kind (table.go), which lists,
// filters (zone, tags all present, name substring, project, per-endpoint
// filters) and pages them the way their API pages.
//
// Time. Every asynchronous transition (server poweron, snapshot import,
// Elastic Metal delivery, …) is an event scheduled at now+latency×TimeFactor
// on an internal queue. Events are applied in time order whenever the
// emulator is touched (every request, Inventory, UserData) and, once Start
// runs, by a ticker, so hooks fire even when nobody polls. Given a Clock and
// a request sequence, the observed states are deterministic. The latencies
// (DefaultLatency) are the recorded ones; each field of Latency names its
// recording.
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
// # Contract
//
// Sources: "fixtures" are the Terraform provider's recordings copied in
// testdata/cassettes (SOURCE.md there lists them; the section numbers below
// are its "Facts observed"); "TF" is
// github.com/scaleway/terraform-provider-scaleway at b2d45ed4,
// internal/services/<svc>/testdata/<name>.cassette.yaml; "CLI" is
// github.com/scaleway/scaleway-cli at c2d470d8,
// internal/namespaces/<ns>/testdata/<name>.cassette.yaml; "SDK" is
// scaleway-sdk-go v1.39.0. "Source silent" marks a rule no recording or
// document shows: the stricter reading was chosen. Where the bot relies on
// such a rule, the row names the assumptions register's row instead
// ("register: id", internal/assume, docs/assumptions.md): the emulator
// plays each of that row's readings (Options.Readings, `bot sim --reading`).
//
//	| Behaviour                                                                  | Source                                                              |
//	|----------------------------------------------------------------------------|---------------------------------------------------------------------|
//	| X-Auth-Token required, else 401 denied_authentication                      | SDK scw/errors.go (DeniedAuthenticationError); body: source silent  |
//	| unknown path or method: 404 {"message":"Not Found"}                        | fixtures §6 (the Elastic Metal 404 body)                             |
//	| 404 bodies: Instance {type,message,resource,resource_id}; Block/IAM same   | fixtures §6                                                          |
//	|   keys; Elastic Metal {"message":"Not Found"}                              |                                                                      |
//	| Instance lists: per_page (default 50), X-Total-Count, Link relative to the | fixtures §7; CLI instance/v1 test-server-type-list-on-fr-par1       |
//	|   zone ("</products/servers?page=2&per_page=50&>; rel=\"next\",…")         |                                                                      |
//	| Block, Elastic Metal, IAM, Domain lists: page_size, total_count in body    | fixtures §2, §7                                                      |
//	| products/servers: the 135 recorded types of fr-par-1, 3 pages, PLAY2-NANO   | fixtures instance__data-source-server-type-basic (2026-07-30); CLI  |
//	|   on page 2 (a caller that does not page misses it)                        |   test-server-type-list-on-fr-par1 has 107 (2026-07-01)             |
//	| POST servers: 201 {"server":…} stopped, allowed_actions poweron, backup;   | fixtures §4                                                          |
//	|   commercial type must be listed                                           |   (listed type: source silent)                                       |
//	| actions: 202 fake task; poweron starting→running, poweroff, stop_in_place, | fixtures §5                                                          |
//	|   terminate stopping(terminating)→404                                      |                                                                      |
//	| DELETE of a server not stopped: 400                                        | source silent (no recording deletes a running server, SOURCE.md)    |
//	| terminate: IPs detached and kept, volumes available when the server goes   | fixtures instance__server-* (volume's next GET)                     |
//	| DELETE of a stopped server: its SBS volume in_use, then available 5 s later | CLI instance/v1 test-create-server-simple-default and 9 others       |
//	| an in_use or attached volume is not deleted: 412 resource_still_in_use     | SDK PreconditionFailedError; source silent on the real body         |
//	| user_data: list is JSON; a key is text/plain; a missing key 404, empty body | CLI instance/v1 test-user-data-get-get-an-nonexistent-key           |
//	| a user_data key over 1 MiB: 400 invalid_arguments                          | register: user-data-cap                                             |
//	| Instance volumes/{id} of an SBS volume: 404 instance_volume                 | fixtures caveat 4                                                    |
//	| IPs: 201 detached; PATCH server → pending → attached; null → detached      | fixtures §9                                                          |
//	| an attached IP is not deleted; a group used by a server is not deleted     | source silent                                                        |
//	| security groups: 201; PUT rules replaces the editable ones; positions from | fixtures §9, TF instance security-group-basic                        |
//	|   1; state syncing → available                                             |                                                                      |
//	| 6 non-editable SMTP drop rules only with enable_default_security (default  | TF instance security-group-enable-default-security (0 rules when    |
//	|   true); none when false                                                   |   false, 6 after PATCH true)                                         |
//	| Block volume: 200 creating → available; sbs_5k / sbs_15k; perf_iops 5000   | fixtures §8                                                          |
//	|   or 15000; PATCH updating; no shrink; exactly one source                  |   (shrink, one source: source silent)                                |
//	| Block snapshot import: 200 creating → available; QCOW2 magic required      | fixtures §8; the magic check: source silent                          |
//	| Block DELETE 204, again 404; operations in a transient state: 409          | fixtures §6; 409 transient_state: SDK TransientStateError           |
//	| Elastic Metal offers: Money prices, subscription_period, monthly_offer_id, | fixtures §2                                                          |
//	|   stock; out of stock: 409 out_of_stock                                    |   (409 out_of_stock: SDK OutOfStockError)                            |
//	| the stock an offer lists, and what low promises                            | register: em-stock (available 10 orders, low 2, empty 0)             |
//	| Elastic Metal create: delivering → ready after 4 min 47 s                  | CLI baremetal/v1 test-reboot-server-errors-…-while-not-delivered;   |
//	|                                                                            |   register: em-delivery (fast 15 s, recorded, slow 30 min)          |
//	| PATCH of a server while it is delivering                                   | register: em-patch-delivering (refused: 400 "Server is not          |
//	|                                                                            |   delivered", as the actions; accepted)                             |
//	| Elastic Metal reboot, start, stop before delivery: 400                     | CLI baremetal/v1 test-{reboot,start,stop}-server-errors-…-while-    |
//	|   {"message":"Server is not delivered"}                                    |   not-delivered                                                      |
//	| Elastic Metal reboot: stopping → ready in 15 s; stop, start 15 s           | TF baremetal action-basic                                            |
//	| Elastic Metal user_data on an offer without cloud-init: 503                | fixtures §3                                                          |
//	| Elastic Metal DELETE: 200 deleting, then 404                               | fixtures §1                                                          |
//	| IAM SSH key create: 200, comment stripped, MD5 fingerprint                 | fixtures §10                                                         |
//	| the same public key registers twice in a project                           | TF iam list-iamssh-keys-basic (two live keys, one fingerprint)      |
//	| IAM applications, policies, rules, API keys (iam_apps.go): create 200 with  | SDK iam/v1alpha1 Application, Policy, Rule, APIKey and their Create  |
//	|   the SDK's shapes; lists with total_count; GET/DELETE by id, 404 otherwise |   / List requests (application_ids filter, policy_id for rules)      |
//	| an API key's secret_key is in the create answer only; its secret is then    | SDK APIKey.SecretKey ("only returned on creation"); docs iam how-to  |
//	|   accepted in X-Auth-Token like the emulator's own key                      |   create-api-keys (the secret key is shown once)                    |
//	| a policy's principal must be an existing application (users, groups, no     | SDK CreatePolicyRequest (one-of principal); only applications are   |
//	|   principal: not modelled); each rule names permission sets and exactly one |   modelled; RuleSpecs one-of project_ids / organization_id; unknown |
//	|   of project_ids and organization_id; an unknown permission set: 400       |   set names: source silent, the stricter reading (docs iam reference |
//	|                                                                            |   permission-sets lists the names)                                  |
//	| every call with an IAM API key needs a permission set of its product (read  | docs-content pages/iam/reference-content/permission-sets.mdx        |
//	|   or write) in a rule covering it: product sets by project (or a rule on    |   (validated 2026-03-20): sets "Scoped by Project", "Scoped by      |
//	|   the organization), OrganizationReadOnly (ListQuota) and the IAM sets by    |   Organization", OrganizationReadOnly "… (e.g. Organization ID and  |
//	|   organization only; else 403 permissions_denied (iam_enforce.go); the     |   quotas)"; the 403 body: SDK scw.PermissionsDeniedError; which     |
//	|   owner's key and a user's key may do everything                           |   call needs which set beyond the names: source silent, this reading|
//	| a rule scoping an organization set to projects: 400                        | permission-sets.mdx (scopes); the refusal: source silent, stricter  |
//	| a call is judged in the project it names (query or body), else the key's   | stand-in's shortcut: one project per world                          |
//	|   preferred project                                                        |                                                                      |
//	| ListQuota with a key without OrganizationReadOnly on the organization      | register: quota-read                                                 |
//	| a second IAM application of a name its organization holds: made, or 409    | register: iam-app-names                                              |
//	| DNS: PATCH records with add / set / delete changes; TXT data quoted        | fixtures §10                                                         |
//	| DNS record comment echoed in the PATCH answer and the listing, or dropped  | register: dns-comment (SDK domain Record.Comment; every recording    |
//	|   (comment: null)                                                          |   answers null)                                                      |
//	| DNS PATCH answer: the changed records only with return_all_records false;  | SDK domain UpdateDNSZoneRecordsRequest.ReturnAllRecords (*bool,     |
//	|   every record of the zone when it is true or absent                       |   "whether or not to return all the records"); absent: source       |
//	|                                                                            |   silent, the stricter reading                                       |
//	| a tag longer than the limit on any resource: 400 invalid_arguments naming  | register: tag-length (70 by default; longer: 128; shorter: 50)       |
//	|   tags.N                                                                   |                                                                      |
//	| latencies                                                                  | each Latency field names its recording                              |
//	| quotas: 403 quotas_exceeded                                                | SDK QuotasExceededError; limits are test options                     |
//	| organization quotas (OrgQuotas; DocumentedQuotas): PLAY2-NANO 5, Instance  | docs-content pages/organizations-and-projects/additional-content/   |
//	|   IPs 20, volumes 200, snapshots and security groups 99 999, SSH keys 50,   |   organization-quotas.mdx, "payment method validated" column        |
//	|   Elastic Metal offers 1 (A115X, B112X), I215E 0 (identity needed); every  |   (IdentityValidatedQuotas: the second column)                      |
//	|   create past one: 403 quotas_exceeded naming the quota                    |                                                                      |
//	| the documented defaults (DocumentedQuotas) are preflight.Documented, the    | EM-A116X-SSD is not on the page: one, as preflight reads it          |
//	|   one table; EM-A116X-SSD: 1                                               |                                                                      |
//	| a live Elastic Metal server counts against its offer's quota, parked or not| the page counts servers per offer; source silent on states: stricter |
//	| quota names: the offer's quota_name for Elastic Metal; the others as       | SDK api/baremetal/v1 Offer.QuotaName; the others: register:          |
//	|   register row quota-names plays them (snake, pretty, absent)              |   quota-names                                                        |
//	| GET /iam/v1alpha1/quota (organization_id required, quotum_names filter),   | SDK api/iam/v1alpha1 ListQuota, GetQuotum (Quotum.limits per         |
//	|   GET /iam/v1alpha1/quota/{name} (404 when not set); limits global         |   locality); organization_id required: source silent, stricter      |
//
// Not confirmed by any recording (kept, labelled): a snapshot import of
// "≈ 1.5 min" (the recordings show 5 s and 212 s), an Instance reboot (30 s
// estimate), and how long the rescue image's SSH takes after a rescue reboot.
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
//	| an Elastic Metal server (or a detached IP) has no security group: everything reaches it | Elastic Metal API has no security group (https://www.scaleway.com/en/developers/api/elastic-metal/; docs/seed.md, The cluster) |
//	| the rules apply from the PUT on (the syncing → available delay is not modelled for traffic) | source silent: the rules are read as stored |
package scaleway
