// Package chart renders a Helm chart into Kubernetes manifests without Helm: the bot turns the
// Cilium chart, pinned by digest (Fetch), into the inline manifest Talos applies at bootstrap.
// Helm's own SDK (helm.sh/helm/v4 v4.3.2: engine, chart loader, values) links Kubernetes'
// client-go and API scheme into the release binary: 29.6 → 66.5 MB, measured with
// .goreleaser.yaml's flags. Go's text/template executor alone costs 13–15 MB, because its
// reflective method calls keep every exported method of the binary linked. So this package
// parses templates with text/template/parse (Go's own template grammar, +0.16 MB) and evaluates
// the tree itself, over the plain values YAML gives (maps, lists, strings, numbers, booleans).
//
// What it supports, and nothing more (anything else is an error, never a silent difference):
//
//   - a chart archive (.tgz) with Chart.yaml (apiVersion v1 or v2), values.yaml, templates/ and
//     other files for .Files; no subcharts (charts/ or dependencies: refused), no library
//     charts, no values.schema.json validation (the schema is not read);
//   - values: values.yaml coalesced with the caller's values as Helm v4.3.2 does (Coalesce:
//     maps merged, the caller's scalars and lists win, the chart's nulls dropped, the caller's
//     null removes the key); YAML numbers become float64 as in Helm (sigs.k8s.io/yaml), so
//     1000000 prints as 1e+06 there as here;
//   - the template language: text, actions, pipelines, variables ($ and := / =), if/else if,
//     range (lists, maps by sorted key, integers, break/continue), with, define, template,
//     block, comments and trim markers; a missing map key is nil (Helm's missingkey=zero) and
//     prints as nothing; a field of nil fails as in Go ("nil pointer evaluating interface {}.x");
//   - the objects: .Values (Helm's common.Values: a map, with its methods AsMap, YAML, Table
//     and PathValue), .Release (Name, Namespace, Service, IsInstall, IsUpgrade,
//     Revision), .Chart (Chart.yaml's fields, capitalised), .Capabilities (KubeVersion: Version,
//     Major, Minor, GitVersion; APIVersions.Has over the built-in API versions of the
//     Kubernetes release given; HelmVersion.Version), .Template (Name, BasePath), .Files (Get,
//     GetBytes, Glob, Lines, AsConfig, AsSecrets);
//   - the functions of funcs.go: Go's builtins, Helm's include, tpl, required, fail, toYaml,
//     fromYaml, fromYamlArray, toJson, fromJson, fromJsonArray and lookup (which answers an empty
//     map, as `helm template` does), and the deterministic part of sprig's library that charts
//     use, semver and semverCompare included (semver.go: Masterminds semver v3.5.0, the module
//     sprig calls, linked as Helm links it). Every other sprig name parses (so a chart that
//     names one loads) and fails when a template calls it: the random and certificate functions
//     (randAlphaNum, uuidv4, genCA, genSignedCert, …) could not render the same manifest twice,
//     which the bot relies on. now, dateModify and mustDateModify are there for the charts that
//     check a duration with them (clock.go); a render that prints a time is refused (ErrClock).
//
// Every function and rule names its source: sprig v3.3.0 (Masterminds/sprig), Masterminds
// semver v3.5.0, Helm v4.3.2's pkg/engine and pkg/chart/common, and Go's text/template. The
// tests hold the renderer against outputs Helm v4.3.2 rendered from the same templates
// (funcs_test.go), and Cilium 1.18.1's chart, rendered with the bot's values by Helm v4.3.2
// and by this package, gave the same 20 objects, as did four other value sets (Hubble, Gateway
// API and IPv6, Prometheus, Kubernetes 1.29) (docs/architecture.md, "Cilium's install").
//
// The output is every template's documents, in template path order, each after a
// "# Source: <chart>/templates/<file>" line: what `helm template` prints, without its ordering
// by kind (Talos applies namespaces and CRDs first whatever the order).
package chart
