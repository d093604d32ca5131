package assume

// Row ids: the stand-ins, the doctor's probes and the tests name rows by these.
const (
	QuotaRead         = "quota-read"
	QuotaNames        = "quota-names"
	DNSComment        = "dns-comment"
	EMStock           = "em-stock"
	EMDelivery        = "em-delivery"
	EMPatchDelivering = "em-patch-delivering"
	TagLength         = "tag-length"
	PutPrecondition   = "put-precondition"
	DeleteConditions  = "delete-conditions"
	DeleteMarkers     = "delete-markers"
	PresignScope      = "presign-scope"
	SchematicID       = "schematic-id"
	NodeEgress        = "node-egress"
	TokenFormat       = "token-format"
	VariableWriters   = "variable-writers"
	IAMAppNames       = "iam-app-names"
	CompareBase       = "compare-base"
	UserDataCap       = "user-data-cap"
	JobStart          = "job-start"
)

// The documents the rows cite, by the names the rows use.
const (
	docsContent = "scaleway/docs-content "
	sdk         = "scaleway-sdk-go v1.39.0 "
	fixtures    = "internal/sim/scaleway/testdata/cassettes (SOURCE.md lists them) "
)

// ipProbeCost is one flexible IPv4 for at most an hour: 0.004 €/h (internal/cost's table, the
// example rate of Scaleway's IP billing documentation).
const ipProbeCost int64 = 4_000_000

// Register is every assumption, in the order docs/assumptions.md lists them.
var Register = []Row{
	{
		ID: QuotaRead, System: Scaleway,
		Assumes: "the pre-flight can read the organization's quotas (IAM ListQuota) with the bot's key, to refuse an up that does not fit before anything is created",
		Readings: []Reading{
			{Value: "allowed", Means: "ListQuota answers a key whose application has the organization-scoped OrganizationReadOnly rule (`bot init --iam` and deploy/iam add it)",
				Handled: true, How: "the pre-flight weighs the quotas the API lists"},
			{Value: "refused", Means: "ListQuota answers 403 permissions_denied (a key without that rule, or an IAM that wants more than it)",
				Handled: true, How: "the pre-flight weighs Scaleway's documented defaults, or the `quotas:` of .github/poc.yml, and the reply and the dry run say so; `bot init --iam` adds the rule"},
		},
		Default: "allowed",
		Probe:   "GET /iam/v1alpha1/quota?organization_id=… with the bot's key",
		Leaves:  "nothing (a read)",
		Sources: []string{
			docsContent + "pages/iam/reference-content/permission-sets.mdx (OrganizationReadOnly, scoped by Organization: \"Read access to the Organization's general information (e.g. Organization ID and quotas)\")",
			sdk + "api/iam/v1alpha1 ListQuota; no public recording calls the quota endpoint",
		},
	},
	{
		ID: QuotaNames, System: Scaleway,
		Assumes: "each quota a cluster needs can be found by what it counts (the Instance commercial type, the Elastic Metal offer, IPs, volumes, snapshots, security groups, SSH keys)",
		Readings: []Reading{
			{Value: "snake", Means: "quotas are listed under names that spell the product, like instance_servers_play2_nano",
				Handled: true, How: "matched by the product's words in `name`"},
			{Value: "pretty", Means: "names are opaque; `pretty_name` carries the product (\"PLAY2-NANO\", \"Instances IPs\")",
				Handled: true, How: "matched by the product's words in `pretty_name`"},
			{Value: "absent", Means: "only the Elastic Metal offers' quotas (their quota_name) are listed",
				Handled: true, How: "a quota not found is weighed at Scaleway's documented default (or `quotas:` of .github/poc.yml), and the reply says so"},
		},
		Default: "snake",
		Probe:   "list the organization's quotas and match every quota of a default cluster",
		Leaves:  "nothing (a read)",
		Sources: []string{
			sdk + "api/iam/v1alpha1 Quotum (name, pretty_name, unit, limits)",
			sdk + "scw/errors_test.go: the one Instance-family quota name in public material, compute_snapshots_type_b_ssd_available",
			sdk + "api/baremetal/v1 Offer.QuotaName (e.g. EM_A116X_SSD): the only documented names",
			docsContent + "pages/organizations-and-projects/additional-content/organization-quotas.mdx (pretty names and defaults only)",
		},
	},
	{
		ID: DNSComment, System: Scaleway,
		Assumes: "a DNS record the bot wrote is recognised as the cluster's, also after a crash that lost its id",
		Readings: []Reading{
			{Value: "echoed", Means: "the PATCH answer and the listing carry the `comment` the bot wrote",
				Handled: true, How: "a record carrying the cluster's comment is the cluster's"},
			{Value: "dropped", Means: "every record answers `comment: null`, as all the public recordings do",
				Handled: true, How: "with no comment in the answer, a record is the cluster's when its name, type and data are those the bot wrote (the cluster's names, A, the cluster's reserved IPs); a down removes those and leaves every other record"},
		},
		Default: "dropped",
		Probe:   "with a DNS zone (--dns-zone): add a TXT record _pocbot-probe-ID carrying the probe's comment, read the answer and the listing, delete it",
		Leaves:  "nothing; a killed probe's _pocbot-probe-* record is deleted by the next doctor --live",
		Sources: []string{
			sdk + "api/domain/v2beta1 Record.Comment (*string)",
			fixtures + "domain__domain-record-*: every record `comment: null`; no recording writes a comment",
		},
	},
	{
		ID: EMStock, System: Scaleway,
		Assumes: "an offer's `stock` says whether an order of the worker will be delivered",
		Readings: []Reading{
			{Value: "available", Means: "the offer is in stock", Handled: true, How: "ordered"},
			{Value: "low", Means: "listed low (EM-A116X-SSD in fr-par-1 in every recording): an order may or may not be delivered",
				Handled: true, How: "ordered, and the dry run and the reply name the risk; a scheduled pause keeps the worker parked while the offer is not available instead of giving it back"},
			{Value: "empty", Means: "out of stock: an order is refused (409 out_of_stock)",
				Handled: true, How: "the offer is skipped for the next one of worker_offers, else the up is refused before anything is created"},
		},
		Default: "available",
		Probe:   "list the zone's hourly Elastic Metal offers and read the stock of every worker offer",
		Leaves:  "nothing (a read)",
		Sources: []string{
			sdk + "api/baremetal/v1 OfferStock (empty, low, available); OutOfStockError",
			fixtures + "(EM-A116X-SSD low in fr-par-1); what low promises: source silent",
		},
	},
	{
		ID: EMDelivery, System: Scaleway,
		Assumes: "how long an Elastic Metal order takes to be delivered (the ETA; no deadline rests on it)",
		Readings: []Reading{
			{Value: "fast", Means: "ready within a minute (recent in-stock orders: 0–15 s)", Handled: true, How: "the ETA learns it from this project's ups"},
			{Value: "recorded", Means: "about 5 minutes (287 s, a 2025 B111X-SATA order)", Handled: true, How: "the latency profile's figure until this project's ups teach another"},
			{Value: "slow", Means: "half an hour or more", Handled: true, How: "the delivery has no deadline; the ETA learns it"},
		},
		Default: "recorded",
		Probe:   "read the delivery times this project's ups recorded per offer (the ETA book); nothing is ordered (an order is billed at least an hour)",
		Leaves:  "nothing (a read of the state bucket)",
		Sources: []string{
			"scaleway/scaleway-cli internal/namespaces/baremetal/v1/testdata test-reboot-server-errors-…-while-not-delivered (287 s)",
			"no EM-A116X-SSD order was ever recorded: source silent",
		},
	},
	{
		ID: EMPatchDelivering, System: Scaleway,
		Assumes: "the bot never has to change an Elastic Metal server while it is delivered",
		Readings: []Reading{
			{Value: "accepted", Means: "PATCH of a delivering server is applied", Handled: true, How: "not needed: the bot names and tags the server in its order"},
			{Value: "refused", Means: "PATCH of a delivering server answers 400 \"Server is not delivered\", as reboot, start and stop do",
				Handled: true, How: "the bot names and tags the server in its order; parking and adoption retag ready servers only"},
		},
		Default: "refused",
		Probe:   "first contact, nothing ordered to probe it (an order is billed at least an hour): while an up's order is delivering, the driver sends one PATCH that changes nothing (the server's own name) and the state bucket keeps whether it was refused; the doctor reports what this project's ups met, unknown until one orders a worker",
		Leaves:  "nothing (the up's PATCH changes nothing; the observation is one shared document of the state bucket)",
		Sources: []string{
			"scaleway/scaleway-cli baremetal/v1 test-{reboot,start,stop}-server-errors-…-while-not-delivered (400 \"Server is not delivered\")",
			"PATCH while delivering: source silent",
		},
	},
	{
		ID: TagLength, System: Scaleway,
		Assumes: "a tag of up to 70 characters is accepted on every resource the bot tags (the bot's tags are at most 70)",
		Readings: []Reading{
			{Value: "70", Means: "70 characters accepted, 71 refused (400 naming the tag)", Handled: true, How: "the bot's tags fit"},
			{Value: "longer", Means: "longer tags accepted too", Handled: true, How: "the bot's tags fit"},
			{Value: "shorter", Means: "a 70-character tag is refused (the stand-in accepts 50)",
				Handled: false, How: "report it (docs/install.md, \"First contact\"): the bot's cluster tags would be refused mid-up"},
		},
		Default: "70",
		Probe:   "reserve a flexible IP tagged as the probe's with a 70-character tag, add a 71-character one, delete the IP",
		Cost:    ipProbeCost,
		Leaves:  "nothing; a killed probe's IP carries pocbot-cluster=probe-ID: the next doctor --live, or the reaper's orphan pass after its grace, deletes it",
		Sources: []string{
			docsContent + "identity-and-access-management/iam/how-to/create-application (tags: 1–70 characters); other products: source silent",
		},
	},
	{
		ID: IAMAppNames, System: Scaleway,
		Assumes: "nothing rests on an IAM application's name being unique in the organization: init finds its applications by the id its record (POCBOT_INIT) names, else by the project's name (pocbot-<project>) with policies and keys naming that project only, never by a plain name across the organization",
		Readings: []Reading{
			{Value: "duplicates", Means: "two applications of one organization may share a name",
				Handled: true, How: "init skips an application of its name that serves another project and makes its own, recording its id; every later run finds it by that id"},
			{Value: "unique", Means: "a second application of a name the organization holds is refused (the stand-in answers 409)",
				Handled: true, How: "init makes nothing else and names the application that holds the name (its id and the projects it serves): rename or delete it, then rerun"},
		},
		Default: "duplicates",
		Probe:   "list the organization's applications named pocbot-<project> and pocbot-presign-<project> (with IAMReadOnly): two of one name settle duplicates; fewer settle nothing, and nothing is created (the bot's key may not write IAM)",
		Leaves:  "nothing (a read)",
		Sources: []string{
			sdk + "api/iam/v1alpha1 CreateApplicationRequest (name: no uniqueness stated), ListApplicationsRequest.Name (a filter, not a key)",
			"scaleway/terraform-provider-scaleway docs/resources/iam_application.md (name optional): source silent",
		},
	},
	{
		ID: PutPrecondition, System: ObjectStore,
		Assumes: "a conditional PutObject (If-None-Match: *, If-Match) that loses is refused, so two runs never overwrite each other's state",
		Readings: []Reading{
			{Value: "412", Means: "412 Precondition Failed (no error body)", Handled: true, How: "the store goes by the status"},
			{Value: "409", Means: "409 Conflict", Handled: true, How: "retried a few times, then counted as lost"},
			{Value: "ignored", Means: "the condition is ignored and the object written",
				Handled: false, How: "use a bucket that honours conditional writes for POC_STATE_URL (Scaleway Object Storage documents them)"},
		},
		Default: "412",
		Probe:   "write a probe object (doctor/), create it again with If-None-Match: *, read the status, delete every version of it",
		Leaves:  "nothing; the probe's versions are deleted with it",
		Sources: []string{
			docsContent + "pages/object-storage/api-cli/using-conditional-writes.mdx (the write \"fails\"; no status code)",
		},
	},
	{
		ID: DeleteConditions, System: ObjectStore,
		Assumes: "no correctness property rests on a conditional DeleteObject",
		Readings: []Reading{
			{Value: "ignored", Means: "a conditional header on DeleteObject is ignored and the object deleted", Handled: true, How: "the bot deletes only keys nobody races for"},
			{Value: "rejected", Means: "501 NotImplemented", Handled: true, How: "the bot sends no conditional delete"},
			{Value: "honoured", Means: "412 when the condition fails (AWS S3)", Handled: true, How: "the bot sends no conditional delete"},
		},
		Default: "ignored",
		Probe:   "write a probe object (doctor/), DeleteObject it with a failing If-Match, see what happened, delete every version of it",
		Leaves:  "nothing; the probe's versions are deleted with it",
		Sources: []string{
			docsContent + "pages/object-storage/api-cli/object-operations.mdx (DeleteObject lists no conditional header)",
			docsContent + "pages/object-storage/api-cli/using-conditional-writes.mdx (PutObject, CopyObject, CompleteMultipartUpload only)",
		},
	},
	{
		ID: DeleteMarkers, System: ObjectStore,
		Assumes: "the versioned state bucket does not grow: nothing older than the lifecycle bound (30 days) is left, noncurrent versions or delete markers",
		Readings: []Reading{
			{Value: "expired", Means: "the lifecycle rule's ExpiredObjectDeleteMarker is accepted and applied, as on AWS S3",
				Handled: true, How: "the rule `bot init` writes expires delete markers"},
			{Value: "kept", Means: "the element is accepted but delete markers stay",
				Handled: true, How: "the bot deletes every version of what it removes (no delete marker is left) and noncurrent versions expire by the documented rule"},
			{Value: "refused", Means: "PutBucketLifecycleConfiguration with the element answers 400 MalformedXML",
				Handled: true, How: "`bot init` writes the rule without it and says so; the bot deletes every version of what it removes"},
		},
		Default: "expired",
		Probe:   "read the state bucket's versioning and lifecycle rules and list its delete markers: one older than the bound (and a day) means they are kept; none settles nothing within a run",
		Leaves:  "nothing (reads)",
		Sources: []string{
			docsContent + "pages/object-storage/api-cli/lifecycle-rules-api.mdx (lists Expiration, NoncurrentVersionExpiration, Transition, AbortIncompleteMultipartUpload; not ExpiredObjectDeleteMarker)",
		},
	},
	{
		ID: PresignScope, System: ObjectStore,
		Assumes: "a link signed by the read-only presigning key fetches public/ objects, and the bucket policy keeps it to public/",
		Readings: []Reading{
			{Value: "narrowed", Means: "IAM (ObjectStorageObjectsRead) and the bucket policy both apply: public/ answers, the rest 403",
				Handled: true, How: "the kubeconfig links work"},
			{Value: "wide", Means: "the bucket policy does not narrow the key: every object answers",
				Handled: true, How: "the links work; every object outside public/ is encrypted, but add the bucket policy of docs/install.md"},
			{Value: "refused", Means: "a link to public/ answers 403",
				Handled: false, How: "give the presigning key ObjectStorageObjectsRead on the project and allow public/ in the bucket policy (docs/install.md)"},
		},
		Default: "narrowed",
		Probe:   "write public/doctor/presign-ID and doctor/presign-ID, fetch a link to each signed by the presigning key, delete both",
		Leaves:  "nothing; a killed probe's objects are deleted by the next doctor --live",
		Sources: []string{
			docsContent + "pages/object-storage/api-cli/combining-iam-and-object-storage.mdx (IAM first, then optionally the bucket policy)",
			docsContent + "pages/object-storage/api-cli/bucket-policy.mdx",
		},
	},
	{
		ID: SchematicID, System: ImageFactory,
		Assumes: "the Image Factory names a schematic by the sha256 of its canonical YAML, as the bot computes it before asking",
		Readings: []Reading{
			{Value: "same", Means: "POST /schematics answers the id the bot computed", Handled: true, How: "images are named before they are made"},
			{Value: "different", Means: "the factory answers another id (a newer canonical form)",
				Handled: false, How: "report it: the bot refuses to stream an image whose id it cannot predict"},
		},
		Default: "same",
		Probe:   "POST the default cluster's schematic to the factory and compare ids",
		Leaves:  "nothing (a schematic is content-addressed and free)",
		Sources: []string{
			"siderolabs/image-factory pkg/schematic/schematic.go at v1.5.0-4-g26b95ca (Marshal, ID); the live factory's version is not pinned",
		},
	},
	{
		ID: NodeEgress, System: Registries,
		Assumes: "the nodes reach the Image Factory's installer images and the registries (ghcr.io, registry.k8s.io, quay.io) over their public addresses at bootstrap",
		Readings: []Reading{
			{Value: "open", Means: "the registries answer (a registry's /v2/ answers 200 or 401)", Handled: true, How: "nothing to do"},
			{Value: "blocked", Means: "a registry does not answer (the world plays it for the runner's probe and for the nodes' pull of the Cilium agent's image)",
				Handled: false, How: "let the nodes and the runner reach it (a firewall, a proxy): the nodes never become ready, and an up fails at its readiness check naming the pod whose image cannot be pulled and this row; `/poc down` removes what it made"},
		},
		Default: "open",
		Probe:   "from the runner, GET /v2/ of every registry (POC_REGISTRY_PROBE_URLS: the factory's, ghcr.io, registry.k8s.io, quay.io; the nodes' own path shows in an up's readiness checks)",
		Leaves:  "nothing (reads)",
		Sources: []string{
			"internal/provision/talos cilium.go (quay.io images pinned by digest); Talos machinery v1.14.1 defaults (ghcr.io/siderolabs, registry.k8s.io)",
			"Scaleway's egress filtering for Instances and Elastic Metal: source silent",
		},
	},
	{
		ID: TokenFormat, System: GitHub,
		Assumes: "an installation token is never assumed to have a length or shape: logs and comments redact both forms",
		Readings: []Reading{
			{Value: "stateless", Means: "ghs_<app id>_<JWT>, about 520 characters", Handled: true, How: "redacted (internal/commands redact.go)"},
			{Value: "classic", Means: "ghs_ and 36 alphanumerics", Handled: true, How: "redacted"},
		},
		Default: "stateless",
		Probe:   "with the App's key and --repo: mint an installation token for the repository and read its form",
		Leaves:  "an unused installation token, kept nowhere, which expires within the hour",
		Sources: []string{
			"github/rest-api-description apps/create-installation-access-token (the stateless ghs_APPID_JWT format)",
			"GitHub changelog 2026-10-02, stateless installation tokens rolled out",
		},
	},
	{
		ID: VariableWriters, System: GitHub,
		Assumes: "init's record of what it wrote, the repository variable POCBOT_INIT, is believed because it carries a MAC under a key derived from the App's private key, never because of who may write repository variables",
		Readings: []Reading{
			{Value: "writers", Means: "a collaborator with write may write repository variables through the API",
				Handled: true, How: "a record whose MAC does not verify is ignored as if there were none: init writes its own, uninstall deletes no secret it cannot prove init wrote, and both say so"},
			{Value: "admins", Means: "only repository administrators may write them (the settings page's rule)",
				Handled: true, How: "the same: the record is verified, not trusted"},
		},
		Default: "writers",
		Probe:   "with the App's key and --repo: list the repository's collaborators and their roles (a read with the bot's token): none with write who is not an administrator makes the readings the same here (settled: admins); otherwise which one holds needs such a collaborator's token, and the doctor names who the writers reading lets write; both are handled",
		Leaves:  "nothing (a read)",
		Sources: []string{
			"docs.github.com rest/actions/variables (\"collaborator access to a repository to create, update, or read variables\"): which role, silent",
			"the repository settings page needs admin; integrations/terraform-provider-github docs actions_variable: write",
		},
	},
	{
		ID: CompareBase, System: GitHub,
		Assumes: "GET /repos/{repo}/compare/{base}...{head} lists the files a merge of head would bring: head against the merge base (init reads it to check that the branch pocbot-init holds only what it writes)",
		Readings: []Reading{
			{Value: "merge-base", Means: "files and commits are head's since the merge base (three dots, as the web compare)",
				Handled: true, How: "init takes its own branch back on a rerun and refuses one holding anything else, naming it"},
			{Value: "base-tip", Means: "files are head against base's current tip: what base gained since the branch was made shows as the branch's",
				Handled: true, How: "never ships what it did not write: once base moved, init refuses its own older branch and names the files; delete the branch (git push origin --delete pocbot-init) and rerun"},
		},
		Default: "merge-base",
		Probe:   "with the App's key and --repo, reads only: on the default branch's own history, compare its head with an older commit that differs from it (older...head lists files under both readings), then head...older, where the merge base is older itself: no file under merge-base, head's changes under base-tip",
		Leaves:  "nothing (three reads)",
		Sources: []string{
			"github/rest-api-description repos/compare-commits (merge_base_commit, ahead_by, behind_by; \"base...head\"): which tree files are diffed against, silent",
			"docs.github.com pull-requests: three-dot comparison is the web's default",
		},
	},
	{
		ID: UserDataCap, System: Scaleway,
		Assumes: "an Instance's user data takes a control plane's Talos config in one key: the config weighs about 80 kB (Cilium's manifest in it), and the config generation refuses one over 1 MiB (UserDataLimit) before anything is created",
		Readings: []Reading{
			{Value: "fits", Means: "a key takes the control plane's config (the stand-in takes up to 1 MiB per key)",
				Handled: true, How: "the config travels as the cloud-init user data the node reads at boot"},
			{Value: "too-small", Means: "a key takes less than the control plane's config: SetServerUserData answers 400 (the stand-in plays a 64 KiB cap)",
				Handled: false, How: "report it (docs/install.md, \"First contact\"): the up stops at the first control plane's power-on, naming the refused user data, before any node boots; `/poc down` removes what it made"},
		},
		Default: "fits",
		Probe:   "first contact, nothing made to probe it (a server is billed): each up records the size of the user data it set and whether Scaleway took it, in the state bucket; the doctor reports the largest taken and any refusal, unknown until the first up",
		Leaves:  "nothing (the observation is one shared document of the state bucket)",
		Sources: []string{
			sdk + "api/instance/v1 SetServerUserDataRequest (Content io.Reader): no size stated",
			"no Scaleway source read for this project gives a size: 1 MiB is the stand-in's figure, not a source's",
			"internal/provision/talos cilium.go: the control plane's config with Cilium 1.18.1 weighs about 80 kB",
		},
	},
	{
		ID: JobStart, System: GitHub,
		Assumes: "GitHub starts the bot's job about 30 s after the comment (docs/pool.md's comment → kubeconfig figure adds it); nothing waits on it",
		Readings: []Reading{
			{Value: "quick", Means: "the job's first step runs within 30 s of the comment", Handled: true, How: "docs/pool.md's figure holds"},
			{Value: "queued", Means: "30 s to 2 minutes (community measurements of hosted runners: a P90 queue up to about a minute)",
				Handled: true, How: "nothing waits on it: the reply comes that much later; the doctor reports this project's median"},
			{Value: "slow", Means: "more than 2 minutes (busy runners, self-hosted pools)",
				Handled: true, How: "nothing waits on it; a pool's claim answers that much later: consider larger runners (runs-on) for the bot's workflow"},
		},
		Default: "quick",
		Probe:   "first contact: each run of a comment measures the comment's created_at to the bot's start and the state bucket keeps the last ten; the doctor reports their median, unknown until the first comment",
		Leaves:  "nothing (the observation is one shared document of the state bucket)",
		Sources: []string{
			"docs.github.com actions: no job start latency is documented",
			"devactivity.com, \"Tackling GitHub ubuntu-slim runner queue times\" (2026): a P90 queue of up to about a minute",
		},
	},
}
