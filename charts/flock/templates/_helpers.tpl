{{/* Names: <fullname>-operator, <fullname>-agent, <fullname>-bfd. */}}
{{- define "flock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "flock.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "flock.operator.name" -}}{{ include "flock.fullname" . }}-operator{{- end -}}
{{- define "flock.agent.name" -}}{{ include "flock.fullname" . }}-agent{{- end -}}
{{- define "flock.bfd.name" -}}{{ include "flock.fullname" . }}-bfd{{- end -}}
{{- define "flock.relay.name" -}}{{ include "flock.fullname" . }}-peer-relay{{- end -}}
{{- define "flock.relay.tlsSecret" -}}{{ default (printf "%s-tls" (include "flock.relay.name" .)) .Values.peerRelay.tls.secretName }}{{- end -}}
{{- define "flock.relay.enabled" -}}{{ if and .Values.peerRelay.enabled (eq .Values.agent.policyPeers "peer-slices") }}true{{ end }}{{- end -}}

{{- define "flock.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: flock
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "flock.operator.selector" -}}
app.kubernetes.io/name: {{ include "flock.name" . }}-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flock.agent.selector" -}}
app.kubernetes.io/name: {{ include "flock.name" . }}-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flock.relay.selector" -}}
app.kubernetes.io/name: {{ include "flock.name" . }}-peer-relay
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flock.bfd.selector" -}}
app.kubernetes.io/name: {{ include "flock.name" . }}-bfd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* An image reference: repository@digest, else repository:tag (default: appVersion). */}}
{{- define "flock.image" -}}
{{- $image := index . 0 -}}
{{- $root := index . 1 -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default $root.Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The CNI network configuration install-cni writes (10-flock.conflist): flock's plugin, then
cni.chainedPlugins. It is @flock/api's flockConflist({ chained }) (e2e/chart/helm.test.ts holds
the two equal), the socket the agent's --socket flag names.
*/}}
{{- define "flock.cni.conflist" -}}
{
  "cniVersion": "1.1.0",
  "cniVersions": ["0.4.0", "1.0.0", "1.1.0"],
  "name": "flock",
  "plugins": [
    {
      "type": "flock",
      "socketPath": "/run/flock/cni.sock",
      "timeoutMs": 60000,
      "capabilities": { "portMappings": true }
    }
    {{- range .Values.cni.chainedPlugins }},
    {{ toJson . }}
    {{- end }}
  ]
}
{{- end -}}
