{{/* elves.networkPolicy.fromMonitoring: an ingress rule letting the monitoring namespace reach one named port; takes (dict "root" $ "port" "..."). */}}
{{- define "elves.networkPolicy.fromMonitoring" -}}
# Prometheus scrapes from the monitoring namespace.
- from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .root.Values.monitoring.namespace | quote }}
  ports:
    - port: {{ .port }}
      protocol: TCP
{{- end }}

{{/* elves.networkPolicy.loadGenerators: the peers that are k6 runner pods: by their labels, in networkPolicy.loadGeneratorNamespaces (or any namespace). */}}
{{- define "elves.networkPolicy.loadGenerators" -}}
{{- $np := .Values.networkPolicy }}
{{- if $np.loadGeneratorNamespaces }}
- namespaceSelector:
    matchExpressions:
      - key: kubernetes.io/metadata.name
        operator: In
        values: {{ $np.loadGeneratorNamespaces | toJson }}
  podSelector:
    matchLabels: {{- toYaml $np.loadGeneratorPodLabels | nindent 6 }}
{{- else }}
- namespaceSelector: {}
  podSelector:
    matchLabels: {{- toYaml $np.loadGeneratorPodLabels | nindent 6 }}
{{- end }}
{{- end }}

{{/* elves.networkPolicy.toDns: an egress rule to the cluster DNS (networkPolicy.dns). */}}
{{- define "elves.networkPolicy.toDns" -}}
- to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .Values.networkPolicy.dns.namespace | quote }}
      podSelector:
        matchLabels: {{- toYaml .Values.networkPolicy.dns.podLabels | nindent 10 }}
  ports:
    {{- range .Values.networkPolicy.dns.ports }}
    - port: {{ . }}
      protocol: UDP
    - port: {{ . }}
      protocol: TCP
    {{- end }}
{{- end }}

{{/* elves.networkPolicy.toRabbitmq: an egress rule to AMQP: the release's RabbitMQ pod, or externalRabbitmq's port anywhere. */}}
{{- define "elves.networkPolicy.toRabbitmq" -}}
{{- if .Values.rabbitmq.enabled }}
- to:
    - podSelector:
        matchLabels: {{- include "elves.selectorLabels" (dict "root" . "component" "rabbitmq") | nindent 10 }}
  ports:
    - port: 5672
      protocol: TCP
{{- else }}
# The external RabbitMQ: its address is not known to the chart, its port is.
- ports:
    - port: {{ .Values.externalRabbitmq.port }}
      protocol: TCP
{{- end }}
{{- end }}

{{/* elves.networkPolicy.toPostgresql: an egress rule to PostgreSQL: the release's pod, or externalPostgresql's port anywhere. */}}
{{- define "elves.networkPolicy.toPostgresql" -}}
{{- if .Values.postgresql.enabled }}
- to:
    - podSelector:
        matchLabels: {{- include "elves.selectorLabels" (dict "root" . "component" "postgres") | nindent 10 }}
  ports:
    - port: 5432
      protocol: TCP
{{- else }}
# The external PostgreSQL: its address is not known to the chart, its port is.
- ports:
    - port: {{ .Values.externalPostgresql.port }}
      protocol: TCP
{{- end }}
{{- end }}
