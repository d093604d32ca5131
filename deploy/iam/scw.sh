#!/usr/bin/env bash
# pocbot's Scaleway identities with the scw CLI (the same as deploy/iam/pocbot.tf): an application
# with least-privilege rights on one project, its API key (preferred project = that project, which
# Object Storage uses), and a read-only application for presigned links. Permission set names:
# https://www.scaleway.com/en/docs/iam/reference-content/permission-sets/
#
#   PROJECT_ID=<the POC project's id> ORGANIZATION_ID=<its organization's id> deploy/iam/scw.sh
#
# Quotas are the organization's: reading them (IAM ListQuota, the pre-flight that refuses an up
# before anything is created) needs OrganizationReadOnly, a set scoped by organization, so it
# comes in a policy of its own (pocbot-organization) whose rule names the organization. Without
# it the pre-flight falls back to Scaleway's documented defaults (or quotas: in .github/poc.yml).
#
# The secret keys are printed once, as JSON: put them in the GitHub environment's secrets at once.
set -euo pipefail
: "${PROJECT_ID:?set PROJECT_ID to the Scaleway project that holds the POC clusters}"
: "${ORGANIZATION_ID:?set ORGANIZATION_ID to the organization of that project (scw account project get)}"

app=$(scw iam application create name=pocbot description="pocbot: throw-away Talos clusters from GitHub comments" -o json | jq -r .id)
scw iam policy create name=pocbot application-id="$app" description="What pocbot's runs need, in the POC project only" \
  rules.0.project-ids.0="$PROJECT_ID" \
  rules.0.permission-set-names.0=InstancesFullAccess \
  rules.0.permission-set-names.1=BlockStorageFullAccess \
  rules.0.permission-set-names.2=ElasticMetalFullAccess \
  rules.0.permission-set-names.3=SSHKeysFullAccess \
  rules.0.permission-set-names.4=DomainsDNSFullAccess \
  rules.0.permission-set-names.5=ObjectStorageFullAccess >/dev/null
scw iam policy create name=pocbot-organization application-id="$app" description="The organization's quotas, read by pocbot's pre-flight" \
  rules.0.organization-id="$ORGANIZATION_ID" \
  rules.0.permission-set-names.0=OrganizationReadOnly >/dev/null
echo "# SCW_ACCESS_KEY / SCW_SECRET_KEY:"
scw iam api-key create application-id="$app" default-project-id="$PROJECT_ID" \
  description="pocbot GitHub Actions" -o json | jq '{access_key, secret_key}'

presign=$(scw iam application create name=pocbot-presign description="pocbot: signs the kubeconfig links (read-only)" -o json | jq -r .id)
scw iam policy create name=pocbot-presign application-id="$presign" description="Read objects of the POC project's buckets" \
  rules.0.project-ids.0="$PROJECT_ID" \
  rules.0.permission-set-names.0=ObjectStorageObjectsRead >/dev/null
echo "# POC_PRESIGN_ACCESS_KEY / POC_PRESIGN_SECRET_KEY:"
scw iam api-key create application-id="$presign" default-project-id="$PROJECT_ID" \
  description="pocbot presigned links" -o json | jq '{access_key, secret_key}'
