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

{{/* elves.operator.loadTestRules: what the operator does to LoadTests wherever it watches them: their status and finalizers, Events about them; with watchNamespaces empty these hold in every namespace, so that a LoadTest where the operator does not run tests is refused in its status. */}}
{{- define "elves.operator.loadTestRules" -}}
# delete: spec.ttlSecondsAfterFinished (a refused LoadTest outside the served namespaces too).
- apiGroups: [elves.dev]
  resources: [loadtests]
  verbs: [get, list, watch, patch, update, delete]
- apiGroups: [elves.dev]
  resources: [loadtests/status]
  verbs: [get, patch, update]
- apiGroups: [elves.dev]
  resources: [loadtests/finalizers]
  verbs: [update]
# Events tell a LoadTest's author what happened, also why a test outside the served namespaces
# is refused; creating an Event is all this allows there.
- apiGroups: ["", events.k8s.io]
  resources: [events]
  verbs: [create, patch]
{{- if .Values.operator.peering }}
- apiGroups: [kopf.dev]
  resources: [kopfpeerings]
  verbs: [get, list, watch, patch]
{{- end }}
{{- end }}

{{/* elves.operator.loadTestWork: what running a LoadTest takes in its namespace, only where the operator runs them: reading the SystemUnderTest it names and a script ConfigMap, k6 TestRuns, reading runner pods, the one-test lock of the SystemUnderTests there. */}}
{{- define "elves.operator.loadTestWork" -}}
# The one-test-at-a-time lock of the SystemUnderTests in this namespace (elves.k8s.lock): another
# system's tests hold their own, beside it, not Elves'. Created once, then read and renewed by name.
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [elves-loadtest-lock]
  verbs: [get, update]
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
{{- end }}

{{/* elves.operator.runObjectWrites: writing a run's script archive and report ConfigMaps and its Secret (the k6 runners' tokens and service key); replaced when a retry finds them, deleted with the LoadTest by owner references; old reports pruned. */}}
{{- define "elves.operator.runObjectWrites" -}}
# patch, not update: a retry replaces what an earlier attempt wrote by a JSON patch whose test ops
# check the object's labels and owner first (elves.k8s.kube), so it never overwrites another's
# object of the same name (and needs no get on Secrets to check).
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [create, patch]
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
  value: {{ $runner.envFromSecrets | toJson | quote }}
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

{{/* elves.operator.sqlSecretNames: per namespace, the Secrets operator.sqlSecrets lists for any purpose, as JSON {namespace: [names]} (the operator's Roles grant get on exactly these). */}}
{{- define "elves.operator.sqlSecretNames" -}}
{{- $names := dict }}
{{- range $namespace, $purposes := .Values.operator.sqlSecrets }}
{{- $list := list }}
{{- range $purpose, $secrets := $purposes }}
{{- $list = concat $list (keys $secrets) }}
{{- end }}
{{- $_ := set $names $namespace ($list | uniq | sortAlpha) }}
{{- end }}
{{- $names | toJson }}
{{- end }}

{{/* elves.operator.valueErrors: the operator's values the schema cannot check, as a JSON list of messages (for elves.validateValues): the release namespace in a list that would give the operator power there (kube-* the schema refuses), a Secret listed for both SQL purposes, the replaced forms of ledgerSecrets and envFromSecrets. */}}
{{- define "elves.operator.valueErrors" -}}
{{- $errors := list }}
{{- $operator := .Values.operator }}
{{- $release := .Release.Namespace }}
{{- $why := "the release namespace (its database, broker, their passwords and the operator), where this value would give the operator power a SystemUnderTest's author could use" }}
{{- $envNamespaces := list }}
{{- if kindIs "map" $operator.runner.envFromSecrets }}
{{- $envNamespaces = keys $operator.runner.envFromSecrets }}
{{- end }}
{{- range $value, $namespaces := dict "operator.targetNamespaces" $operator.targetNamespaces "operator.sqlSecrets" (keys $operator.sqlSecrets) "operator.runner.envFromSecrets" $envNamespaces }}
{{- if has $release $namespaces }}
{{- $errors = append $errors (printf "%s: %s is %s" $value $release $why) }}
{{- end }}
{{- end }}
{{- if has $release $operator.loadTestNamespaces }}
{{- $errors = append $errors (printf "operator.loadTestNamespaces: %s is the release namespace, always included; name only the others" $release) }}
{{- end }}
{{- range $namespace, $purposes := $operator.sqlSecrets }}
{{- range $name, $_ := $purposes.count }}
{{- if hasKey ($purposes.reset | default dict) $name }}
{{- $errors = append $errors (printf "operator.sqlSecrets.%s: %s is listed for both count and reset: the count's Secret is a read-only role's login, which a reset's statements could take over; give the reset a Secret (and a role) of its own" $namespace $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- if $operator.ledgerSecrets }}
{{- $errors = append $errors "operator.ledgerSecrets is replaced by operator.sqlSecrets: a Secret per namespace and purpose (count, reset), each bound to the SystemUnderTests that may use it, e.g. {shop: {count: {orders-ledger-db: [orders]}, reset: {orders-reset-db: [orders]}}}" }}
{{- end }}
{{- if kindIs "slice" $operator.runner.envFromSecrets }}
{{- $errors = append $errors "operator.runner.envFromSecrets is now a map from the LoadTests' namespace to the Secrets' names there, e.g. {team-a: [k6-hosts]}: a name holds only in its namespace" }}
{{- end }}
{{- $errors | toJson }}
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
