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
