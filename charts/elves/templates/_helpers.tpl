{{/* elves.name: the chart name, or nameOverride. */}}
{{- define "elves.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* elves.fullname: prefix of the chart's own objects (operator, secret, rules, dashboards). */}}
{{- define "elves.fullname" -}}
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

{{/* elves.clusterScopedName: name of a cluster-scoped object, unique per release namespace; takes (dict "root" $ "suffix" "..."). */}}
{{- define "elves.clusterScopedName" -}}
{{- printf "%s-%s-%s" .root.Release.Namespace (include "elves.fullname" .root) .suffix | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* elves.selectorLabels: the labels that pick the pods of one component; takes (dict "root" $ "component" "..."). */}}
{{- define "elves.selectorLabels" -}}
app.kubernetes.io/name: {{ include "elves.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* elves.labels: the recommended labels of an object of one component; takes (dict "root" $ "component" "..."). */}}
{{- define "elves.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "elves.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: elves
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{/* elves.monitoringLabels: the labels plus the `release` label kube-prometheus-stack selects by; takes (dict "root" $ "component" "..."). */}}
{{- define "elves.monitoringLabels" -}}
{{ include "elves.labels" . }}
release: {{ .root.Values.monitoring.release | quote }}
{{- end }}

{{/* elves.serviceMonitors: "true" when ServiceMonitors are switched on and the cluster serves monitoring.coreos.com/v1 (prometheus-operator), else empty. */}}
{{- define "elves.serviceMonitors" -}}
{{- if and .Values.monitoring.serviceMonitors.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}true{{ end }}
{{- end }}

{{/* elves.prometheusRules: "true" when the alerts are switched on and the cluster serves monitoring.coreos.com/v1, else empty. */}}
{{- define "elves.prometheusRules" -}}
{{- if and .Values.monitoring.prometheusRules.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}true{{ end }}
{{- end }}

{{/* elves.alertQuery: one alert's query from alerts/queries.yaml (the engine's, written by dashboards/build.py), selecting the release's namespace; takes (dict "root" $ "alert" "..."). */}}
{{- define "elves.alertQuery" -}}
{{- $queries := .root.Files.Get "alerts/queries.yaml" | fromYaml }}
{{- $query := index $queries .alert | required (printf "alerts/queries.yaml has no %s: run charts/elves/dashboards/build.py" .alert) }}
{{- $query | replace "RELEASE_NAMESPACE" .root.Release.Namespace }}
{{- end }}

{{/* elves.image: [registry/]repository:tag of an image map, the tag defaulting to the chart's appVersion; takes (dict "root" $ "image" .image). */}}
{{- define "elves.image" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion | toString }}
{{- $repository := .image.repository }}
{{- with .root.Values.global.imageRegistry }}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository }}
{{- end }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}

{{/* elves.imagePullSecrets: the pod's imagePullSecrets from global.imagePullSecrets (nothing when empty). */}}
{{- define "elves.imagePullSecrets" -}}
{{- with .Values.global.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* elves.podSecurityContext: a restricted-profile pod security context running as the given user id. */}}
{{- define "elves.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* elves.containerSecurityContext: a restricted-profile container security context with a read-only root filesystem. */}}
{{- define "elves.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
{{- end }}

{{/* elves.tmpVolume: the emptyDir mounted at /tmp, as every root filesystem is read-only. */}}
{{- define "elves.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end }}

{{/* elves.secretName: the Secret holding the JWT secret and the service key (what the operator reads; no password): secrets.existingSecret, else the chart's own. */}}
{{- define "elves.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "elves.fullname" .) }}
{{- end }}

{{/* elves.secretValue: base64 of a key of a release Secret (the release's own, or "secret"): the given value, else the one the Secret already holds (kept across upgrades; or the one "formerSecret" held, where the key lived before), else a new random one; takes (dict "root" $ "key" "..." "value" "..." ["secret" "..."] ["formerSecret" "..."]). */}}
{{- define "elves.secretValue" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (.secret | default (include "elves.secretName" .root)) | default dict }}
{{- $kept := dig "data" .key "" $existing }}
{{- if and (not $kept) .formerSecret }}
{{- $kept = dig "data" .key "" (lookup "v1" "Secret" .root.Release.Namespace .formerSecret | default dict) }}
{{- end }}
{{- if .value }}
{{- .value | toString | b64enc }}
{{- else if $kept }}
{{- $kept }}
{{- else }}
{{- randAlphaNum 48 | b64enc }}
{{- end }}
{{- end }}

{{/* elves.rabbitmq.host: the AMQP host the services connect to. */}}
{{- define "elves.rabbitmq.host" -}}
{{- if .Values.rabbitmq.enabled }}rabbitmq.{{ .Release.Namespace }}.svc{{ else }}{{ .Values.externalRabbitmq.host }}{{ end }}
{{- end }}

{{/* elves.rabbitmq.port: the AMQP port the services connect to. */}}
{{- define "elves.rabbitmq.port" -}}
{{- if .Values.rabbitmq.enabled }}5672{{ else }}{{ .Values.externalRabbitmq.port }}{{ end }}
{{- end }}

{{/* elves.dataPlane: the services' RabbitMQ users and PostgreSQL roles (files/data-plane.json, written from operator/elves/data_plane.py). */}}
{{- define "elves.dataPlane" -}}
{{- .Files.Get "files/data-plane.json" }}
{{- end }}

{{/* elves.serviceSecretName: the Secret with one service's own credentials (secrets.existingSecret holds every one); takes (dict "root" $ "name" "gateway"). */}}
{{- define "elves.serviceSecretName" -}}
{{- .root.Values.secrets.existingSecret | default (printf "%s-%s" (include "elves.fullname" .root) .name) }}
{{- end }}

{{/* elves.rabbitmq.username: the RabbitMQ user of a service (its own in the release's RabbitMQ); takes (dict "root" $ "name" "gateway"). */}}
{{- define "elves.rabbitmq.username" -}}
{{- if .root.Values.rabbitmq.enabled }}{{ (get (include "elves.dataPlane" .root | fromJson).rabbitmq .name).user }}{{ else }}{{ .root.Values.externalRabbitmq.username }}{{ end }}
{{- end }}

{{/* elves.rabbitmq.passwordKeyRef: secretKeyRef of a service's RabbitMQ password (its own Secret, or externalRabbitmq's); takes (dict "root" $ "name" "gateway"). */}}
{{- define "elves.rabbitmq.passwordKeyRef" -}}
{{- $values := .root.Values }}
{{- if and (not $values.rabbitmq.enabled) $values.externalRabbitmq.existingSecret }}
name: {{ $values.externalRabbitmq.existingSecret | quote }}
key: {{ $values.externalRabbitmq.existingSecretPasswordKey | quote }}
{{- else if $values.rabbitmq.enabled }}
name: {{ include "elves.serviceSecretName" . }}
key: {{ ternary (printf "rabbitmq-%s-password" .name) "rabbitmq-password" (not (empty $values.secrets.existingSecret)) }}
{{- else }}
name: {{ include "elves.serviceSecretName" . }}
key: rabbitmq-password
{{- end }}
{{- end }}

{{/* elves.postgresql.host: the PostgreSQL host the registry connects to. */}}
{{- define "elves.postgresql.host" -}}
{{- if .Values.postgresql.enabled }}postgres.{{ .Release.Namespace }}.svc{{ else }}{{ .Values.externalPostgresql.host }}{{ end }}
{{- end }}

{{/* elves.postgresql.jdbcUrl: SPRING_DATASOURCE_URL of the registry. */}}
{{- define "elves.postgresql.jdbcUrl" -}}
{{- if .Values.postgresql.enabled }}
{{- printf "jdbc:postgresql://%s:5432/%s" (include "elves.postgresql.host" .) .Values.postgresql.auth.database }}
{{- else }}
{{- printf "jdbc:postgresql://%s:%v/%s" .Values.externalPostgresql.host .Values.externalPostgresql.port .Values.externalPostgresql.database }}
{{- end }}
{{- end }}

{{/* elves.postgresql.username: the PostgreSQL role of the registry at run time (in the release's PostgreSQL: one that owns nothing). */}}
{{- define "elves.postgresql.username" -}}
{{- if .Values.postgresql.enabled }}{{ (include "elves.dataPlane" . | fromJson).postgresql.registry }}{{ else }}{{ .Values.externalPostgresql.username }}{{ end }}
{{- end }}

{{/* elves.postgresql.passwordKeyRef: secretKeyRef of the registry's PostgreSQL password (its own Secret, or externalPostgresql's). */}}
{{- define "elves.postgresql.passwordKeyRef" -}}
{{- if and (not .Values.postgresql.enabled) .Values.externalPostgresql.existingSecret }}
name: {{ .Values.externalPostgresql.existingSecret | quote }}
key: {{ .Values.externalPostgresql.existingSecretPasswordKey | quote }}
{{- else if .Values.postgresql.enabled }}
name: {{ include "elves.serviceSecretName" (dict "root" . "name" "registry") }}
key: {{ ternary "postgres-registry-password" "postgres-password" (not (empty .Values.secrets.existingSecret)) }}
{{- else }}
name: {{ include "elves.serviceSecretName" (dict "root" . "name" "registry") }}
key: postgres-password
{{- end }}
{{- end }}

{{/* elves.bytes: a Kubernetes memory quantity (512Mi, 1Gi, 1000000) as a number of bytes. */}}
{{- define "elves.bytes" -}}
{{- $quantity := toString . }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $quantity }}
{{- $factors := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "K" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 }}
{{- $unit := trimPrefix $number $quantity }}
{{- if or (not $number) (not (hasKey $factors $unit)) }}
{{- fail (printf "memory quantity %q: expected a number with an optional Ki, Mi, Gi, Ti, k, M, G or T suffix" $quantity) }}
{{- end }}
{{- mulf $number (get $factors $unit) | int64 }}
{{- end }}

{{/* elves.managedEnv: names of the environment variables the chart sets on the services itself (services.*.env may not repeat them). */}}
{{- define "elves.managedEnv" -}}
SERVER_PORT MANAGEMENT_SERVER_PORT JAVA_TOOL_OPTIONS SERVER_SHUTDOWN SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE ELVES_SHUTDOWN_TIMEOUT SERVER_TOMCAT_MAXKEEPALIVEREQUESTS SPRING_RABBITMQ_HOST SPRING_RABBITMQ_PORT SPRING_RABBITMQ_USERNAME SPRING_RABBITMQ_PASSWORD ELVES_RABBITMQ_DECLARE SPRING_DATASOURCE_URL SPRING_DATASOURCE_USERNAME SPRING_DATASOURCE_PASSWORD ELVES_REGISTRY_MIGRATION_USERNAME ELVES_REGISTRY_MIGRATION_PASSWORD ELVES_REGISTRY_RESET_ROLE ELVES_JWT_SECRET ELVES_SERVICE_KEY ELVES_REGISTRY_URL ELVES_INGESTOR_SCRATCH_DIR
{{- end }}

{{/* elves.validateValues: every check the schema cannot express, reported together in one failure. */}}
{{- define "elves.validateValues" -}}
{{- $errors := list }}
{{- if .Values.system.enabled }}{{/* the broker and database are Elves' system's: none to point at without it */}}
{{- if and (not .Values.rabbitmq.enabled) (not .Values.externalRabbitmq.host) }}
{{- $errors = append $errors "rabbitmq.enabled=false needs externalRabbitmq.host (the existing RabbitMQ to use)" }}
{{- end }}
{{- if and (not .Values.rabbitmq.enabled) (not .Values.externalRabbitmq.password) (not .Values.externalRabbitmq.existingSecret) }}
{{- $errors = append $errors "rabbitmq.enabled=false needs externalRabbitmq.password or externalRabbitmq.existingSecret" }}
{{- end }}
{{- if and (not .Values.postgresql.enabled) (not .Values.externalPostgresql.host) }}
{{- $errors = append $errors "postgresql.enabled=false needs externalPostgresql.host (the existing PostgreSQL to use)" }}
{{- end }}
{{- if and (not .Values.postgresql.enabled) (not .Values.externalPostgresql.password) (not .Values.externalPostgresql.existingSecret) }}
{{- $errors = append $errors "postgresql.enabled=false needs externalPostgresql.password or externalPostgresql.existingSecret" }}
{{- end }}
{{- end }}
{{- if .Values.secrets.existingSecret }}
{{- range $path, $value := dict "secrets.jwtSecret" .Values.secrets.jwtSecret "secrets.serviceKey" .Values.secrets.serviceKey "postgresql.auth.password" .Values.postgresql.auth.password }}
{{- if $value }}
{{- $errors = append $errors (printf "%s is set, but secrets.existingSecret is used instead: put the value in that Secret" $path) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.secrets.serviceKey (lt (len .Values.secrets.serviceKey) 16) }}
{{- $errors = append $errors (printf "secrets.serviceKey: %d characters is too short; give at least 16, or leave it empty to have one generated" (len .Values.secrets.serviceKey)) }}
{{- end }}
{{- if and .Values.secrets.jwtSecret (lt (len .Values.secrets.jwtSecret) 32) }}
{{- $errors = append $errors (printf "secrets.jwtSecret: %d characters is too short for an HS256 key; give at least 32, or leave it empty to have one generated" (len .Values.secrets.jwtSecret)) }}
{{- end }}
{{- $managed := splitList " " (include "elves.managedEnv" .) }}
{{- range $name, $service := .Values.services }}
{{- range $variable, $_ := $service.env }}
{{- if has $variable $managed }}
{{- $errors = append $errors (printf "services.%s.env.%s is set by the chart itself (from ports, shutdown, javaOpts, the RabbitMQ/PostgreSQL settings or the Secret); set it there instead" $name $variable) }}
{{- end }}
{{- end }}
{{- end }}
{{- $errors = concat $errors (include "elves.autoscaling.errors" . | fromJsonArray) }}
{{- $errors = concat $errors (include "elves.operator.valueErrors" . | fromJsonArray) }}
{{- $images := dict "operator.image" .Values.operator.image "rabbitmq.image" .Values.rabbitmq.image "postgresql.image" .Values.postgresql.image }}
{{- range $name, $service := .Values.services }}
{{- $_ := set $images (printf "services.%s.image" $name) $service.image }}
{{- end }}
{{- range $path, $image := $images }}
{{- if eq (toString (default $.Chart.AppVersion $image.tag)) "latest" }}
{{- $errors = append $errors (printf "%s.tag: `latest` makes Kubernetes pull on every start and hides which build ran; pin a version" $path) }}
{{- end }}
{{- end }}
{{- with $errors }}
{{- fail (printf "\n\nVALUES VALIDATION:\n  - %s\n" (join "\n  - " .)) }}
{{- end }}
{{- end }}

{{/* elves.volumeClaim: a StatefulSet volumeClaimTemplate named `data`; takes the usual dict plus "persistence". */}}
{{- define "elves.volumeClaim" -}}
metadata:
  name: data
  labels: {{- include "elves.selectorLabels" . | nindent 4 }}
spec:
  accessModes: [ReadWriteOnce]
  {{- with .persistence.storageClass }}
  storageClassName: {{ . | quote }}
  {{- end }}
  resources:
    requests:
      storage: {{ .persistence.size }}
{{- end }}
