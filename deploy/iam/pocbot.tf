# pocbot's Scaleway identities, least privilege, for OpenTofu or Terraform with the
# scaleway/scaleway provider (resources scaleway_iam_application, scaleway_iam_policy,
# scaleway_iam_api_key). Permission set names: Scaleway's "Permission sets" reference
# (https://www.scaleway.com/en/docs/iam/reference-content/permission-sets/): the product sets scoped
# by project, and OrganizationReadOnly scoped by organization (quotas are the organization's: the
# pre-flight reads them with IAM ListQuota before anything is created; without it, it weighs
# Scaleway's documented defaults or quotas: of .github/poc.yml).
#
#   tofu init && tofu apply -var project_id=<the POC project's id> -var organization_id=<its organization's id>
#   tofu output -raw bot_secret_key     # → secret SCW_SECRET_KEY (once; keep it nowhere else)
#
# The state of this configuration holds the secret keys: keep it in an encrypted backend, or create
# the keys with the scw commands of docs/install.md instead and drop the two api_key resources.

terraform {
  required_providers {
    scaleway = {
      source = "scaleway/scaleway"
    }
  }
}

variable "project_id" {
  description = "The Scaleway project that holds the POC clusters, the state bucket and the image bucket."
  type        = string
}

variable "organization_id" {
  description = "The organization of that project: its quotas are what the pre-flight reads."
  type        = string
}

# The bot: creates and deletes clusters in one project, nothing else.
resource "scaleway_iam_application" "pocbot" {
  name        = "pocbot"
  description = "pocbot: throw-away Talos clusters from GitHub comments"
}

resource "scaleway_iam_policy" "pocbot" {
  name           = "pocbot"
  description    = "What pocbot's runs need, in the POC project only"
  application_id = scaleway_iam_application.pocbot.id
  rule {
    project_ids = [var.project_id]
    permission_set_names = [
      "InstancesFullAccess",     # control planes, flexible IPs, security groups, snapshots, images
      "BlockStorageFullAccess",  # control-plane volumes, the image snapshot
      "ElasticMetalFullAccess",  # the worker, its rescue boot, its flexible IP
      "SSHKeysFullAccess",       # the per-cluster rescue key (project-scoped SSH keys)
      "DomainsDNSFullAccess",    # records when --dns-zone is used; drop it if you never use DNS
      "ObjectStorageFullAccess", # the state bucket and the image bucket
    ]
  }
}

# The organization's quotas: OrganizationReadOnly is scoped by organization, never a project.
resource "scaleway_iam_policy" "pocbot_organization" {
  name           = "pocbot-organization"
  description    = "The organization's quotas, read by pocbot's pre-flight"
  application_id = scaleway_iam_application.pocbot.id
  rule {
    organization_id      = var.organization_id
    permission_set_names = ["OrganizationReadOnly"]
  }
}

resource "scaleway_iam_api_key" "pocbot" {
  application_id = scaleway_iam_application.pocbot.id
  description    = "pocbot GitHub Actions (SCW_ACCESS_KEY / SCW_SECRET_KEY)"
  # Object Storage has no project in its requests: a key acts on the buckets of its preferred project.
  default_project_id = var.project_id
}

# The presigner: signs the short-lived kubeconfig links posted in comments. Its access key id shows
# in those links, so it can only read objects (a bucket policy narrows it to public/, see
# docs/install.md).
resource "scaleway_iam_application" "pocbot_presign" {
  name        = "pocbot-presign"
  description = "pocbot: signs the kubeconfig links (read-only)"
}

resource "scaleway_iam_policy" "pocbot_presign" {
  name           = "pocbot-presign"
  description    = "Read objects of the POC project's buckets"
  application_id = scaleway_iam_application.pocbot_presign.id
  rule {
    project_ids          = [var.project_id]
    permission_set_names = ["ObjectStorageObjectsRead"]
  }
}

resource "scaleway_iam_api_key" "pocbot_presign" {
  application_id     = scaleway_iam_application.pocbot_presign.id
  description        = "pocbot presigned links (POC_PRESIGN_ACCESS_KEY / POC_PRESIGN_SECRET_KEY)"
  default_project_id = var.project_id
}

output "bot_access_key" {
  value = scaleway_iam_api_key.pocbot.access_key
}

output "bot_secret_key" {
  value     = scaleway_iam_api_key.pocbot.secret_key
  sensitive = true
}

output "presign_access_key" {
  value = scaleway_iam_api_key.pocbot_presign.access_key
}

output "presign_secret_key" {
  value     = scaleway_iam_api_key.pocbot_presign.secret_key
  sensitive = true
}
