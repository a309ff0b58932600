{{/* The chart name, overridable. */}}
{{- define "kopf-audit.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the prefix of every object. */}}
{{- define "kopf-audit.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kopf-audit.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kopf-audit.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kopf-audit.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kopf-audit.labels" -}}
helm.sh/chart: {{ include "kopf-audit.chart" . }}
{{ include "kopf-audit.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kopf-audit
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "kopf-audit.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "kopf-audit.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The namespace the operator watches: empty for all. */}}
{{- define "kopf-audit.watchNamespace" -}}
{{- if .Values.watchNamespace }}
{{- .Values.watchNamespace }}
{{- else if .Values.rbac.namespaced }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{/*
"true" when the ClusterKopfAudit controller runs: rbac.clusterAudits on a cluster-wide
install (no watchNamespace, rbac.namespaced false). A namespaced install ignores it: a
ClusterKopfAudit discovers across namespaces, which its RBAC does not allow.
*/}}
{{- define "kopf-audit.clusterAudits" -}}
{{- if and .Values.rbac.clusterAudits (not (include "kopf-audit.watchNamespace" .)) }}true{{ end }}
{{- end }}

{{- define "kopf-audit.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The (Cluster)Role's rules: rbac.rules, the handled resources (get, list), extraRules. */}}
{{- define "kopf-audit.rules" -}}
{{- with .Values.rbac.rules }}
{{ toYaml . }}
{{- end }}
{{- range .Values.rbac.handledResources }}
- apiGroups:
  {{- toYaml .apiGroups | nindent 4 }}
  resources:
  {{- toYaml .resources | nindent 4 }}
  verbs: [get, list]
{{- end }}
{{- with .Values.rbac.extraRules }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "kopf-audit.leaseName" -}}
{{- default (include "kopf-audit.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}
