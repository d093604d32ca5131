{{/* An image reference: repository, tag, and the digest when asked for. */}}
{{- define "cni.image" -}}
{{- $digest := .digest | default .genericDigest -}}
{{- if and .useDigest (not $digest) -}}
{{- fail (printf "%s: useDigest without a digest" .repository) -}}
{{- end -}}
{{- printf "%s%s:%s" .repository (.suffix | default "") .tag -}}
{{- if .useDigest }}@{{ $digest }}{{ end -}}
{{- end }}

{{- define "cni.labels" -}}
app.kubernetes.io/part-of: {{ .Chart.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- range $k, $v := .Values.extraLabels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}

{{/*
A duration value, checked the way charts check one without a duration function: moving the
current time by it must work (mustDateModify fails on what time.ParseDuration refuses) and
must move it (a zero duration is refused).
*/}}
{{- define "cni.duration" -}}
{{- $t := now -}}
{{- if eq $t ($t | mustDateModify (toString .)) -}}
{{- fail (printf "duration %q is zero" (toString .)) -}}
{{- end -}}
{{- toString . -}}
{{- end }}

{{/* The cluster's Kubernetes minor, "1.33", from .Capabilities (semver's Major and Minor). */}}
{{- define "cni.kubeMinor" -}}
{{- $v := semver .Capabilities.KubeVersion.Version -}}
{{- printf "%d.%d" $v.Major $v.Minor -}}
{{- end }}
