// Package github is the GitHub REST API stand-in used by tests and by `bot demo`.
//
// It owns an emulated GitHub: one GitHub App (id, slug, a freshly generated RSA key pair), its
// installations per repository, repositories (default branch, files per branch), users (public SSH
// keys, permission per repository), issues and pull requests (state, labels, merged, draft, fork),
// comments and reactions. It speaks the real protocol so that the real client libraries
// (go-github v88, ghinstallation) run against it unchanged. Everything is recorded (requests,
// comments, reactions) so tests can assert on what a user would see; faults (5xx, secondary
// rate limits, stalls that still take effect after the client gave up, 5xx answers to requests
// that took effect) can be injected to
// exercise client retries.
//
// # Contract
//
// Every behaviour the stand-in enforces, and where it comes from. "OpenAPI" is GitHub's
// description, github/rest-api-description descriptions/api.github.com/api.github.com.yaml
// (read at commit 0000036e42b5), named by operation id; "docs" is docs.github.com (the source
// markdown in github/docs).
//
//	behaviour                                                  source
//	---------------------------------------------------------  ------------------------------------------------------------
//	App endpoints need a JWT signed RS256 with the App's key,  docs /apps/creating-github-apps/authenticating-with-a-github-app/
//	  iss = App id (number or string), iat and exp present,      generating-a-json-web-token-jwt-for-a-github-app ("RS256";
//	  iat at most 60 s ahead, exp in the future and at most      iat 60 s in the past against drift; exp "no more than 10
//	  10 min after iat; refused 401 otherwise                    minutes into the future"); the 401 messages: source silent,
//	                                                             wording kept from the earlier stand-in, not re-checked
//	GET /repos/{o}/{r}/installation: JWT only, 404 when the    OpenAPI apps/get-repo-installation
//	  App is not installed on the owner
//	An installation is on all of its owner's repositories, or  docs "Installing your own GitHub App" (All repositories /
//	  on selected ones (SelectRepositories): the others are      Only select repositories); OpenAPI installation schema
//	  not covered (installation 404, tokens do not reach them);  repository_selection enum all, selected
//	  repository_selection says which
//	GET /app/installations: JWT only; every installation of    OpenAPI apps/list-installations (per_page, page); this
//	  the App with account and repository_selection              stand-in answers one page
//	PUT /user/installations/{id}/repositories/{repository_id}: OpenAPI apps/add-repo-to-installation-for-authenticated-
//	  a user's token (an installation's: 403), admin on the      user ("The authenticated user must have admin access to
//	  repository (403 otherwise), the repository of the          the repository"; 204; 403, 404); another owner's
//	  installation's owner (404 otherwise); 204, the             repository and an installation on all repositories:
//	  repository is then covered; on all repositories: 204,      source silent, 404 chosen (stricter) and no change
//	  nothing changes
//	POST /app/installations/{id}/access_tokens: JWT only; 404  OpenAPI apps/create-installation-access-token (description
//	  for an unknown installation; repositories and              and request body: repositories, repository_ids, permissions;
//	  repository_ids narrow (422 for one the installation        "cannot be granted access to repositories that the
//	  lacks); permissions narrow (422 beyond the grant); no      installation was not granted", "cannot be granted
//	  body = every repository and the whole grant; 201 with      permissions that the app was not granted"; responses 201,
//	  token, expires_at one hour ahead, permissions,             401, 403, 404, 422; "expire one hour from the time you
//	  repository_selection, repositories                         create them")
//	metadata:read on every token                               source silent in OpenAPI; docs "Choosing permissions for a
//	                                                             GitHub App" (metadata is mandatory), not re-checked
//	Tokens are stateless by default: ghs_<app id>_<JWT>,       register: token-format; OpenAPI apps/create-installation-access-token (note on the
//	  ~480 characters, a JWT signed with a key only the          "stateless format (ghs_APPID_JWT)", tokens no longer 40
//	  stand-in knows; TokenClassic: ghs_ + 36 alphanumerics      characters); GitHub changelog 2026-10-02 "Stateless GitHub
//	                                                             App installation tokens rolled out" (the default, ~520
//	                                                             characters, JWT from "a GitHub-internal issuer")
//	A token is accepted only whole and unexpired: a cut or     OpenAPI apps/create-installation-access-token ("Using an
//	  unknown one, or an expired one, is 401 Bad credentials     expired token produces a status code of 401"); cut tokens:
//	                                                             stricter reading chosen (an unknown token)
//	A token reaches only its repositories (404 elsewhere) and  OpenAPI apps/create-installation-access-token (narrowing);
//	  its permissions (403 "Resource not accessible by           the 404-not-403 for an inaccessible repository and the 403
//	  integration")                                              message: source silent here, kept from the earlier stand-in
//	Secondary limit on content creation: POST, PATCH, PUT and  docs /rest/using-the-rest-api/rate-limits-for-the-rest-api
//	  DELETE with a token, counted per installation (per user    (About secondary rate limits: "no more than 80 content-
//	  for a static token), at most 80 a minute and 500 an        generating requests per minute and no more than 500 ...
//	  hour (ContentLimit), in real minutes and hours of the      per hour"; github/docs data/reusables/rest-api/secondary-
//	  stand-in's clock whatever a world's time factor; over      rate-limit-rest-graphql.md, read at 058fa63bfe93); which
//	  it: 403 (or 429) with the secondary-limit message and      requests generate content, and the counting key: source
//	  documentation_url; refused requests are not counted        silent, stricter reading chosen (every write);
//	                                                             documentation_url: go-github v88 github.go CheckResponse
//	                                                             (AbuseRateLimitError on "secondary-rate-limits")
//	A refusal says when to retry in one of three ways, each    same page, Exceeding the rate limit ("If the retry-after
//	  played (LimitAnswer): Retry-After seconds; x-ratelimit-    response header is present ... If the x-ratelimit-remaining
//	  remaining 0 with x-ratelimit-reset; or nothing             header is 0 ... x-ratelimit-reset ... Otherwise, wait for
//	                                                             at least one minute"); which one a content refusal carries:
//	                                                             source silent, all three played
//	SpendContent counts requests other runs made               test device, not GitHub behaviour
//	Issue and comment bodies: at most 65536 characters, else   recorded answers: comments, {"resource":"IssueComment",
//	  422; "characters" counted as UTF-8 bytes by default,       "code":"unprocessable","field":"data","message":"Body is too
//	  or code points, or UTF-16 code units (BodyUnit)            long (maximum is 65536 characters)"} (vebr/jest-lcov-
//	                                                             reporter#14 2021, reg-viz/reg-actions#123 2024,
//	                                                             easybuilders/easybuild-easyconfigs#24647 2025); issues,
//	                                                             {Resource:Issue Field:body Code:custom Message:body is too
//	                                                             long (maximum is 65536 characters)} (trstringer/manual-
//	                                                             approval#89 2023); the unit: source silent, every reading
//	                                                             played, bytes (the strictest) by default
//	Paths with or without the Enterprise /api/v3 prefix        docs (GHES REST API root http(s)://HOSTNAME/api/v3)
//	Collaborator permission: role_name exact, permission       OpenAPI repos/get-collaborator-permission-level
//	  folds maintain into write and triage into read
//	GET /user/{account_id}: the account's current login       OpenAPI users/get-by-id; docs /rest/users/users (Get a user
//	                                                             using their ID); go-github v88 github/users.go GetByID
//	                                                             ("user/%v")
//	GET /users/{username}: the account holding that login now  OpenAPI users/get-by-username
//	RenameUser: the id, keys, repository roles, comments and   docs /account-and-profile/setting-up-and-managing-your-
//	  label events follow the account; the old login is free     personal-account-on-github/managing-personal-account-
//	  at once for a new account (a new id)                       settings/changing-your-github-username ("your old username
//	                                                             becomes available for anyone else to claim")
//	GET /repos/{o}/{r}/issues/{n}/events, oldest first,        OpenAPI issues/list-events; docs /rest/using-the-rest-api/
//	  paginated; "labeled"/"unlabeled" with actor and            issue-event-types (labeled, unlabeled: actor, label name
//	  label.name; needs issues read; other event kinds are       and color); other kinds: not modelled
//	  not recorded
//	Label changes through POST/DELETE .../labels are events    same docs page; the actor is the token's identity
//	  by the caller; seeded labels are by Issue/PR.LabeledBy     (seeding is test set-up, not GitHub behaviour)
//	  (else the author, else the owner), SetLabels by the owner
//	The owner login of a repository has role admin             docs /account-and-profile/.../permission-levels-for-a-
//	                                                             personal-account-repository (user-owned repositories;
//	                                                             organisations: source silent, same reading)
//	Comments made with an installation token are by            actions/create-github-app-token README (an app's bot user
//	  "<slug>[bot]", type Bot; GET /app gives the slug           is "<app-slug>[bot]"); OpenAPI apps/get-authenticated
//	performed_via_github_app on comments: not served           go-github v88 IssueComment has no such field
//	                                                             (github/issues_comments.go): the bot tells its comments
//	                                                             by login; source silent for the stand-in: not modelled
//	Injected faults: a 5xx before the request is served; a     docs /rest/using-the-rest-api/troubleshooting-the-rest-api
//	  stall that is served after the client left; a 5xx          (Timeouts: a request over 10 s is ended with a timeout
//	  answered after the request took effect (AfterEffect)       and "Server Error"); whether its effect stays: source
//	                                                             silent, stricter reading chosen (it may: AfterEffect)
//	OnRequest hooks run after a request is served, before its  test device, not GitHub behaviour (a rename in the middle
//	  response reaches the client                                of a run)
//	App manifest flow: the github.com form (POST                 docs /apps/sharing-github-apps/registering-a-github-app-
//	  /settings/apps/new, /organizations/{org}/settings/apps/    from-a-manifest (form field manifest, state, redirect with
//	  new) registers the App and redirects with a one-time        code, one-hour code, url required, hook_attributes.url
//	  code; POST /app-manifests/{code}/conversions answers        required when given); OpenAPI apps/create-from-manifest
//	  201 integration + client_id, client_secret,                 (201 shape, 404, 422); details and stricter readings in
//	  webhook_secret (null without webhook), pem; 404 for an      manifest.go
//	  unknown, used or expired code
//	Issues: create (POST …/issues, title required, 201), edit  docs /rest/issues/issues (Create an issue, Update an issue);
//	  (PATCH …/issues/{n}, 200), search (GET /search/issues:     docs /rest/search/search (Search issues and pull requests:
//	  repo:, is:issue|pr, is:open|closed, in:title, author:,      total_count, incomplete_results, items; results scoped to
//	  words; other qualifiers 422); no pin (GraphQL only)         what the token can read); unknown qualifiers refused:
//	                                                             stricter reading chosen; details in issues.go
//	Search finds an issue only SearchLag after its creation    GitHub's search is eventually consistent: recorded lags from
//	  (default a minute of the stand-in's clock)                 seconds to minutes (behaviorbot/first-pr-merge#11 "Work
//	                                                             around lag for search index"; guettli/agentloop#204;
//	                                                             jayanthyp/NextJSeCommerce#171); the docs state no bound:
//	                                                             a minute chosen, NoSearchLag for none
//
// Repository administration (admin.go; what `bot init` and `bot doctor` call with a user's token):
//
//	behaviour                                                  source
//	---------------------------------------------------------  ------------------------------------------------------------
//	Personal tokens (AddUserToken, ghp_…) act with the user's  docs /rest/actions/secrets ("Authenticated users must have
//	  repository role; secrets and environments need admin       collaborator access to a repository to create, update, or
//	  (403 "Must have admin rights to Repository."), branches,   read secrets"); the role each needs: source silent, stricter
//	  files and pull requests write; installation tokens: 403    reading (admin); the App's grant has no secrets permission
//	GET …/actions/secrets/public-key and …/environments/{e}/   OpenAPI actions/get-repo-public-key, actions/get-environment-
//	  secrets/public-key: key_id and a base64 Curve25519 key     public-key (key_id, key)
//	PUT …/secrets/{name}: encrypted_value = base64 libsodium   OpenAPI actions/create-or-update-repo-secret, actions/create-
//	  sealed box to that key, key_id naming it; 201 created,     or-update-environment-secret (201 "Response when creating a
//	  204 updated; a value that does not open, or another        secret", 204 "Response when updating a secret"; "Encrypt
//	  key_id: 422 (source silent, stricter reading); names       using LibSodium"); names: docs /actions/security-guides/
//	  [A-Za-z0-9_], not GITHUB_, not a leading digit; at most    using-secrets-in-github-actions (naming rules, 48 KB)
//	  48 KB
//	GET …/secrets: total_count and secrets (name, created_at,  OpenAPI actions/list-repo-secrets, actions/list-environment-
//	  updated_at), never a value; per_page/page                  secrets; the paging of this stand-in: one page of up to 100
//	The environment secrets are also served under             go-github v88.0.0 openapi_operations.yaml (openapi_commit
//	  /repositories/{repository_id}/environments/{e}/secrets      133d385dfbee): the id-based operations come from
//	  (the same secrets, same rules; an unknown id 404): the     descriptions/ghes-3.7/ghes-3.7.json, the name-based ones
//	  paths go-github v88's ListEnvSecrets, GetEnvPublicKey,     from descriptions/api.github.com; whether api.github.com
//	  CreateOrUpdateEnvSecret and DeleteEnvSecret call           still answers the id-based ones: source silent, served
//	                                                             (the reading under which go-github's calls work)
//	PUT /repos/{o}/{r}/environments/{e}: creates or updates;   OpenAPI repos/create-or-update-environment (deployment_branch_
//	  deployment_branch_policy null = every branch, else         policy: "If protected_branches is true, custom_branch_
//	  exactly one of protected_branches, custom_branch_          policies must be false" and conversely); GET: repos/get-
//	  policies true (422 otherwise); GET: 404 when missing       environment
//	PUT …/environments/{e} states the whole configuration:     OpenAPI repos/create-or-update-environment (wait_timer,
//	  wait_timer (0-43200 min), reviewers (at most 6, type and   reviewers "up to six", deployment_branch_policy); GET's
//	  id), deployment_branch_policy; what it leaves out is       protection_rules (types wait_timer, required_reviewers,
//	  cleared; GET answers them as protection_rules, with        branch_policy), created_at, updated_at: the environment
//	  created_at and updated_at                                  schema; clearing what a PUT omits: source silent, the
//	                                                             stricter reading
//	PUT …/environments/{e} also states prevent_self_review     OpenAPI repos/create-or-update-environment
//	  (default false; GET: in the required_reviewers rule) and   (prevent_self_review); can_admins_bypass: go-github v88.0.0
//	  can_admins_bypass (default true; GET: top level): a PUT    repos_environments.go (Environment.CanAdminsBypass;
//	  that omits them sets them back to their defaults           CreateUpdateEnvironment marshals a nil one as true, "the
//	                                                             default value"); resetting an omitted one: source
//	                                                             silent, the stricter reading
//	DELETE /repos/{o}/{r}/environments/{e}: 204; its secrets,  OpenAPI repos/delete-an-environment (read at the commit
//	  variables and protection rules go with it; 404 when it     above: 204 "Default response", no other status listed;
//	  does not exist; needs admin, like every environment        classic tokens need the repo scope); docs /actions/how-tos/
//	  endpoint here                                              deploy/configure-and-manage-deployments/manage-environments
//	                                                             ("Deleting an environment will delete all secrets and
//	                                                             protection rules"; configuring one needs admin access);
//	                                                             the 404 for an absent one: source silent, the stricter
//	                                                             reading (a client that takes 204 for granted breaks)
//	GET …/environments/{e}/variables: total_count and          OpenAPI actions/list-environment-variables (name, value,
//	  variables (name, value, created_at, updated_at);           created_at, updated_at); per_page default 10, at most 30:
//	  per_page default 10, at most 30; set by                    its variables-per-page parameter, not re-checked; creating
//	  SetEnvironmentVariable (the API's other writes: not served)      them through the API: not modelled
//	DELETE …/environments/{e}/variables/{name}: 204; 404 when  OpenAPI actions/delete-environment-variable (204); the 404
//	  there is no such variable (names ignore case)              for an absent one: source silent, the stricter reading
//	…/environments/{e}/deployment_protection_rules: GET lists  OpenAPI repos/get-all-deployment-protection-rules,
//	  the custom rules (total_count, custom_deployment_          repos/create-deployment-protection-rule (201); the
//	  protection_rules: id, enabled, app), POST                  environment schema's protection_rules (wait_timer,
//	  {integration_id} adds one (201); they are not among the    required_reviewers, branch_policy) has no custom rule:
//	  environment's protection_rules                             a client must ask this endpoint
//	A private repository whose owner is on GitHub Free has no  github/docs data/reusables/gated-features/environments.md
//	  environments: PUT answers 422                              ("For access to environments, environment secrets, and
//	                                                             deployment branches in private or internal repositories,
//	                                                             you must use GitHub Pro, Team, or Enterprise"); the status:
//	                                                             source silent, a refusal chosen
//	…/environments/{e}/deployment-branch-policies: GET lists   OpenAPI repos/list-deployment-branch-policies, repos/create-
//	  (total_count, branch_policies), POST {name, type} adds     deployment-branch-policy (200; 404 "Not Found or
//	  one; 404 unless the policy is custom; a duplicate 409      deployment_branch_policy.custom_branch_policies property for
//	  (source silent, stricter reading)                          the environment is set to false")
//	GET /repos/{o}/{r}/git/ref/heads/{b} and ref/tags/{t}      OpenAPI git/get-ref, git/create-ref (422 "Reference already
//	  (lightweight tags: object type commit); POST …/git/refs    exists", an unknown object); annotated tags (object type
//	  {ref, sha}: 201; an existing ref or unknown sha 422        tag): not modelled
//	PUT /repos/{o}/{r}/contents/{path}: message and base64     OpenAPI repos/create-or-update-file-contents (message,
//	  content required; sha of the blob required to replace a    content, branch, sha "Required if you are updating a file";
//	  file (422 without, 409 when stale); 201 new, 200           201, 200, 404, 409, 422); blob sha = git's sha1 of
//	  replaced; the contents API answers the blob sha            "blob <len>\0<data>"
//	GET /repos/{o}/{r}/pulls?state&head=owner:branch; POST     OpenAPI pulls/list (head "user:ref-name"), pulls/create (422
//	  /pulls {title, head, base, body}: 201; 422 for a second    validation failed; "A pull request already exists" and "No
//	  open PR of the same head or no difference                  commits between" are GitHub's messages, not re-checked)
//	PUT /repos/{o}/{r}/pulls/{n}/merge: a writer's token; 200  OpenAPI pulls/merge (200 sha, merged, message; 403; 404;
//	  {sha, merged, message}, the head's files become the        405 "Method Not Allowed if merge cannot be performed";
//	  default branch's; 405 when not open; 409 when sha is not   409 "Conflict if sha was provided and pull request head
//	  the head; 404 for no such pull request                     did not match"); merge methods and commit messages: not
//	                                                             modelled
//	MergePR: the head's files become the default branch's      test device standing for the maintainer's merge
//	GET/POST …/actions/variables, GET/PATCH/DELETE …/actions/  OpenAPI actions/list-repo-variables (per_page default 10,
//	  variables/{name}: list (total_count, variables: name,      at most 30), actions/create-repo-variable (201), actions/
//	  value, created_at, updated_at), create 201 (409 for a      get-repo-variable, actions/update-repo-variable (204),
//	  taken name), update 204, delete 204 (404 once gone);       actions/delete-repo-variable (204); names and 48 KB: docs
//	  names as secrets', at most 48 KB; a writer may write      /actions/how-tos/write-workflows/choose-what-workflows-do/
//	  them, a reader not                                         use-variables; who may write: docs /rest/actions/variables
//	                                                             says "collaborator access", the settings page needs admin,
//	                                                             the Terraform provider's docs say write: source silent,
//	                                                             the permissive reading chosen (bot init's record does not
//	                                                             trust the variable, it checks a MAC: register
//	                                                             variable-writers); 409: source silent
//	GET …/compare/{base}...{head} of two branches: files       OpenAPI repos/compare-commits (status, ahead_by, behind_by,
//	  (filename, status added/removed/modified, sha, counts,     total_commits, commits, files, merge_base_commit); the
//	  urls) a merge would bring, against the merge base of a     stand-in has no history: a branch made through POST …/git/
//	  branch made through the API; its commits (one per PUT      refs keeps its merge base's files, each PUT …/contents on
//	  …/contents: sha, message, author); behind_by 0             it is a commit; behind_by is not modelled; files
//	                                                             against the merge base: register compare-base (its
//	                                                             base-tip reading: Options.CompareBaseTip)
//	GET …/contents/{dir}: an array of the entries under dir    OpenAPI repos/get-content ("If the content is a directory":
//	  (type file or dir, name, path, sha, size, urls)            an array of type, size, name, path, sha, url, html_url,
//	                                                             download_url); a directory's sha: a stand-in id
//
// Token scopes (scopes.go; a person's token, AddUserToken and AddUserTokenWith):
//
//	behaviour                                                  source
//	---------------------------------------------------------  ------------------------------------------------------------
//	Every answer to a classic token (PAT ghp_, OAuth gho_)     docs /apps/oauth-apps/building-oauth-apps/scopes-for-oauth-
//	  carries X-OAuth-Scopes, its scopes comma-separated;        apps ("X-OAuth-Scopes lists the scopes your token has
//	  a fine-grained token (github_pat_) none                    authorized"); fine-grained tokens have permissions, not
//	                                                             scopes (same page, note)
//	repo implies public_repo (and repo:status, …); a private   same page, Available scopes (repo: "full access to public
//	  repository without repo, a write without repo or           and private repositories"; public_repo "Limits access to
//	  public_repo, secrets or environments without repo: 404     public repositories"); OpenAPI actions/create-or-update-
//	                                                             repo-secret, repos/create-or-update-environment ("need the
//	                                                             repo scope"); the 404: source silent, GitHub's usual answer
//	                                                             for what a token may not see, chosen
//	PUT …/contents/.github/workflows/*: the workflow scope      same page ("workflow: Grants the ability to add and update
//	  (fine-grained: the Workflows permission), unless the same  GitHub Actions workflow files. Workflow files can be
//	  path and contents are on another branch; else 404          committed without this scope if the same file (with both
//	                                                             the same path and contents) exists on another branch");
//	                                                             the 404: recorded, octokit/octokit.rb#1184 (2020),
//	                                                             octokit/rest.js#368 (2023), repo-sync/repo-sync#16 (2019)
//	PUT /user/installations/{id}/repositories/{repository_id}  OpenAPI apps/add-repo-to-installation-for-authenticated-user
//	  takes a classic PAT with repo: an OAuth app's or a         ("This endpoint only works for PATs (classic) with the repo
//	  fine-grained token 403 "Resource not accessible by         scope"), read through a client generated from it
//	  personal access token"                                     (HavenDV/GitHub.NET), not in the description itself; an
//	                                                             OAuth token (gh's): source silent, refused (the stricter
//	                                                             reading); the 403 and its message: source silent
//
// Pull-request clusters (prs.go; what a pull request's job and the bot call for its kubeconfig and
// its deployment). OpenAPI operations as above (api.github.com.yaml at commit 0000036e42b5):
//
//	behaviour                                                  source
//	---------------------------------------------------------  ------------------------------------------------------------
//	POST …/dispatches {event_type, client_payload}: 204;       OpenAPI repos/create-dispatch-event (event_type minLength 1,
//	  event_type 1 to 100 characters, client_payload an          maxLength 100; client_payload "The maximum number of top-
//	  object of at most 10 top-level properties and under        level properties is 10. The total size of the JSON payload
//	  64 KB (422 otherwise); needs contents: write (403)         must be less than 64KB"; 204, 404, 422); contents:write: the
//	                                                             description's "GitHub Apps with both metadata:read and
//	                                                             contents:read&write permissions" (in earlier versions of
//	                                                             the description, kept in jinxapi-github's copy)
//	POST …/actions/workflows/{file}/dispatches {ref, inputs,   OpenAPI actions/create-workflow-dispatch (ref required, a
//	  return_run_details}: 204, or 200 with go-github's          branch or tag; inputs "The maximum number of properties is
//	  WorkflowDispatchRunDetails when return_run_details;        25" in go-github v88.0.0 actions_workflows.go, 10 in older
//	  ref required (422); at most 25 inputs (422); needs         descriptions; 204; return_run_details and its 200 body:
//	  actions: write (403); a workflow file not on ref: 404      go-github v88 WorkflowDispatchRunDetails); actions:write
//	                                                             for Apps: docs /rest/actions/workflows ("GitHub Apps must
//	                                                             have the actions:write permission")
//	  a workflow without a workflow_dispatch trigger, a ref      the stand-in's wording (GitHub's messages not re-checked):
//	  the repository lacks, an undeclared input or a choice      "Workflow does not have 'workflow_dispatch' trigger", "No
//	  outside its options: 422                                   ref found for: …", "Unexpected inputs provided: […]",
//	                                                             "Provided value … not in the list of allowed values"
//	a dispatch made with a job's GITHUB_TOKEN is recorded      docs /actions/concepts/security/github_token ("events
//	  (Dispatches) for the Actions stand-in, which runs the      triggered by the GITHUB_TOKEN, with the exception of
//	  default branch's workflow for it                          workflow_dispatch and repository_dispatch, will not create
//	                                                             a new workflow run")
//	GET …/actions/runs/{run_id}: the run (every field of       OpenAPI actions/get-workflow-run; go-github v88 WorkflowRun;
//	  go-github's WorkflowRun: event, status, head_sha,          actions:read for an App: the operation's x-github
//	  head_repository, run_attempt, actor, triggering_actor,     enabledForGitHubApps, the permission named by docs
//	  pull_requests …); 404 for an unknown one; actions: read    /rest/actions/workflow-runs; a re-run keeps the id and
//	                                                             raises run_attempt (docs "Re-running workflows and jobs")
//	POST …/check-runs: Apps only (403 for another token);      OpenAPI checks/create ("To create a check run, you must use a
//	  name and head_sha required; status queued by default;      GitHub App"; required name, head_sha; status default queued;
//	  waiting, requested, pending refused; conclusion            "Only GitHub Actions can set a status of waiting, pending,
//	  required with completed and sets completed; output needs   or requested"; conclusion "Required if you provide …
//	  title and summary, summary and text at most 65535          completed", "Providing conclusion will automatically set the
//	  characters (422 otherwise); 201 with the CheckRun          status parameter to completed"; output required title,
//	                                                             summary; maxLength 65535); the 422 wording: stand-in's
//	PATCH …/check-runs/{id}: only the App installation that    OpenAPI checks/update ("OAuth apps and personal access tokens
//	  created it (403 otherwise), same rules, 200                (classic) cannot use this endpoint"); "only by the GitHub App
//	                                                             that created it": docs /rest/checks/runs, the 403 message
//	                                                             not re-checked
//	GET …/commits/{ref}/check-runs: check_name, status,        OpenAPI checks/list-for-ref (filter "latest" returns the most
//	  filter latest (default: the newest of each name) or all;   recent check runs, default latest); the order of the list:
//	  total_count and check_runs, newest first, per_page up to   source silent, newest first chosen (the bot reads them all
//	  100; needs checks: read                                    and matches its external_id)
//	POST …/deployments: ref required (422); task deploy,       OpenAPI repos/create-deployment (defaults task deploy,
//	  environment production, transient false, production        auto_merge true, environment production,
//	  true only for production by default; 201 with the          transient_environment false, production_environment "true
//	  Deployment; needs deployments: write                       when environment is production"; 201, 202, 409, 422);
//	                                                             auto_merge and required_contexts: no history nor commit
//	                                                             statuses here, so never a 202 or 409 (the bot sends
//	                                                             auto_merge false and required_contexts [] as the docs say
//	                                                             to skip both)
//	GET …/deployments?sha&ref&task&environment: newest first,  OpenAPI repos/list-deployments (the four filters); the order:
//	  per_page up to 100                                         source silent, newest first chosen (the bot does not rely
//	                                                             on it: it takes the highest id)
//	POST …/deployments/{id}/statuses: state one of error,      OpenAPI repos/create-deployment-status (state enum;
//	  failure, inactive, in_progress, queued, pending, success   description "maximum description length is 140 characters";
//	  (422); description at most 140 (422); log_url sets        "Setting log_url will automatically set target_url";
//	  target_url; environment kept from the last status;        environment "If not defined, the environment of the previous
//	  success with auto_inactive (default true) adds inactive    status … will be used"; auto_inactive "Adds a new inactive
//	  to every prior non-transient, non-production deployment    status to all prior non-transient, non-production environment
//	  of the environment whose state was success                 deployments … only added to deployments that had a success
//	                                                             state"); over 140: source says maximum, 422 chosen
//	GET …/deployments/{id}/statuses: newest first              OpenAPI repos/list-deployment-statuses; order: source silent
//	                                                             (the bot takes the highest id)
//	The Actions OIDC issuer at <URL>/_services/token: its      docs /actions/reference/security/oidc (GHES issuer
//	  openid-configuration (issuer, jwks_uri), its JWKS (RSA,    https://HOSTNAME/_services/token, claims table: strings for
//	  kid), tokens RS256 with iss, aud (asked, default the       run_id, run_attempt, repository_id, actor_id; aud default
//	  owner's URL), sub, repository(_id), run_id, run_attempt,   "the URL of the repository owner"); lifetime: exp = iat + 6 h,
//	  event_name, ref, sha, actor(_id), workflow, nbf = iat-5m,  nbf = iat - 5 min as github/actions-oidc-debugger's README
//	  exp = iat+6h                                               records; the job's request: actions/toolkit packages/core/src/
//	                                                             oidc-utils.ts (GET ACTIONS_ID_TOKEN_REQUEST_URL&audience=…,
//	                                                             Bearer ACTIONS_ID_TOKEN_REQUEST_TOKEN, answer {"value"})
//	a job's GITHUB_TOKEN (AddJobToken) has its workflow's      docs /actions/reference/github_token-reference (Maximum access
//	  permissions; a fork's pull request's are read at most      for pull requests from public forked repositories: read;
//	  and never id-token                                         id-token none)
//
// Not emulated: primary rate limits (5,000 requests an hour and the x-ratelimit-* headers), the
// secondary limits on concurrency, points and CPU time, conditional requests.
package github
