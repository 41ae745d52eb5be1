"""spec.slo: the objectives a run is judged by, built-in metrics or PromQL."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, WithJsonSchema

from elves.engine.models.fields import DNS_SUBDOMAIN_PATTERN, QUEUE_NAME_PATTERN, Deployment, ExecName
from elves.engine.models.modelbase import Rule, SpecModel
from elves.engine.models.units import Duration


LATENCY_METRICS = ("http_req_duration_p50", "http_req_duration_p90", "http_req_duration_p95", "http_req_duration_p99")
MEAN_LATENCY = "http_req_duration_mean"
HTTP_METRICS = ("http_req_failed_rate", "http_reqs_rate") + LATENCY_METRICS + (MEAN_LATENCY,)  # take `endpoint`
QUEUE_METRICS = ("queue_depth_max", "queue_depth_final")  # take `queue`
# unready_seconds: the longest stretch with fewer ready replicas than desired ("back within 60 s").
# The autoscaling figures (elves.engine.results.autoscaling_figures): the scale-up lag and the scale-down time
# (the slowest workload's without a `workload`), replica-seconds and replica changes (summed).
SCALING_TIMES = ("scale_up_lag_seconds", "scale_down_seconds")
SCALING_METRICS = SCALING_TIMES + ("replica_seconds", "replica_changes")
POD_METRICS = ("pod_restarts", "oom_kills", "unready_seconds") + SCALING_METRICS  # take `workload`
TIME_METRICS = LATENCY_METRICS + (MEAN_LATENCY, "drain_seconds", "unready_seconds") + SCALING_TIMES  # values may be durations
# throughput_stability: 2xx answers in the load's last minute over its first (1 = steady).
METRICS = ("lost_requests", "lost_logs", "duplicates", "dropped_iterations", "drain_seconds",
           "throughput_stability") + HTTP_METRICS + QUEUE_METRICS + POD_METRICS
Metric = Literal[METRICS]  # type: ignore[valid-type]
Op = Literal["<", "<=", "==", "!=", ">=", ">"]
SLO_VALUE_PATTERN = r"^-?[0-9]+(\.[0-9]+)?(ms|s|m|h)?$"


def _slo_value(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a number or a duration (0.01, 500, 100ms)")
    if isinstance(value, str):
        if not re.fullmatch(SLO_VALUE_PATTERN, value):
            raise ValueError(f"{value!r} is not a number or a duration (0.01, 500, 100ms)")
        if not value.lstrip("-").replace(".", "", 1).isdigit():
            return Duration.parse(value)  # the objective checks its metric is a time
        return float(value)
    return float(value)


SloValue = Annotated[
    float | Duration,
    PlainValidator(_slo_value),
    # A number or a duration string: kube-apiserver's structural schemas have no such
    # union (int-or-string refuses 0.01), so the CRD leaves this one field untyped and
    # the engine's model is what rejects a bad value (with its field path).
    WithJsonSchema({"x-elves-number-or-duration": SLO_VALUE_PATTERN}),
]


def _names(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{n}'" for n in names) + "]"


def _words(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1]


TIME_METRICS_TEXT = "http_req_duration_*, drain_seconds, unready_seconds, " + ", ".join(SCALING_TIMES)


class Objective(SpecModel):
    """One service-level objective: a built-in metric or a raw PromQL expression against a value."""

    rules = (
        Rule("has(self.metric) != has(self.promql)", "set exactly one of metric or promql",
             lambda o: (o.metric is None) == (o.promql is None)),
        Rule(f"!has(self.endpoint) || (has(self.metric) && self.metric in {_names(HTTP_METRICS)})",
             "endpoint applies only to the http_* metrics",
             lambda o: o.endpoint is not None and o.metric not in HTTP_METRICS),
        Rule(f"!has(self.queue) || (has(self.metric) && self.metric in {_names(QUEUE_METRICS)})",
             "queue applies only to queue_depth_max and queue_depth_final",
             lambda o: o.queue is not None and o.metric not in QUEUE_METRICS),
        Rule(f"!has(self.workload) || (has(self.metric) && self.metric in {_names(POD_METRICS)})",
             f"workload applies only to {_words(POD_METRICS)}",
             lambda o: o.workload is not None and o.metric not in POD_METRICS),
        # `deployment` is the old spelling of `workload` (Elves' three only), kept so that older
        # LoadTests still apply; the two together would say the same thing twice.
        Rule("!has(self.deployment) || !has(self.workload)",
             "set workload or its old spelling deployment, not both",
             lambda o: o.deployment is not None and o.workload is not None),
        Rule(f"!has(self.deployment) || (has(self.metric) && self.metric in {_names(POD_METRICS)})",
             f"deployment (the old spelling of workload) applies only to {_words(POD_METRICS)}",
             lambda o: o.deployment is not None and o.metric not in POD_METRICS),
        # No CEL: kube-apiserver's CEL cannot see an untyped field such as `value`.
        Rule(None, f"a duration value needs a time metric ({TIME_METRICS_TEXT})",
             lambda o: isinstance(o.value, Duration) and o.metric not in TIME_METRICS,
             lambda o: f"value {o.value.text!r} is a duration but {o.metric or 'promql'} is not a time;"
                       f" a duration value needs a time metric ({TIME_METRICS_TEXT})"),
    )

    metric: Metric | None = Field(None, description="A built-in metric (see the docs for the list).")
    promql: str | None = Field(None, min_length=1, description="A PromQL expression; its first value is compared.")
    endpoint: ExecName | None = Field(None, description="Only this endpoint (http_* metrics).")
    queue: str | None = Field(None, pattern=QUEUE_NAME_PATTERN, description="Only this queue (queue_depth_*).")
    workload: str | None = Field(None, pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
                                 description="Only this workload (pod_restarts, oom_kills, unready_seconds, the"
                                             " autoscaling figures): one of Elves' deployments, or one the"
                                             " SystemUnderTest lists by name.")
    deployment: Deployment | None = Field(None, description="The old spelling of workload (Elves' deployments only).")
    op: Op
    value: SloValue

    @property
    def target(self) -> float:
        """The value as a number; durations in seconds."""
        return self.value.seconds if isinstance(self.value, Duration) else float(self.value)

    @property
    def workload_name(self) -> str | None:
        """The workload the objective is about, in either spelling (None: every one)."""
        return self.workload or self.deployment

    @property
    def name(self) -> str:
        """How the check is called in the verdict: metric{filter} or the PromQL."""
        if self.promql is not None:
            return self.promql
        selector = self.endpoint or self.queue or self.workload_name
        return f"{self.metric}{{{selector}}}" if selector else str(self.metric)


DEFAULT_OBJECTIVES = (
    {"metric": "lost_requests", "op": "==", "value": 0},
    {"metric": "http_req_failed_rate", "op": "<", "value": 0.01},
    {"metric": "dropped_iterations", "op": "==", "value": 0},
)
