package scaleway

// PermissionSet is an IAM permission set the bot's API key needs, and why. Organization is true
// for a set scoped by organization (docs-content pages/iam/reference-content/permission-sets.mdx,
// "Scoped by Organization"): it is granted by a rule naming the organization, never a project.
type PermissionSet struct {
	Name         string
	For          string
	Organization bool
}

// PermissionSets are what the driver's calls need, one set per API (deploy/iam/scw.sh and
// pocbot.tf grant exactly these, `bot init --iam` too; `bot doctor` checks a key against them).
var PermissionSets = []PermissionSet{
	{Name: "InstancesFullAccess", For: "control-plane servers, volumes, IPs, security groups, user data"},
	{Name: "BlockStorageFullAccess", For: "the Talos image snapshot and the control planes' volumes"},
	{Name: "ElasticMetalFullAccess", For: "the worker: order, rescue, reinstall, delete"},
	{Name: "SSHKeysFullAccess", For: "the per-cluster IAM SSH keys the rescue system trusts"},
	{Name: "DomainsDNSFullAccess", For: "the optional --dns-zone records"},
	{Name: "ObjectStorageFullAccess", For: "the state and image buckets"},
	// IAM ListQuota needs it: "Read access to the Organization's general information (e.g.
	// Organization ID and quotas)". Without it the pre-flight weighs the documented defaults.
	{Name: "OrganizationReadOnly", For: "the organization's quotas, read by the pre-flight before anything is created", Organization: true},
}

// PermissionSetNames lists the names of the sets scoped by project.
func PermissionSetNames() []string { return setNames(false) }

// OrganizationPermissionSetNames lists the names of the sets scoped by organization.
func OrganizationPermissionSetNames() []string { return setNames(true) }

func setNames(org bool) []string {
	var out []string
	for _, p := range PermissionSets {
		if p.Organization == org {
			out = append(out, p.Name)
		}
	}
	return out
}
