{{- /*
The objects of one Spring Boot service. Each helper takes
(dict "root" $ "name" "gateway" "service" .Values.services.gateway "component" "gateway").
Deployments, Services and containers carry the bare service name, as the LoadTest faults,
the dashboards (kube-state-metrics `deployment` and `container` labels) and the local mode do.
*/}}

{{/* elves.service.httpPort: the service's HTTP port; the ingestor has none and serves only management. */}}
{{- define "elves.service.httpPort" -}}
{{- .service.ports.http | default .service.ports.management }}
{{- end }}

{{/* elves.service.env: the environment of one service: ports, JVM, shutdown, then the connections it needs (docs/architecture.md, Services), then services.<name>.env; elves/local/services.py sets the same variables (tests/unit/chart/test_service_wiring.py). */}}
{{- define "elves.service.env" -}}
{{- $root := .root -}}
- name: SERVER_PORT
  value: {{ include "elves.service.httpPort" . | quote }}
- name: MANAGEMENT_SERVER_PORT
  value: {{ .service.ports.management | quote }}
- name: JAVA_TOOL_OPTIONS
  value: {{ .service.javaOpts | quote }}
- name: SERVER_SHUTDOWN
  value: graceful
- name: SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE
  value: {{ printf "%vs" .service.shutdown.timeoutSeconds | quote }}
# Clients keep their connections to a pod after it leaves the Service's endpoints, and once
# Spring's graceful shutdown pauses Tomcat every request on them is answered 503. Tomcat ends a
# connection after so many requests with `Connection: close` (a clean end: no request is sent
# on a connection the server is closing), so during the preStop sleep every busy connection
# moves to a pod that stays. No shorter idle timeout: closing an idle connection races with a
# client's next request, which fails a POST (measured: 6 of 1,013 with a 3 s idle timeout).
# Optional, so that `helm upgrade --reuse-values` from a release without it still renders
# (Tomcat's own 100 then).
{{- with .service.shutdown.keepAliveRequests }}
- name: SERVER_TOMCAT_MAXKEEPALIVEREQUESTS
  value: {{ . | quote }}
{{- end }}
{{- with .service.shutdown.drainSeconds }}
- name: ELVES_SHUTDOWN_DRAIN
  value: {{ printf "%vs" . | quote }}
{{- end }}
- name: SPRING_RABBITMQ_HOST
  value: {{ include "elves.rabbitmq.host" $root | quote }}
- name: SPRING_RABBITMQ_PORT
  value: {{ include "elves.rabbitmq.port" $root | quote }}
- name: SPRING_RABBITMQ_USERNAME
  value: {{ include "elves.rabbitmq.username" (dict "root" $root "name" .name) | quote }}
- name: SPRING_RABBITMQ_PASSWORD
  valueFrom:
    secretKeyRef: {{- include "elves.rabbitmq.passwordKeyRef" (dict "root" $root "name" .name) | trim | nindent 6 }}
{{- if $root.Values.rabbitmq.enabled }}
# The queues it consumes: it declares those (and the exchanges), which its user may.
- name: ELVES_RABBITMQ_DECLARE
  value: {{ (get (include "elves.dataPlane" $root | fromJson).rabbitmq .name).declare | quote }}
{{- end }}
{{- if eq .name "gateway" }}
- name: ELVES_JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "elves.secretName" $root }}
      key: jwt-secret
- name: ELVES_REGISTRY_URL
  value: {{ printf "http://registry.%s.svc:%v" $root.Release.Namespace $root.Values.services.registry.ports.http | quote }}
{{- end }}
{{- if or (eq .name "gateway") (eq .name "registry") }}
- name: ELVES_SERVICE_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "elves.secretName" $root }}
      key: service-key
{{- end }}
{{- if eq .name "registry" }}
- name: SPRING_DATASOURCE_URL
  value: {{ include "elves.postgresql.jdbcUrl" $root | quote }}
- name: SPRING_DATASOURCE_USERNAME
  value: {{ include "elves.postgresql.username" $root | quote }}
- name: SPRING_DATASOURCE_PASSWORD
  valueFrom:
    secretKeyRef: {{- include "elves.postgresql.passwordKeyRef" $root | trim | nindent 6 }}
{{- if $root.Values.postgresql.enabled }}
{{- $roles := (include "elves.dataPlane" $root | fromJson).postgresql }}
# Flyway runs as the tables' owner; the runtime role above gets only their rows.
- name: ELVES_REGISTRY_MIGRATION_USERNAME
  value: {{ $roles.migrator | quote }}
- name: ELVES_REGISTRY_MIGRATION_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "elves.serviceSecretName" (dict "root" $root "name" "registry") }}
      key: postgres-migrator-password
- name: ELVES_REGISTRY_RESET_ROLE
  value: {{ $roles.reset | quote }}
{{- end }}
{{- end }}
{{- if eq .name "ingestor" }}
- name: ELVES_INGESTOR_SCRATCH_DIR
  value: /scratch
{{- end }}
{{- range $variable, $value := .service.env }}
- name: {{ $variable }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}

{{/* elves.service.probe: an HTTP probe on the management port; takes (dict "path" "..." "timing" .probes.x). */}}
{{- define "elves.service.probe" -}}
httpGet:
  path: {{ .path }}
  port: management
periodSeconds: {{ .timing.periodSeconds }}
timeoutSeconds: {{ .timing.timeoutSeconds }}
failureThreshold: {{ .timing.failureThreshold }}
{{- end }}

{{/* elves.service.deployment: the Deployment of one service. */}}
{{- define "elves.service.deployment" -}}
{{- $root := .root }}
{{- $service := .service }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels: {{- include "elves.labels" . | nindent 4 }}
spec:
  {{- if include "elves.autoscaled" . }}
  # The autoscaler owns the replica count: an upgrade must not reset it (templates/_autoscaling.tpl).
  {{- else }}
  replicas: {{ $service.replicas }}
  {{- end }}
  revisionHistoryLimit: 3
  selector:
    matchLabels: {{- include "elves.selectorLabels" . | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # Keep full capacity during a rollout: a new pod must be ready before an old one goes.
      maxSurge: 1
      maxUnavailable: 0
  template:
    metadata:
      labels: {{- include "elves.labels" . | nindent 8 }}
      {{- with $service.podAnnotations }}
      annotations: {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      automountServiceAccountToken: false
      enableServiceLinks: false
      # PID 1 is the pod's pause process, not the JVM, so a LoadTest's killPod fault can
      # SIGKILL the JVM through pods/exec and the kubelet restarts it in the same pod
      # (PID 1 ignores SIGKILL sent from inside its own PID namespace).
      shareProcessNamespace: true
      # preStop (leave the endpoints) + the drain + Spring's graceful shutdown + a margin for the JVM to exit.
      terminationGracePeriodSeconds: {{ add $service.shutdown.preStopSeconds ($service.shutdown.drainSeconds | default 0) $service.shutdown.timeoutSeconds 10 }}
      {{- with include "elves.imagePullSecrets" $root }}{{ . | nindent 6 }}{{ end }}
      securityContext: {{- include "elves.podSecurityContext" $service.runAsUser | nindent 8 }}
      containers:
        - name: {{ .name }}
          image: {{ include "elves.image" (dict "root" $root "image" $service.image) | quote }}
          imagePullPolicy: {{ $service.image.pullPolicy }}
          ports:
            {{- if $service.ports.http }}
            - name: http
              containerPort: {{ $service.ports.http }}
              protocol: TCP
            {{- end }}
            - name: management
              containerPort: {{ $service.ports.management }}
              protocol: TCP
          env: {{- include "elves.service.env" . | nindent 12 }}
          startupProbe: {{- include "elves.service.probe" (dict "path" "/actuator/health/liveness" "timing" $service.probes.startup) | nindent 12 }}
          readinessProbe: {{- include "elves.service.probe" (dict "path" "/actuator/health/readiness" "timing" $service.probes.readiness) | nindent 12 }}
          livenessProbe: {{- include "elves.service.probe" (dict "path" "/actuator/health/liveness" "timing" $service.probes.liveness) | nindent 12 }}
          lifecycle:
            preStop:
              # Keep serving while the endpoint removal reaches every proxy, then SIGTERM
              # starts Spring's graceful shutdown (no shell needed in the image).
              sleep:
                seconds: {{ $service.shutdown.preStopSeconds }}
          resources: {{- toYaml $service.resources | nindent 12 }}
          securityContext: {{- include "elves.containerSecurityContext" . | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if $service.scratch }}
            - name: scratch
              mountPath: /scratch
            {{- end }}
      volumes: {{- include "elves.tmpVolume" . | nindent 8 }}
        {{- with $service.scratch }}
        - name: scratch
          emptyDir:
            sizeLimit: {{ .sizeLimit }}
            {{- with .medium }}
            medium: {{ . }}
            {{- end }}
        {{- end }}
{{- end }}

{{/* elves.service.service: the ClusterIP Service of one service (its HTTP port, if any, and management). */}}
{{- define "elves.service.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "elves.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector: {{- include "elves.selectorLabels" . | nindent 4 }}
  ports:
    {{- if .service.ports.http }}
    - name: http
      port: {{ .service.ports.http }}
      targetPort: http
      protocol: TCP
    {{- end }}
    - name: management
      port: {{ .service.ports.management }}
      targetPort: management
      protocol: TCP
{{- end }}

{{/* elves.service.serviceMonitor: the ServiceMonitor scraping one service's /actuator/prometheus. */}}
{{- define "elves.service.serviceMonitor" -}}
{{- $monitors := .root.Values.monitoring.serviceMonitors }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "elves.monitoringLabels" . | nindent 4 }}
spec:
  selector:
    matchLabels: {{- include "elves.selectorLabels" . | nindent 6 }}
  namespaceSelector:
    matchNames: [{{ .root.Release.Namespace | quote }}]
  endpoints:
    - port: management
      path: /actuator/prometheus
      interval: {{ $monitors.interval }}
      scrapeTimeout: {{ $monitors.scrapeTimeout }}
{{- end }}

{{/* elves.pdb: a PodDisruptionBudget for one component; takes the usual dict plus "maxUnavailable". */}}
{{- define "elves.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .component }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "elves.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .maxUnavailable }}
  selector:
    matchLabels: {{- include "elves.selectorLabels" . | nindent 6 }}
{{- end }}
