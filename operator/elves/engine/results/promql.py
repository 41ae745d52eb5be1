"""Every PromQL query Elves asks, in one place: the engine, the dashboards and the chart's rules use these.

Where the series come from (names checked against k6 v1.8.1's remote-write output and
Prometheus 2.42 with native histograms):
- k6, by remote write: `k6_http_reqs_total` (counter; labels `endpoint` (the scripts'
  tag), `status`, `expected_response`, `scenario`, `testid`, ...), `k6_http_req_duration_seconds`
  (a native histogram, same labels), `k6_dropped_iterations_total`, `k6_iterations_total`,
  `k6_vus`, `k6_vus_max` (with `testid` only as the global tag the scripts and platforms
  set; without one, runs could not be told apart). k6 counters are cumulative from
  its start and every run has its own `testid`, so the last value over a run's window is
  the run's exact total: `max_over_time`, not `increase` (which extrapolates). A LoadTest
  that runs again repeats its test id: a run's window begins no earlier than the run
  (analysis.RunWindow.k6_begin).
- RabbitMQ's Prometheus plugin, `/metrics/detailed?family=queue_coarse_metrics`:
  `rabbitmq_detailed_queue_messages_ready` and `_unacked`, label `queue`. Depth = both.
  Per-queue message rates from the per-channel counters of the families
  `channel_queue_exchange_metrics` (`rabbitmq_detailed_queue_messages_published_total`,
  labels `channel`, `queue`, `exchange`) and `channel_queue_metrics`
  (`rabbitmq_detailed_channel_messages_delivered_ack_total`, `..._acked_total`, labels
  `channel`, `queue`): summed over channels, by `queue`.
- The services' Micrometer registries (`/actuator/prometheus`, common tag `application` =
  the deployment): `jvm_memory_used_bytes{area="heap"}`, `jvm_gc_pause_seconds_sum`
  (counter), `jvm_compilation_time_ms_total` (counter, the JIT's time) and `process_cpu_time_ns_total`
  (counter).
- kube-state-metrics (or the local supervisor, which serves the same series):
  `kube_deployment_spec_replicas`, `kube_deployment_status_replicas_ready` (label
  `deployment`; another system's StatefulSets: `kube_statefulset_replicas`,
  `kube_statefulset_status_replicas_ready`, label `statefulset`), `kube_pod_container_status_restarts_total`,
  `kube_pod_container_status_last_terminated_reason` (label `container` = the deployment).
- On a cluster only, the kubelets' cAdvisor (kube-prometheus-stack scrapes it):
  `container_cpu_usage_seconds_total` (labels `namespace`, `pod`, `container`), read for the
  k6 runner pods (k6-operator names their container `k6`), in the LoadTest's namespace.

Every query of the system's own series (its queues, deployments, containers and JVMs) takes
the system's namespace and selects only that namespace's series, so on a shared cluster
another team's Deployment called `gateway` (or its queue of the same name) never changes a
verdict. Prometheus gives each series its `namespace` label: kube-state-metrics carries the
object's namespace (its ServiceMonitor honours labels); a ServiceMonitor gives the services'
and RabbitMQ's series the namespace of their Service; the local Prometheus and supervisor put
the local system under `elves.constants.SYSTEM_NAMESPACE`. k6's series are told apart by
their test id instead (it begins with the LoadTest's namespace).

Windows are PromQL durations; `window_for(seconds)` makes one from a run's length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from elves.constants import DEPLOYMENTS, WORK_QUEUES, DEAD_LETTER_QUEUES

K6_REQUESTS = "k6_http_reqs_total"
K6_DURATION = "k6_http_req_duration_seconds"
# Parts of a request's duration: opening the connection, and waiting for the first byte.
K6_CONNECTING = "k6_http_req_connecting_seconds"
K6_WAITING = "k6_http_req_waiting_seconds"
K6_DROPPED = "k6_dropped_iterations_total"
K6_VUS = "k6_vus"
QUEUE_READY = "rabbitmq_detailed_queue_messages_ready"
QUEUE_UNACKED = "rabbitmq_detailed_queue_messages_unacked"
QUEUE_CONSUMERS = "rabbitmq_detailed_queue_consumers"
REPLICAS_DESIRED = "kube_deployment_spec_replicas"
REPLICAS_READY = "kube_deployment_status_replicas_ready"
STATEFULSET_REPLICAS_DESIRED = "kube_statefulset_replicas"  # label `statefulset`
SCRAPE_UP = "up"  # Prometheus' own: 1 when a scrape target answered its last scrape
STATEFULSET_REPLICAS_READY = "kube_statefulset_status_replicas_ready"
RESTARTS = "kube_pod_container_status_restarts_total"
LAST_TERMINATED = "kube_pod_container_status_last_terminated_reason"
LAST_EXIT_CODE = "kube_pod_container_status_last_terminated_exitcode"
# The exit code of a JVM that ends itself on an OutOfMemoryError (-XX:+ExitOnOutOfMemoryError,
# as the services run): Kubernetes reports it as reason Error, but it ran out of memory.
JVM_OOM_EXIT_CODE = 3
K6_RETRIES = "k6_elves_retries_total"  # the scripts' elves_retries counter (lib/http.js)
K6_TIMEOUT_ERROR_CODE = "1050"  # k6's error_code of a request that hit its timeout
JVM_HEAP = "jvm_memory_used_bytes"
JVM_GC_PAUSE = "jvm_gc_pause_seconds_sum"
JVM_COMPILATION = "jvm_compilation_time_ms_total"  # Micrometer's JvmCompilationMetrics, by `compiler`
PROCESS_CPU = "process_cpu_time_ns_total"
CONTAINER_CPU = "container_cpu_usage_seconds_total"
K6_RUNNER_CONTAINER = "k6"  # k6-operator's name for the runner pods' container

# A rate over less than a few scrapes/pushes is noise; 30 s spans six 5 s scrapes.
RATE_WINDOW = "30s"
# Resolution of subqueries that look for a maximum over a run.
SUBQUERY_STEP = "5s"
ALL_QUEUES = WORK_QUEUES + DEAD_LETTER_QUEUES


def window_for(seconds: float) -> str:
    """A PromQL range covering `seconds` (rounded up to whole seconds, at least 1s)."""
    return f"{max(1, math.ceil(seconds))}s"


def window_since(seconds: float) -> str:
    """A PromQL range that reaches back no further than `seconds` (whole milliseconds, rounded
    down): for a range that must not begin before a moment."""
    return f"{max(1, math.floor(seconds * 1000))}ms"


def quote(value: str) -> str:
    """A PromQL string literal."""
    return '"' + literal_text(value) + '"'


def literal_text(value: str) -> str:
    """`value` as it goes between the double quotes of a PromQL string literal (backslashes and
    double quotes escaped, line breaks spelled out), so it can never end the literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return escaped.replace("\n", "\\n").replace("\r", "\\r")


def regex_of(values: Iterable[str]) -> str:
    """An anchored alternation matching exactly these values (PromQL regexes are anchored)."""
    import re

    return "|".join(re.escape(v) for v in values)


def selector(metric: str, **labels: str | None) -> str:
    """`metric{label="value"}`; a value starting with `~` matches as a regex (`label=~"..."`)."""
    parts = []
    for name, value in labels.items():
        if value is None:
            continue
        if value.startswith("~"):
            parts.append(f"{name}=~{quote(value[1:])}")
        else:
            parts.append(f"{name}={quote(value)}")
    return f"{metric}{{{','.join(parts)}}}" if parts else metric


def system_selector(metric: str, namespace: str, **labels: str | None) -> str:
    """`selector` of one of the system's own series, always limited to its namespace (a value
    starting with `~` matches as a regex, as Grafana's variables need)."""
    if not namespace:
        raise ValueError(f"a query of the system's series ({metric or labels}) needs the system's namespace")
    return selector(metric, namespace=namespace, **labels)


def _by(labels: str | None) -> str:
    return f" by ({labels})" if labels else ""


# --- k6 (load generator) -------------------------------------------------------------

def k6_requests(test_id: str, window: str, endpoint: str | None = None, by: str | None = "endpoint") -> str:
    """Requests k6 made in a run, per endpoint (exact: last value of k6's cumulative counter)."""
    return f"sum{_by(by)} (max_over_time({selector(K6_REQUESTS, testid=test_id, endpoint=endpoint)}[{window}]))"


def k6_requests_ok(test_id: str, window: str, endpoint: str | None = None, by: str | None = "endpoint") -> str:
    """2xx answers k6 received in a run, per endpoint: the ledger's "accepted"."""
    sel = selector(K6_REQUESTS, testid=test_id, endpoint=endpoint, status="~2..")
    return f"sum{_by(by)} (max_over_time({sel}[{window}]))"


def k6_requests_failed(test_id: str, window: str, endpoint: str | None = None, by: str | None = "endpoint") -> str:
    """Requests k6 counted as failed (not an expected response: 4xx/5xx, timeouts), per endpoint."""
    sel = selector(K6_REQUESTS, testid=test_id, endpoint=endpoint, expected_response="false")
    return f"sum{_by(by)} (max_over_time({sel}[{window}]))"


def k6_failures(test_id: str, window: str) -> str:
    """Failed requests of a run by endpoint and why: the answer's `status`, or for a request
    without an answer (status 0) k6's `error_code` (an EOF, a refused connection, a timeout)."""
    sel = selector(K6_REQUESTS, testid=test_id, expected_response="false")
    return f"sum by (endpoint, status, error_code) (max_over_time({sel}[{window}]))"


def k6_retries(test_id: str, window: str, by: str | None = "endpoint") -> str:
    """Attempts beyond the first that the scripts made in a run, per endpoint."""
    return f"sum{_by(by)} (max_over_time({selector(K6_RETRIES, testid=test_id)}[{window}]))"


def k6_requests_ok_so_far(test_id: str, window: str) -> str:
    """2xx answers since the run began, as of the evaluation time (for rates over part of a run)."""
    return f"sum(max_over_time({selector(K6_REQUESTS, testid=test_id, status='~2..')}[{window}]))"


def k6_dropped_iterations(test_id: str, window: str) -> str:
    """Iterations k6 could not start for want of a VU: the harness fell short, not the system."""
    return f"sum(max_over_time({selector(K6_DROPPED, testid=test_id)}[{window}]))"


def k6_dropped_iterations_so_far(test_id: str) -> str:
    """Iterations dropped since the run began (k6's cumulative counter, for timelines)."""
    return f"sum({selector(K6_DROPPED, testid=test_id)})"


def k6_duration_histograms(test_id: str, window: str) -> str:
    """The raw cumulative latency histograms of a run: every sample k6 pushed within the window.

    Prometheus 2.42 has no last_over_time for native histograms, and k6's stale markers
    hide its series from instant selectors (and subqueries) once it stops, so the engine
    reads the raw samples (in chunks), keeps each series' last (largest) histogram and
    merges them itself: exact percentiles over all runners, where increase() would
    extrapolate and miss the first push."""
    return f"{selector(K6_DURATION, testid=test_id)}[{window}]"


def k6_request_rate(test_id: str, by: str | None = "endpoint", rate_window: str = RATE_WINDOW) -> str:
    """Requests per second k6 makes now (for plots and the live line)."""
    return f"sum{_by(by)} (rate({selector(K6_REQUESTS, testid=test_id)}[{rate_window}]))"


def k6_error_rate(test_id: str, rate_window: str = RATE_WINDOW, endpoint: str | None = None) -> str:
    """Share of requests failing now, over all endpoints or one."""
    failed = selector(K6_REQUESTS, testid=test_id, endpoint=endpoint, expected_response="false")
    every = selector(K6_REQUESTS, testid=test_id, endpoint=endpoint)
    return f"(sum(rate({failed}[{rate_window}])) or vector(0)) / sum(rate({every}[{rate_window}]))"


def k6_latency_quantile(quantile: float, test_id: str, by: str | None = None, endpoint: str | None = None,
                        rate_window: str = RATE_WINDOW) -> str:
    """A latency percentile now (seconds), over all runners, from k6's native histograms."""
    sel = selector(K6_DURATION, testid=test_id, endpoint=endpoint)
    return f"histogram_quantile({quantile:g}, sum{_by(by)} (rate({sel}[{rate_window}])))"


def k6_mean_latency(test_id: str, window: str, by: str | None = "endpoint", endpoint: str | None = None) -> str:
    """Mean latency (seconds) over a window, from the histograms' sums and counts."""
    sel = selector(K6_DURATION, testid=test_id, endpoint=endpoint)
    return (f"histogram_sum(sum{_by(by)} (increase({sel}[{window}])))"
            f" / histogram_count(sum{_by(by)} (increase({sel}[{window}])))")


def k6_vus(test_id: str | None = None) -> str:
    """VUs active now over all runners of a run, or of every run when no test id is given
    (k6 carries the global `testid` tag here too). An open model's scenarios pre-allocate their
    VUs and add one, up to maxVUs, only when an arrival found none free; k6 counts one as active
    only while it runs an iteration (its arrival-rate pool), sampled once a second."""
    return f"sum({selector(K6_VUS, testid=test_id)})"


def k6_vus_max(test_id: str, window: str) -> str:
    """The most VUs active at once over a window, all runners together. Stepped every second,
    not SUBQUERY_STEP: k6 pushes its gauge every few seconds, and on a run of a few seconds no
    5 s step (aligned to the clock, not to the run) may fall after the first push."""
    return f"max_over_time(({k6_vus(test_id)})[{window}:1s])"


def k6_samples_present(test_id: str, window: str) -> str:
    """How many k6 request series a run wrote: 0 means remote write never arrived."""
    return f"count(max_over_time({selector(K6_REQUESTS, testid=test_id)}[{window}]))"


# --- RabbitMQ queues -----------------------------------------------------------------

def queue_depth(queues: Iterable[str] | None = None, *, namespace: str) -> str:
    """Messages in each queue (ready + unacknowledged), by `queue`; all Elves queues and DLQs by default."""
    both = system_selector("", namespace, __name__=f"~{QUEUE_READY}|{QUEUE_UNACKED}",
                           queue="~" + regex_of(queues or ALL_QUEUES))
    return f"sum by (queue) ({both})"


def queue_messages_ready(queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Messages ready for delivery in each queue, by `queue`: what KEDA's RabbitMQ scaler (AMQP,
    QueueLength) compares with its target per replica."""
    return f"sum by (queue) ({system_selector(QUEUE_READY, namespace, queue='~' + regex_of(queues))})"


def queue_depth_max(window: str, queues: Iterable[str] | None = None, *, namespace: str) -> str:
    """The deepest each queue got over a window."""
    return deepest_over(queue_depth(queues, namespace=namespace), window)


def deepest_over(depth: str, window: str) -> str:
    """The most each series of `depth` (a depth per queue: Elves' or a target's own PromQL) held over a window."""
    return f"max_over_time(({depth})[{window}:{SUBQUERY_STEP}])"


def deepest_queue(queues: Iterable[str] | None = None, *, namespace: str) -> str:
    """The one queue holding the most messages now."""
    return f"topk(1, {queue_depth(queues, namespace=namespace)})"


def queue_depth_deepest(queues: Iterable[str] | None = None, *, namespace: str) -> str:
    """The depth of whichever queue is deepest now (one number)."""
    return f"max({queue_depth(queues, namespace=namespace)})"


def queue_depth_scraped_at(queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """When the queues' depth was last scraped (epoch seconds, the oldest of them)."""
    return f"min(timestamp({system_selector(QUEUE_READY, namespace, queue='~' + regex_of(queues))}))"


def queue_depth_total(queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Messages waiting in the work queues together: 0 means the system has drained."""
    return f"sum({queue_depth(queues, namespace=namespace)})"


def queue_consumers(queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Consumers on each queue, by `queue`: 0 with messages waiting means nothing drains it."""
    return f"sum by (queue) ({system_selector(QUEUE_CONSUMERS, namespace, queue='~' + regex_of(queues))})"


# A Kafka consumer group's lag on a partition, as kafka_exporter and Elves' lag reader
# (elves.kafka.lag) name it: labels consumergroup, topic, partition. Read in the target's namespace,
# as RabbitMQ's queues are: the exporter runs (and is scraped) beside the system it reports on.
KAFKA_LAG = "kafka_consumergroup_lag"


def _kafka_lag_series(pairs: Iterable[tuple[str, str]], namespace: str) -> str:
    """The lag series of each (group, topic) in `namespace`."""
    return " or ".join(system_selector(KAFKA_LAG, namespace, consumergroup=group, topic=topic)
                       for group, topic in pairs)


def kafka_lag(pairs: Iterable[tuple[str, str]], *, namespace: str) -> str:
    """Each consumer group's lag on a topic (summed over its partitions), as a depth per `queue`
    named `<group>:<topic>`."""
    joined = f'label_join({_kafka_lag_series(pairs, namespace)}, "queue", ":", "consumergroup", "topic")'
    return f"sum by (queue) ({joined})"


def kafka_lag_scraped_at(pairs: Iterable[tuple[str, str]], *, namespace: str) -> str:
    """When the lag of these groups and topics was last read (epoch seconds, the oldest of them)."""
    return f"min(timestamp({_kafka_lag_series(pairs, namespace)}))"


QUEUE_PUBLISHED = "rabbitmq_detailed_queue_messages_published_total"
QUEUE_DELIVERED = "rabbitmq_detailed_channel_messages_delivered_ack_total"
QUEUE_ACKED = "rabbitmq_detailed_channel_messages_acked_total"


def _queue_rate(metric: str, rate_window: str, queues: Iterable[str], namespace: str) -> str:
    return f"sum by (queue) (rate({system_selector(metric, namespace, queue='~' + regex_of(queues))}[{rate_window}]))"


def queue_publish_rate(rate_window: str = RATE_WINDOW, queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Messages routed into each queue per second, by `queue`."""
    return _queue_rate(QUEUE_PUBLISHED, rate_window, queues, namespace)


def queue_deliver_rate(rate_window: str = RATE_WINDOW, queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Messages each queue delivered to consumers per second (manual ack; redeliveries too), by `queue`."""
    return _queue_rate(QUEUE_DELIVERED, rate_window, queues, namespace)


def queue_ack_rate(rate_window: str = RATE_WINDOW, queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Messages consumers acknowledged per second, by `queue`."""
    return _queue_rate(QUEUE_ACKED, rate_window, queues, namespace)


def queue_pileup_rate(rate_window: str = RATE_WINDOW, queues: Iterable[str] = WORK_QUEUES, *, namespace: str) -> str:
    """Published minus acknowledged per second, by `queue`: above 0 the queue grows. A queue
    nobody has acknowledged from yet counts its whole publish rate."""
    published = queue_publish_rate(rate_window, queues, namespace=namespace)
    return f"{published} - ({queue_ack_rate(rate_window, queues, namespace=namespace)} or {published} * 0)"


# --- deployments ---------------------------------------------------------------------

def _deployment_regex(deployments: Iterable[str]) -> str:
    # On a cluster the chart may prefix deployment names with the release ("elves-ingestor").
    return f"(?:.+-)?({regex_of(deployments)})"


def _by_deployment(expr: str, deployments: Iterable[str]) -> str:
    """`expr` with its `deployment` label reduced to the bare name (gateway, registry, ingestor)."""
    return f'label_replace({expr}, "deployment", "$1", "deployment", {quote(_deployment_regex(deployments))})'


def replicas_desired(deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Replicas each deployment is asked to run, by `deployment`."""
    sel = system_selector(REPLICAS_DESIRED, namespace, deployment="~" + _deployment_regex(deployments))
    return f"max by (deployment) ({_by_deployment(sel, deployments)})"


def replicas_ready(deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Replicas of each deployment that are ready, by `deployment`."""
    sel = system_selector(REPLICAS_READY, namespace, deployment="~" + _deployment_regex(deployments))
    return f"max by (deployment) ({_by_deployment(sel, deployments)})"


def _workload_replicas(metrics: dict[str, str], kinds: dict[str, str], namespace: str) -> str:
    """Another system's workloads' replicas, by `workload`: each kind's series (`metrics`: kind ->
    kube-state-metrics' series, labelled with the lower-case kind) of the names of that kind."""
    parts = []
    for kind, metric in metrics.items():
        names = sorted(name for name, of in kinds.items() if of == kind)
        if names:
            label = kind.lower()
            sel = system_selector(metric, namespace, **{label: "~" + regex_of(names)})
            parts.append(f'max by (workload) (label_replace({sel}, "workload", "$1", {quote(label)}, "(.*)"))')
    return " or ".join(parts)


def workload_replicas_desired(kinds: dict[str, str], *, namespace: str) -> str:
    """Replicas another system's workloads (name -> Deployment or StatefulSet) are asked to run, by `workload`."""
    return _workload_replicas({"Deployment": REPLICAS_DESIRED, "StatefulSet": STATEFULSET_REPLICAS_DESIRED}, kinds,
                              namespace)


def workload_replicas_ready(kinds: dict[str, str], *, namespace: str) -> str:
    """Ready replicas of another system's workloads (name -> Deployment or StatefulSet), by `workload`."""
    return _workload_replicas({"Deployment": REPLICAS_READY, "StatefulSet": STATEFULSET_REPLICAS_READY}, kinds,
                              namespace)


def _scraped(workloads: Iterable[str], namespace: str) -> str:
    return system_selector(SCRAPE_UP, namespace, workload="~" + regex_of(workloads))


def scraped_replicas_desired(workloads: Iterable[str], *, namespace: str) -> str:
    """Where no kube-state-metrics reports another system's workloads (the local mode): the scrape
    targets listed for each, by their `workload` label, as its replicas, by `workload`."""
    return f"count by (workload) ({_scraped(workloads, namespace)})"


def scraped_replicas_ready(workloads: Iterable[str], *, namespace: str) -> str:
    """As scraped_replicas_desired: those of them that answered their last scrape, by `workload`."""
    return f"sum by (workload) ({_scraped(workloads, namespace)})"


def restarts_total(deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Container restarts so far, by `container` (= deployment): steps up at each crash or kill."""
    return f"sum by (container) ({system_selector(RESTARTS, namespace, container='~' + regex_of(deployments))})"


def _rise_within(window: str, sel: str) -> str:
    """Per pod, how far its restart counter `sel` rose within the window; a pod first seen inside
    the window counts from 0 (it is new, and kube-state-metrics may first see it late)."""
    return f"(max_over_time({sel}[{window}]) - (({sel} offset {window}) or (max_over_time({sel}[{window}]) * 0)))"


def _out_of_memory_rise(window: str, namespace: str, **match: str) -> str:
    """Per pod and container, the restarts within a window of containers that ran out of memory:
    the last termination was OOMKilled (the kernel) or exit code 3 (the JVM's
    ExitOnOutOfMemoryError, which Kubernetes calls Error).

    kube-state-metrics keeps only the last termination per pod, so a pod that ran out of
    memory and later crashed otherwise counts all its restarts in the window as OOM kills."""
    killed = system_selector(LAST_TERMINATED, namespace, **match, reason="OOMKilled")
    exit_code = system_selector(LAST_EXIT_CODE, namespace, **match)
    out_of_memory = (f"(max by (namespace, pod, container) (max_over_time({killed}[{window}]))"
                     f" or max by (namespace, pod, container) (max_over_time(({exit_code} == bool {JVM_OOM_EXIT_CODE})"
                     f"[{window}:{SUBQUERY_STEP}])))")
    rise = _rise_within(window, system_selector(RESTARTS, namespace, **match))
    return f"{rise} * on (namespace, pod, container) group_left() {out_of_memory}"


def restarts(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Restarts within a window, by `container` (= deployment): per pod the counter's rise, then summed."""
    sel = system_selector(RESTARTS, namespace, container="~" + regex_of(deployments))
    return f"sum by (container) ({_rise_within(window, sel)})"


def oom_kills(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Restarts within a window of pods that ran out of memory, by `container` (= deployment)."""
    return f"sum by (container) ({_out_of_memory_rise(window, namespace, container='~' + regex_of(deployments))})"


def _pods_of(workloads: Iterable[str]) -> str:
    """Another system's workloads' pods, by name (their containers may be named anything): a
    Deployment's are <name>-<ReplicaSet hash>-<suffix>, a StatefulSet's <name>-<ordinal>."""
    return f"({regex_of(workloads)})-(?:[a-z0-9]+-[a-z0-9]+|[0-9]+)"


def _by_workload(expr: str, workloads: Iterable[str]) -> str:
    return f'sum by (workload) (label_replace({expr}, "workload", "$1", "pod", {quote(_pods_of(workloads))}))'


def workload_restarts(window: str, workloads: Iterable[str], *, namespace: str) -> str:
    """Restarts within a window of another system's workloads, by `workload` (from the pods' names)."""
    return _by_workload(_rise_within(window, system_selector(RESTARTS, namespace, pod="~" + _pods_of(workloads))),
                        workloads)


def workload_oom_kills(window: str, workloads: Iterable[str], *, namespace: str) -> str:
    """Restarts within a window of another system's workloads' containers that ran out of memory, by `workload`."""
    return _by_workload(_out_of_memory_rise(window, namespace, pod="~" + _pods_of(workloads)), workloads)


# --- the services' JVMs --------------------------------------------------------------

def _application(metric: str, deployments: Iterable[str], namespace: str, **labels: str) -> str:
    return system_selector(metric, namespace, application="~" + regex_of(deployments), **labels)


def jvm_heap_max(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """The most heap any one replica had in use over a window, by `application` (= deployment)."""
    heap = f"sum by (application, pod, instance) ({_application(JVM_HEAP, deployments, namespace, area='heap')})"
    return f"max by (application) (max_over_time(({heap})[{window}:{SUBQUERY_STEP}]))"


def jvm_gc_seconds(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """Seconds spent in garbage-collection pauses within a window, all replicas, by `application`."""
    return f"sum by (application) (increase({_application(JVM_GC_PAUSE, deployments, namespace)}[{window}]))"


def jvm_compilation_ms_per_second(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """The JIT's compilation time per second over a window, of the busiest JVM (replica) of each
    deployment, by `application`: a replica still compiling is cold even when the others are not."""
    per_jvm = f"sum without (compiler) (rate({_application(JVM_COMPILATION, deployments, namespace)}[{window}]))"
    return f"max by (application) ({per_jvm})"


def cpu_cores(window: str, deployments: Iterable[str] = DEPLOYMENTS, *, namespace: str) -> str:
    """CPU used over a window, in cores (mean), all replicas together, by `application`."""
    return f"sum by (application) (rate({_application(PROCESS_CPU, deployments, namespace)}[{window}])) / 1e9"


def k6_runner_cpu_cores(pods: Iterable[str], window: str, *, namespace: str) -> str:
    """Each k6 runner pod's mean CPU over a window, in cores, by `pod` (cluster only: cAdvisor's
    series; the runners run in the LoadTest's namespace, which `namespace` names)."""
    usage = system_selector(CONTAINER_CPU, namespace, pod="~" + regex_of(pods), container=K6_RUNNER_CONTAINER)
    return f"sum by (pod) (rate({usage}[{window}]))"
