{{/* elves.operator.name: name of the operator's Deployment, ServiceAccount and namespaced RBAC objects. */}}
{{- define "elves.operator.name" -}}
{{- printf "%s-operator" (include "elves.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* elves.operator.args: the kopf command line: the handlers module, the namespaces it serves and its peering mode. */}}
{{- define "elves.operator.args" -}}
- kopf
- run
- --module=elves.k8s.handlers
{{- range .Values.operator.watchNamespaces }}
- --namespace={{ . }}
{{- else }}
- --all-namespaces
{{- end }}
{{- if .Values.operator.peering }}
- --peering={{ .Values.operator.peering }}
{{- else }}
# One replica with a Recreate strategy never overlaps with another: no peering object needed.
- --standalone
{{- end }}
- --liveness=http://0.0.0.0:8080/healthz
{{- end }}

{{/* elves.operator.loadTestRules: what the operator does where LoadTests live: their status and finalizers, the script ConfigMap and report, k6 TestRuns, runner pods, Events. */}}
{{- define "elves.operator.loadTestRules" -}}
# delete: spec.ttlSecondsAfterFinished.
- apiGroups: [elves.dev]
  resources: [loadtests]
  verbs: [get, list, watch, patch, update, delete]
- apiGroups: [elves.dev]
  resources: [loadtests/status]
  verbs: [get, patch, update]
- apiGroups: [elves.dev]
  resources: [loadtests/finalizers]
  verbs: [update]
- apiGroups: [k6.io]
  resources: [testruns]
  verbs: [create, get, list, watch, delete]
- apiGroups: [k6.io]
  resources: [testruns/status]
  verbs: [get]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create, get, list, watch, patch, update, delete]
# Runner pods: read to turn OOMKilled, unschedulable or image-pull failures into an Error phase.
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- if .Values.operator.peering }}
- apiGroups: [kopf.dev]
  resources: [kopfpeerings]
  verbs: [get, list, watch, patch]
{{- end }}
{{- end }}
