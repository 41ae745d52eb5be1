{{/* elves.rabbitmq.configData: the files of /etc/rabbitmq (the image's defaults are replaced, so they are repeated here). */}}
{{- define "elves.rabbitmq.configData" -}}
{{- $rabbitmq := .Values.rabbitmq -}}
definitions.json.in: |
  {{- include "elves.rabbitmq.definitions" . | nindent 2 }}
enabled_plugins: |
  [{{ join "," $rabbitmq.plugins }}].
rabbitmq.conf: |
  listeners.tcp.default = 5672
  # The services' users and their permissions, written at boot by the init container from
  # definitions.json.in and their Secrets; with definitions to load, no default user is made.
  load_definitions = /var/lib/rabbitmq-definitions/definitions.json
  prometheus.tcp.port = 15692
  {{- if has "rabbitmq_management" $rabbitmq.plugins }}
  management.tcp.port = 15672
  {{- end }}
  # Logs go to the container's stdout; the root filesystem is read-only.
  log.console = true
  log.console.level = info
  log.file = false
  # The container limit, not the node's memory, is what RabbitMQ may use.
  total_memory_available_override_value = {{ include "elves.bytes" $rabbitmq.resources.limits.memory }}
  vm_memory_high_watermark.relative = {{ $rabbitmq.memoryHighWatermark }}
  # Metrics come from rabbitmq_prometheus; the management UI's own collection is overhead.
  management_agent.disable_metrics_collector = true
  {{- with $rabbitmq.extraConfiguration }}
  {{- . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* elves.rabbitmq.definitions: RabbitMQ's definitions with a placeholder per password (files/data-plane.json: a user per service, no tags, limited to its queues, and KEDA's, which may only open the vhost) and the policy bounding every `<queue>.dlq` (elves.constants.DEAD_LETTER_POLICY). RabbitMQ loads them at every boot, so the policy also reaches queues declared before it existed; no hook or CLI call has to race the node's start. */}}
{{- define "elves.rabbitmq.definitions" -}}
{{- $users := (include "elves.dataPlane" . | fromJson).rabbitmq }}
{{- $list := list }}
{{- $permissions := list }}
{{- range $name := list "gateway" "registry" "ingestor" "keda" }}
{{- $user := get $users $name }}
{{- $list = append $list (dict "name" $user.user "password" (printf "__PASSWORD_%s__" $name) "tags" "") }}
{{- $permissions = append $permissions (dict "user" $user.user "vhost" "/" "configure" $user.configure "write" $user.write "read" $user.read) }}
{{- end }}
{{- $bound := .Values.rabbitmq.deadLetterBound }}
{{- $deadLetterBound := dict "max-length" (int64 $bound.maxLength) "max-length-bytes" (include "elves.bytes" $bound.maxBytes | int64) "overflow" "reject-publish" }}
{{- $policy := dict "vhost" "/" "name" "elves-dead-letter-bound" "pattern" "^elves\\..+\\.dlq$" "apply-to" "queues" "priority" 0 "definition" $deadLetterBound }}
{{- dict "vhosts" (list (dict "name" "/")) "users" $list "permissions" $permissions "policies" (list $policy) | toPrettyJson }}
{{- end }}
