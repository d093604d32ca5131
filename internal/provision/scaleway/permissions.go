package scaleway

// PermissionSet is an IAM permission set the bot's API key needs on the project, and why.
type PermissionSet struct {
	Name string
	For  string
}

// PermissionSets are what the driver's calls need, one set per API (deploy/iam/scw.sh and
// pocbot.tf grant exactly these; `bot doctor` checks a key against them).
var PermissionSets = []PermissionSet{
	{"InstancesFullAccess", "control-plane servers, volumes, IPs, security groups, user data"},
	{"BlockStorageFullAccess", "the Talos image snapshot and the control planes' volumes"},
	{"ElasticMetalFullAccess", "the worker: order, rescue, reinstall, delete"},
	{"SSHKeysFullAccess", "the per-cluster IAM SSH keys the rescue system trusts"},
	{"DomainsDNSFullAccess", "the optional --dns-zone records"},
	{"ObjectStorageFullAccess", "the state and image buckets"},
}

// PermissionSetNames lists PermissionSets' names.
func PermissionSetNames() []string {
	out := make([]string, len(PermissionSets))
	for i, p := range PermissionSets {
		out[i] = p.Name
	}
	return out
}
