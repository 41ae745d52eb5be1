"""Writes the chart's Grafana dashboards (the *.json beside this file) and its alert queries
(../alerts/queries.yaml, read by templates/prometheusrule.yaml) from the engine's PromQL.

The queries of the verdict, the report, these dashboards and the alerts come from one module,
elves.engine.results.promql, so a metric renamed there is renamed here too. Grafana variables
stand in for the run-specific arguments: `$testid` for a test id, `$namespace` for the
system's namespace (every panel of the system's series selects it: one system per namespace
on a shared cluster), `$__rate_interval` for rate windows. The alerts select
RELEASE_NAMESPACE, which templates/prometheusrule.yaml replaces with the release's namespace.
Queries the engine never asks (JVM, GC, listener, pool) are written here.

    .venv/bin/python charts/elves/dashboards/build.py          # rewrite the generated files
    .venv/bin/python charts/elves/dashboards/build.py --check  # exit 1 when they are stale

tests/unit/chart/test_chart_dashboards.py runs the check, so a stale dashboard or alert fails the unit tier.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from elves.constants import DEAD_LETTER_QUEUES, DEPLOYMENTS, SCALED_ON_QUEUE, WORK_QUEUES
from elves.engine.results import promql, warmup

HERE = Path(__file__).resolve().parent
ALERT_QUERIES = HERE.parent / "alerts" / "queries.yaml"
RATE = "$__rate_interval"
TEST_ID = "~$testid"  # promql.selector: a leading ~ makes a regex match (the variable may be "All")
SERVICES = "~$application"
NAMESPACE = "$namespace"  # one system at a time: a single-valued variable
# What the alerts select as the namespace; the chart's template puts the release's namespace
# for it (never a real namespace: those are lower-case DNS labels).
RELEASE_NAMESPACE = "RELEASE_NAMESPACE"
# Grafana annotations the operator posts for LoadTest phases and faults carry this tag.
ANNOTATION_TAG = "elves"


# --- panel builders -------------------------------------------------------------------

def target(expr: str, legend: str = "", ref: str = "A") -> dict:
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"}, "expr": expr,
            "legendFormat": legend, "refId": ref, "range": True}


def timeseries(title: str, targets: list[dict], unit: str = "short", description: str = "",
               stack: bool = False, step: bool = False, overrides: list[dict] = ()) -> dict:
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "fieldConfig": {
            "defaults": {
                "unit": unit,
                "custom": {
                    "drawStyle": "line",
                    "lineInterpolation": "stepAfter" if step else "linear",
                    "fillOpacity": 10,
                    "showPoints": "never",
                    "stacking": {"mode": "normal" if stack else "none", "group": "A"},
                },
            },
            "overrides": list(overrides),
        },
        "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["max", "lastNotNull"]},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": [dict(t, refId=chr(ord("A") + i)) for i, t in enumerate(targets)],
    }


def by_name(pattern: str, properties: dict) -> dict:
    """A field override for the series whose display name matches `pattern` (a regex)."""
    return {"matcher": {"id": "byRegexp", "options": pattern},
            "properties": [{"id": name, "value": value} for name, value in properties.items()]}


DASHED_DESIRED = by_name(".* desired", {"custom.lineStyle": {"fill": "dash", "dash": [10, 10]}})


def row(title: str) -> dict:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def layout(panels: list[dict]) -> list[dict]:
    """Two panels per line, rows across the full width; ids and positions in order."""
    x = y = 0
    placed = []
    for number, panel in enumerate(panels, start=1):
        if panel["type"] == "row":
            if x:
                x, y = 0, y + 8
            panel = dict(panel, gridPos={"h": 1, "w": 24, "x": 0, "y": y})
            y += 1
        else:
            panel = dict(panel, gridPos={"h": 8, "w": 12, "x": x, "y": y})
            x, y = (12, y) if x == 0 else (0, y + 8)
        placed.append(dict(panel, id=number))
    return placed


def datasource_variable() -> dict:
    return {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1}


def query_variable(name: str, label: str, query: str, include_all: bool = True) -> dict:
    return {"name": name, "label": label, "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": name},
            "refresh": 2, "sort": 2, "includeAll": include_all, "multi": include_all,
            "allValue": ".*", "current": {}, "hide": 0}


def annotations(extra: list[dict] = ()) -> dict:
    # Grafana adds its built-in "Annotations & Alerts" itself (its `builtIn` key is not in the
    # published schema that tests/unit/chart/test_dashboard_schema.py checks against).
    return {"list": [
        {"datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": False,
         "iconColor": "#F2495C", "name": "LoadTest phases and faults",
         "target": {"type": "tags", "tags": [ANNOTATION_TAG], "matchAny": True, "limit": 500}},
        *extra,
    ]}


def dashboard(uid: str, title: str, description: str, panels: list[dict], variables: list[dict],
              extra_annotations: list[dict] = ()) -> dict:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["elves"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "10s",
        "timezone": "browser",
        "links": [{"type": "dashboards", "tags": ["elves"], "asDropdown": True, "title": "Elves dashboards",
                   "includeVars": False, "keepTime": True}],
        "annotations": annotations(list(extra_annotations)),
        "templating": {"list": [datasource_variable(), *variables]},
        "panels": layout(panels),
    }


# --- query helpers (for the series the engine does not query) ----------------------------

def _sum(by: str | None, expr: str, aggregate: str = "sum") -> str:
    return f"{aggregate} by ({by}) ({expr})" if by else f"{aggregate}({expr})"


def system(metric: str, **labels: str) -> str:
    """A selector of one of the system's series, in the dashboard's namespace."""
    return promql.system_selector(metric, NAMESPACE, **labels)


def rate_of(metric: str, by: str | None = None, **labels: str) -> str:
    """Per-second rate of a counter, summed by `by`."""
    return _sum(by, f"rate({system(metric, **labels)}[{RATE}])")


def mean_of(timer: str, by: str | None = None, **labels: str) -> str:
    """Mean duration of a Micrometer timer over the rate interval (its _sum over its _count)."""
    return f"{rate_of(timer + '_sum', by, **labels)} / {rate_of(timer + '_count', by, **labels)}"


def gauge_of(metric: str, by: str, aggregate: str = "sum", **labels: str) -> str:
    return _sum(by, system(metric, **labels), aggregate)


def namespace_variable() -> dict:
    """The system's namespace: those holding Elves' work queues, one at a time (on a shared
    cluster "all" would add up other teams' systems)."""
    queues = promql.selector(promql.QUEUE_READY, queue="~" + promql.regex_of(WORK_QUEUES))
    return query_variable("namespace", "Namespace", f"label_values({queues}, namespace)", include_all=False)


# --- the three dashboards -------------------------------------------------------------

def by_queue(metric: str, queues=WORK_QUEUES + DEAD_LETTER_QUEUES) -> str:
    return f"sum by (queue) ({system(metric, queue='~' + promql.regex_of(queues))})"


def queue_pileup() -> dict:
    replica_changes = {
        "datasource": {"type": "prometheus", "uid": "${datasource}"}, "enable": True, "hide": False,
        "iconColor": "#FADE2A", "name": "Replica changes",
        "expr": f"changes(({promql.replicas_desired(namespace=NAMESPACE)})[2m:15s]) > 0",
        "titleFormat": "{{deployment}} replicas changed",
    }
    scoped = {"namespace": NAMESPACE}
    panels = [
        row("Queues"),
        timeseries("Messages per queue (ready + unacked)", [target(promql.queue_depth(**scoped), "{{queue}}")],
                   description="Depth of every Elves queue and dead-letter queue: the pile-up itself."),
        timeseries("Pile-up rate per queue (published - acknowledged)",
                   [target(promql.queue_pileup_rate(RATE, **scoped), "{{queue}}")], unit="ops",
                   description="Above 0 the queue grows by that many messages a second: its consumers "
                               "cannot keep up. Below 0 it drains."),
        timeseries("Published per queue (broker)", [target(promql.queue_publish_rate(RATE, **scoped), "{{queue}}")],
                   unit="ops", description="Messages the exchange routed into each work queue."),
        timeseries("Delivered and acknowledged per queue (broker)", [
            target(promql.queue_deliver_rate(RATE, **scoped), "{{queue}} delivered"),
            target(promql.queue_ack_rate(RATE, **scoped), "{{queue}} acknowledged"),
        ], unit="ops", description="Handed to consumers (redeliveries included) and acknowledged by them, "
                                   "after their work was committed."),
        timeseries("Consumers per queue", [target(promql.queue_consumers(**scoped), "{{queue}}")],
                   description="0 with messages waiting: nothing drains the queue (ElvesQueueWithoutConsumers).",
                   step=True),
        timeseries("Ready and unacknowledged per queue", [
            target(by_queue(promql.QUEUE_READY), "{{queue}} ready"),
            target(by_queue(promql.QUEUE_UNACKED), "{{queue}} unacked"),
        ], description="Ready: waiting for a consumer. Unacked: delivered and not yet acknowledged "
                       "(bounded by prefetch x consumers)."),
        timeseries("Published per queue (services)",
                   [target(rate_of("elves_messages_published_total", "queue"), "{{queue}}")],
                   unit="ops", description="Messages the gateway and ingestor handed to the broker."),
        timeseries("Consumed and acknowledged (services)", [
            target(rate_of("elves_ingestor_job_seconds_count"), "ingestor jobs (data.in)"),
            target(rate_of("elves_registry_logs_persisted_total"), "logs persisted (applog.in)"),
            target(rate_of("elves_registry_results_persisted_total", "status"),
                   "results persisted {{status}} (ingestor.in)"),
        ], unit="ops", description="Each message is acknowledged after its work is committed."),
        timeseries("Broker message rates", [
            target(rate_of("rabbitmq_global_messages_received_total"), "received"),
            target(rate_of("rabbitmq_global_messages_delivered_total"), "delivered"),
            target(rate_of("rabbitmq_global_messages_acknowledged_total"), "acknowledged"),
            target(rate_of("rabbitmq_global_messages_redelivered_total"), "redelivered"),
        ], unit="ops", description="Node-wide totals from RabbitMQ's /metrics."),
        timeseries("Duplicates discarded and dead-lettered", [
            target(rate_of("elves_duplicates_discarded_total", "queue"), "duplicate {{queue}}"),
            target(rate_of("elves_messages_dead_lettered_total", "queue"), "dead-lettered {{queue}}"),
        ], unit="ops", description="Redeliveries the registry recognised, and poison messages sent to a DLQ."),
        row("Deployments"),
        timeseries("Replicas (dashed: desired; solid: ready)", [
            target(promql.replicas_desired(**scoped), "{{deployment}} desired"),
            target(promql.replicas_ready(**scoped), "{{deployment}} ready"),
        ], step=True, overrides=[DASHED_DESIRED],
            description="What each deployment is asked to run against what is Ready: the gap is a scale-up "
                        "starting, a crash or a kill. Scale faults, spec.system.replicas and the autoscalers "
                        "(spec.system.autoscaling) show here."),
        timeseries("Queue-scaled replicas beside their work queue", [
            target(promql.replicas_desired(list(SCALED_ON_QUEUE), **scoped), "{{deployment}} desired"),
            target(promql.replicas_ready(list(SCALED_ON_QUEUE), **scoped), "{{deployment}} ready"),
            target(promql.queue_messages_ready(list(SCALED_ON_QUEUE.values()), **scoped), "{{queue}} ready messages"),
        ], step=True, overrides=[DASHED_DESIRED, by_name(".* ready messages", {"custom.axisPlacement": "right",
                                                                                "custom.lineInterpolation": "linear"})],
            description="The deployments KEDA scales on their work queue's length, with the messages ready in "
                        "that queue (right axis: what KEDA compares with its target per replica). The scale-up "
                        "lag is from the queue's sustained rise past the target to the added replica Ready."),
        timeseries("Container restarts (total)", [target(promql.restarts_total(**scoped), "{{container}}")],
                   step=True),
        timeseries("OOM kills", [target(promql.oom_kills(RATE, **scoped), "{{container}}")],
                   description="Restarts of containers whose last termination was OOMKilled."),
        timeseries("Restarts in the interval", [target(promql.restarts(RATE, **scoped), "{{container}}")]),
    ]
    return dashboard("elves-queue-pileup", "Elves / Queue pile-up review",
                     "Per queue: depth, publish, deliver and acknowledge rates, their difference (the pile-up "
                     "rate) and consumers; replicas, restarts and OOM kills, with the LoadTest phases and "
                     "faults as annotations.", panels, [namespace_variable()], [replica_changes])


def load() -> dict:
    testid = query_variable("testid", "Test id", f"label_values({promql.K6_REQUESTS}, testid)")
    panels = [
        row("k6 (all runners)"),
        timeseries("Request rate per endpoint",
                   [target(promql.k6_request_rate(TEST_ID, "endpoint", RATE), "{{endpoint}}")], unit="reqps"),
        timeseries("Request rate per status",
                   [target(promql.k6_request_rate(TEST_ID, "status", RATE), "{{status}}")], unit="reqps"),
        timeseries("Latency p99 per endpoint",
                   [target(promql.k6_latency_quantile(0.99, TEST_ID, by="endpoint", rate_window=RATE),
                           "{{endpoint}}")], unit="s"),
        timeseries("Latency p50 / p95 / p99 (all endpoints)", [
            target(promql.k6_latency_quantile(q, TEST_ID, rate_window=RATE), f"p{round(q * 100)}")
            for q in (0.5, 0.95, 0.99)
        ], unit="s"),
        timeseries("Failed request share", [target(promql.k6_error_rate(TEST_ID, RATE), "failed")],
                   unit="percentunit", description="Responses k6 did not expect (4xx, 5xx, timeouts)."),
        timeseries("Failed requests per endpoint (cumulative)",
                   [target(promql.k6_requests_failed(TEST_ID, RATE), "{{endpoint}}")]),
        timeseries("Dropped iterations (cumulative)", [target(promql.k6_dropped_iterations(TEST_ID, RATE), "dropped")],
                   description="Arrivals k6 could not start for want of a VU: above 0, the load was not what was asked."),
        timeseries("Virtual users active", [target(promql.k6_vus(), "VUs")]),
        row("Gateway"),
        timeseries("Requests accepted per endpoint (gateway)",
                   [target(rate_of("elves_gateway_requests_accepted_total", "endpoint"), "{{endpoint}}")],
                   unit="reqps", description="2xx answers counted by the gateway: matches k6's 2xx rate."),
    ]
    return dashboard("elves-load", "Elves / Load", "What k6 sent and what it saw: rate, latency per endpoint, "
                     "errors and dropped iterations, over all runners of a test id; the gateway's own count "
                     "of what it accepted, in the system's namespace.", panels, [testid, namespace_variable()])


def services() -> dict:
    application = query_variable("application", "Service", f"label_values({system('jvm_memory_used_bytes')}, application)")
    apps = {"application": SERVICES}
    api = {"application": SERVICES, "uri": "~/api/.*"}
    panels = [
        row("JVM"),
        timeseries("Heap used and max", [
            target(gauge_of("jvm_memory_used_bytes", "application, pod", area="heap", **apps), "{{pod}} used"),
            target(_sum("application, pod", system("jvm_memory_max_bytes", area="heap", **apps) + " > 0"),
                   "{{pod}} max"),
        ], unit="bytes", description="Heap capped at a share of the memory limit (javaOpts)."),
        timeseries("GC pause time", [target(rate_of("jvm_gc_pause_seconds_sum", "application, pod", **apps), "{{pod}}")],
                   unit="percentunit", description="Share of wall time spent in GC pauses."),
        timeseries("CPU", [target(gauge_of("process_cpu_usage", "application, pod", "max", **apps), "{{pod}}")],
                   unit="percentunit"),
        timeseries("JIT compilation", [
            target(f"{rate_of(promql.JVM_COMPILATION, 'application, pod', **apps)} / 1000", "{{pod}}"),
        ], unit="percentunit", description="Time the JIT compiler spent, as a share of one core: high while a"
                   " fresh JVM compiles its hot paths. A measured warm-up (load.warmup: auto) waits for it to"
                   f" fall under {warmup.JIT_SETTLED_MS_PER_SECOND / 10:g} %."),
        timeseries("Live threads", [target(gauge_of("jvm_threads_live_threads", "application, pod", "max", **apps),
                                           "{{pod}}")]),
        row("HTTP and listeners"),
        timeseries("HTTP requests served", [
            target(rate_of("http_server_requests_seconds_count", "application, uri, status", **api),
                   "{{application}} {{uri}} {{status}}"),
        ], unit="reqps"),
        timeseries("HTTP mean latency", [
            target(mean_of("http_server_requests_seconds", "application, uri", **api), "{{application}} {{uri}}"),
        ], unit="s"),
        timeseries("Listener throughput", [
            target(rate_of("spring_rabbitmq_listener_seconds_count", "application, queue, result", **apps),
                   "{{application}} {{queue}} {{result}}"),
        ], unit="ops", description="Messages handled by each @RabbitListener."),
        timeseries("Listener mean duration", [
            target(mean_of("spring_rabbitmq_listener_seconds", "application, queue", **apps), "{{application}} {{queue}}"),
        ], unit="s"),
        timeseries("Ingestor job duration (mean)", [target(mean_of("elves_ingestor_job_seconds"), "mean")],
                   unit="s", description="From taking a plot request to its confirmed result."),
        timeseries("Publisher confirms", [
            target(rate_of("elves_messages_confirmed_total", "application, queue", **apps), "{{application}} {{queue}}"),
        ], unit="ops"),
        row("Connection pool (registry)"),
        timeseries("JDBC connections", [
            target(gauge_of(f"hikaricp_connections_{state}", "pod", **apps), f"{{{{pod}}}} {state}")
            for state in ("active", "pending", "max")
        ], description="Pending above 0: requests wait for a database connection."),
        timeseries("JDBC connection acquire time (mean)", [
            target(mean_of("hikaricp_connections_acquire_seconds", "pod", **apps), "{{pod}}"),
        ], unit="s"),
    ]
    return dashboard("elves-services", "Elves / Services", "The Spring Boot services: JVM, GC, HTTP, "
                     "RabbitMQ listener throughput and the JDBC pool.", panels, [namespace_variable(), application])


DASHBOARDS = {"queue-pileup": queue_pileup, "load": load, "services": services}


# --- alerts -----------------------------------------------------------------------------

# The containers whose restarts and OOM kills the alerts watch.
ALERTED_CONTAINERS = DEPLOYMENTS + ("rabbitmq", "postgres")


def alert_queries() -> dict[str, tuple[str, str]]:
    """Each alert's query and what templates/prometheusrule.yaml puts after it."""
    scoped = {"namespace": RELEASE_NAMESPACE}
    work_depth = promql.queue_depth(WORK_QUEUES, **scoped)
    return {
        "ElvesQueuePileUp": (work_depth, "the template adds > queuePileUpMessages"),
        "ElvesQueueWithoutConsumers": (
            f"({promql.queue_consumers(**scoped)} == 0) and on (queue) ({work_depth} > 0)", "the whole expression"),
        "ElvesMessagesDeadLettered": (f"{promql.queue_depth(DEAD_LETTER_QUEUES, **scoped)} > 0", "the whole expression"),
        "ElvesContainerCrashLooping": (promql.restarts("15m", ALERTED_CONTAINERS, **scoped),
                                       "the template adds >= crashLoopRestarts"),
        "ElvesContainerOOMKilled": (f"{promql.oom_kills('10m', ALERTED_CONTAINERS, **scoped)} > 0",
                                    "the whole expression"),
    }


def render_alert_queries() -> str:
    lines = ["# Written by charts/elves/dashboards/build.py from elves.engine.results.promql: do not edit.",
             "# Read by templates/prometheusrule.yaml, which puts the release's namespace for",
             f"# {RELEASE_NAMESPACE} and adds the thresholds set in values."]
    for name, (query, note) in alert_queries().items():
        # A JSON string is a valid YAML double-quoted scalar, escapes included.
        lines += [f"# {name}: {note}", f"{name}: {json.dumps(query)}"]
    return "\n".join(lines) + "\n"


# --- main -------------------------------------------------------------------------------

def render(build) -> str:
    return json.dumps(build(), indent=2, sort_keys=False) + "\n"


def generated_files() -> dict[Path, str]:
    files = {HERE / f"{name}.json": render(build) for name, build in DASHBOARDS.items()}
    files[ALERT_QUERIES] = render_alert_queries()
    return files


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in generated_files().items():
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print(f"stale generated files: {', '.join(stale)}; run .venv/bin/python "
              f"{Path(__file__).relative_to(HERE.parents[2])}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
