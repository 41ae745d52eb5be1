{{- /*
Replica autoscaling of the services: KEDA on the length of a work queue for the services that
consume one (files/data-plane.json scaledOnQueue: elves.constants.SCALED_ON_QUEUE), the HPA on
CPU for the others. The operator builds the same objects for a LoadTest's
spec.system.autoscaling (elves.k8s.autoscalers; tests/unit/chart/test_chart_autoscaling.py
holds the two to one shape).
*/}}

{{/* elves.autoscaling.queue: the work queue KEDA scales a service on ("" = none: the HPA on CPU); takes (dict "root" $ "name" "ingestor"). */}}
{{- define "elves.autoscaling.queue" -}}
{{- get (include "elves.dataPlane" .root | fromJson).scaledOnQueue .name | default "" }}
{{- end }}

{{/* elves.autoscaling.api: the API the service's autoscaler needs (keda.sh/v1alpha1 or autoscaling/v2); takes (dict "root" $ "name" "..."). */}}
{{- define "elves.autoscaling.api" -}}
{{- if include "elves.autoscaling.queue" . }}keda.sh/v1alpha1{{ else }}autoscaling/v2{{ end }}
{{- end }}

{{/* elves.autoscaled: "true" when the service's autoscaler is switched on and the cluster serves its API (the Deployment then leaves spec.replicas to it), else empty; takes (dict "root" $ "name" "..." "service" ...). */}}
{{- define "elves.autoscaled" -}}
{{- $autoscaling := .service.autoscaling | default dict }}
{{- if and $autoscaling.enabled (.root.Capabilities.APIVersions.Has (include "elves.autoscaling.api" .)) }}true{{ end }}
{{- end }}

{{/* elves.keda: "true" when the cluster serves keda.sh/v1alpha1 and RabbitMQ is the release's (KEDA's read-only user lives there), else empty. */}}
{{- define "elves.keda" -}}
{{- if and .Values.system.enabled .Values.rabbitmq.enabled (.Capabilities.APIVersions.Has "keda.sh/v1alpha1") }}true{{ end }}
{{- end }}

{{/* elves.keda.triggerAuthenticationName: the TriggerAuthentication with KEDA's RabbitMQ user (the operator's ELVES_KEDA_TRIGGER_AUTHENTICATION). */}}
{{- define "elves.keda.triggerAuthenticationName" -}}
{{- printf "%s-keda-rabbitmq" (include "elves.fullname" .) }}
{{- end }}

{{/* elves.keda.rabbitmqHost: the AMQP address KEDA reads queue lengths from, without credentials (those come from the TriggerAuthentication). */}}
{{- define "elves.keda.rabbitmqHost" -}}
{{- printf "amqp://%s:%s" (include "elves.rabbitmq.host" .) (include "elves.rabbitmq.port" .) }}
{{- end }}

{{/* elves.autoscaling.errors: the autoscaling values the schema cannot check, as a JSON list of messages (for elves.validateValues). */}}
{{- define "elves.autoscaling.errors" -}}
{{- $errors := list }}
{{- range $name, $service := .Values.services }}
{{- with $service.autoscaling }}
{{- if .enabled }}
{{- if lt (int .maxReplicas) (int .minReplicas) }}
{{- $errors = append $errors (printf "services.%s.autoscaling.maxReplicas (%v) is below minReplicas (%v)" $name .maxReplicas .minReplicas) }}
{{- end }}
{{- if include "elves.autoscaling.queue" (dict "root" $ "name" $name) }}
{{- if not $.Values.rabbitmq.enabled }}
{{- $errors = append $errors (printf "services.%s.autoscaling needs rabbitmq.enabled: KEDA reads the queue length as the chart's read-only RabbitMQ user, which an external RabbitMQ does not have" $name) }}
{{- end }}
{{- else if not (dig "requests" "cpu" "" $service.resources) }}
{{- $errors = append $errors (printf "services.%s.autoscaling scales on CPU utilisation, a share of the CPU request: set services.%s.resources.requests.cpu" $name $name) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- $errors | toJson }}
{{- end }}

{{/* elves.autoscaling.scaledObject: the KEDA ScaledObject of one service, on its work queue's length; takes (dict "root" $ "name" "..." "service" ...). */}}
{{- define "elves.autoscaling.scaledObject" -}}
{{- $root := .root }}
{{- $autoscaling := .service.autoscaling }}
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels: {{- include "elves.labels" (dict "root" $root "component" .name) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .name }}
  minReplicaCount: {{ $autoscaling.minReplicas }}
  maxReplicaCount: {{ $autoscaling.maxReplicas }}
  pollingInterval: {{ $autoscaling.pollingIntervalSeconds }}
  # KEDA's cooldown only delays scaling to zero; the HPA it makes waits as long before removing
  # any replica, so one setting says how long a shorter queue must last.
  cooldownPeriod: {{ $autoscaling.cooldownSeconds }}
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown:
          stabilizationWindowSeconds: {{ $autoscaling.cooldownSeconds }}
  triggers:
    - type: rabbitmq
      metadata:
        protocol: amqp
        host: {{ include "elves.keda.rabbitmqHost" $root | quote }}
        vhostName: /
        queueName: {{ include "elves.autoscaling.queue" . | quote }}
        mode: QueueLength
        value: {{ $autoscaling.messagesPerReplica | toString | quote }}
      authenticationRef:
        name: {{ include "elves.keda.triggerAuthenticationName" $root }}
{{- end }}

{{/* elves.autoscaling.hpa: the HorizontalPodAutoscaler of one service, on CPU utilisation; takes (dict "root" $ "name" "..." "service" ...). */}}
{{- define "elves.autoscaling.hpa" -}}
{{- $autoscaling := .service.autoscaling }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "elves.labels" (dict "root" .root "component" .name) | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ .name }}
  minReplicas: {{ $autoscaling.minReplicas }}
  maxReplicas: {{ $autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $autoscaling.cpuUtilization }}
{{- end }}
