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

{{/* elves.operator.loadTestRules: what the operator does where LoadTests live: their status and finalizers, reading ConfigMaps, k6 TestRuns, runner pods, Events. */}}
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
# The SystemUnderTest a LoadTest names (spec.target.systemUnderTest), read when the test starts.
- apiGroups: [elves.dev]
  resources: [systemundertests]
  verbs: [get]
- apiGroups: [k6.io]
  resources: [testruns]
  verbs: [create, get, list, watch, delete]
- apiGroups: [k6.io]
  resources: [testruns/status]
  verbs: [get]
# A script.configMap the LoadTest names, and the operator's own (written by runObjectWrites).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
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

{{/* elves.operator.runObjectWrites: writing a run's script archive and report ConfigMaps and its Secret (the k6 runners' tokens and service key); replaced when a retry finds them, deleted with the LoadTest by owner references; old reports pruned. */}}
{{- define "elves.operator.runObjectWrites" -}}
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [create, update]
# Pruning reports (ELVES_REPORTS_KEPT per LoadTest name): they outlive the LoadTest, so no owner
# reference removes them. Their names carry the time they were made and RBAC cannot select by
# label, so list and delete cannot be narrowed below these namespaces; the operator lists only
# `elves.dev/report=true` and deletes only those. The same list finds spec.baseline.loadTest's
# earlier report (a LoadTest runs only in these namespaces, and its baseline is in its own).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [list, delete]
{{- end }}

{{/* elves.operator.runnerRules: operator.runner as the operator's ELVES_RUNNER_* settings. */}}
{{- define "elves.operator.runnerRules" -}}
{{- $runner := .Values.operator.runner }}
- name: ELVES_RUNNER_ENV_SECRETS
  value: {{ join "," $runner.envFromSecrets | quote }}
- name: ELVES_RUNNER_NODE_SELECTOR
  value: {{ $runner.nodeSelector | toJson | quote }}
- name: ELVES_RUNNER_TOLERATIONS
  value: {{ $runner.tolerations | toJson | quote }}
- name: ELVES_RUNNER_AFFINITY
  value: {{ $runner.affinity | toString | quote }}
{{- end }}

{{/* elves.operator.configMapNamespaces: where the operator may write a run's ConfigMaps and Secret: operator.watchNamespaces, else operator.loadTestNamespaces plus the release namespace. */}}
{{- define "elves.operator.configMapNamespaces" -}}
{{- if .Values.operator.watchNamespaces }}
{{- .Values.operator.watchNamespaces | toJson }}
{{- else }}
{{- append .Values.operator.loadTestNamespaces .Release.Namespace | uniq | toJson }}
{{- end }}
{{- end }}

{{/* elves.operator.ledgerSecrets: operator.ledgerSecrets as the operator's ELVES_LEDGER_SECRETS: namespace/name, comma-separated. */}}
{{- define "elves.operator.ledgerSecrets" -}}
{{- $secrets := list }}
{{- range $namespace, $names := .Values.operator.ledgerSecrets }}
{{- range $names | sortAlpha }}
{{- $secrets = append $secrets (printf "%s/%s" $namespace .) }}
{{- end }}
{{- end }}
{{- join "," $secrets }}
{{- end }}

{{/* elves.operator.kedaSettings: what a LoadTest's KEDA ScaledObject needs from this release (the TriggerAuthentication and RabbitMQ's address), only where the release renders them; without them the operator refuses mode: keda, saying what to install. */}}
{{- define "elves.operator.kedaSettings" -}}
{{- if include "elves.keda" . }}
- name: ELVES_KEDA_TRIGGER_AUTHENTICATION
  value: {{ include "elves.keda.triggerAuthenticationName" . | quote }}
- name: ELVES_KEDA_RABBITMQ_HOST
  value: {{ include "elves.keda.rabbitmqHost" . | quote }}
{{- end }}
{{- end }}

{{/* elves.operator.autoscalerRules: spec.system.autoscaling: each service's autoscaler (KEDA's ScaledObject for a service on a work queue, else the HPA; named after the service, as the chart's) created, read, patched (settings, KEDA's pause) and deleted (a run's, or an HPA for mode: fixed): the verbs of elves.k8s.autoscalers.VERBS. RBAC cannot narrow create by name. */}}
{{- define "elves.operator.autoscalerRules" -}}
{{- $keda := list }}
{{- $hpa := list }}
{{- range $name := keys .Values.services | sortAlpha }}
{{- if include "elves.autoscaling.queue" (dict "root" $ "name" $name) }}
{{- $keda = append $keda $name }}
{{- else }}
{{- $hpa = append $hpa $name }}
{{- end }}
{{- end }}
{{- range $rule := list (dict "group" "keda.sh" "resource" "scaledobjects" "names" $keda) (dict "group" "autoscaling" "resource" "horizontalpodautoscalers" "names" $hpa) }}
{{- if $rule.names }}
- apiGroups: [{{ $rule.group }}]
  resources: [{{ $rule.resource }}]
  verbs: [create]
- apiGroups: [{{ $rule.group }}]
  resources: [{{ $rule.resource }}]
  resourceNames: {{ $rule.names | toJson }}
  verbs: [get, patch, delete]
{{- end }}
{{- end }}
{{- end }}
