"""The verdict: every objective checked against a run's results, the breakpoint, the sweep table.

A check whose metric has no data fails (you cannot claim an objective you did not
measure). A raw PromQL objective that Prometheus rejects is a harness error (VerdictError),
not a failure of the system. A run whose load the generator limited (elves.engine.results.generator_limit)
keeps its checks but passes none: it is Limited, neither the system's Passed nor its Failed.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from elves.engine.models.objectives import LATENCY_METRICS, MEAN_LATENCY, POD_METRICS, SCALING_METRICS, Objective
from elves.engine.models.status import Breakpoint, Check, Phase, RunResults, RunStatus, SweepRow, Verdict
from elves.engine.models.summary import deepest, failures_text, work_queues
from elves.engine.models.units import Duration
from elves.engine.planning.plan import Segment, numeric, rate_at
from elves.engine.results import promql
from elves.engine.results.generator_limit import drops_blamed_on_system, generator_limits
from elves.engine.results.prometheus import Prometheus, PrometheusError, PrometheusUnavailable

OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">=": operator.ge, ">": operator.gt,
}
BREAKPOINT_STEP_SECONDS = 5.0
BREAKPOINT_SUSTAIN = 3  # samples (15 s) an objective must stay broken to count as the breakpoint


class VerdictError(RuntimeError):
    """An objective could not be evaluated at all (bad PromQL, Prometheus gone)."""


def compare(observed: float | None, op: str, target: float) -> bool:
    if observed is None or math.isnan(observed):
        return False
    if op in ("==", "!="):
        equal = math.isclose(observed, target, rel_tol=1e-9, abs_tol=1e-9)
        return equal if op == "==" else not equal
    return OPS[op](observed, target)


def target_text(objective: Objective) -> str:
    return f"{objective.op} {objective.value if isinstance(objective.value, Duration) else f'{objective.value:g}'}"


def observe(objective: Objective, results: RunResults) -> tuple[float | None, str]:
    """The value a built-in metric had in a run, and a note when it has none."""
    metric = objective.metric
    ledger = results.ledger
    if metric in ("lost_requests", "lost_logs", "duplicates"):
        if ledger is None:
            return None, "the registry's ledger was unavailable"
        counted = ledger.nothing_accepted()
        if counted:
            return None, f"the ledger could not be checked: nothing was accepted ({counted})"
        if ledger.kind == "counts":
            if metric == "lost_logs":
                return None, "the target's counts ledger counts no activity logs (only the registry's ledger does)"
            if metric == "duplicates":
                return float(ledger.surplus), "persisted beyond accepted (the counts ledger's surplus)"
        return float(getattr(ledger, metric)), ""
    if metric == "dropped_iterations":
        return float(results.dropped_iterations), ""
    if metric == "drain_seconds":
        if not results.drain_completed:
            return None, "the system did not drain before the timeout"
        return results.drain_seconds, ""
    if metric == "throughput_stability":
        note = "" if results.throughput_stability is not None else "needs a load of 2 minutes or more with answers in its first"
        return results.throughput_stability, note
    if metric in ("http_req_failed_rate", "http_reqs_rate", MEAN_LATENCY) or metric in LATENCY_METRICS:
        endpoint = results.total if objective.endpoint is None else results.endpoints.get(objective.endpoint)
        if endpoint is None:
            return None, f"no requests to endpoint {objective.endpoint}"
        if metric == "http_req_failed_rate":
            return endpoint.error_rate, failures_text(results, objective.endpoint) if endpoint.requests else "no requests"
        if metric == "http_reqs_rate":
            return endpoint.rate, ""
        if metric == MEAN_LATENCY:
            return endpoint.mean, "" if endpoint.mean is not None else "no latency samples"
        value = getattr(endpoint, "p" + metric.rsplit("_p", 1)[1])
        return value, "" if value is not None else "no latency samples"
    if metric in ("queue_depth_max", "queue_depth_final"):
        field = "max" if metric == "queue_depth_max" else "final"
        queues = ({k: v for k, v in results.queues.items() if k == objective.queue} if objective.queue
                  else work_queues(results.queues))
        values = [getattr(q, field) for q in queues.values() if getattr(q, field) is not None]
        if not values:
            return None, f"no depth samples for queue {objective.queue or '(any)'}"
        return max(values), ""
    workload = objective.workload_name
    if metric in POD_METRICS and workload is not None and workload not in results.deployments:
        # Checked against the target before the test, so a workload without figures is one the
        # results left out: nothing observed, never a 0 that would pass.
        return None, f"no figures for workload {workload}"
    if metric in ("pod_restarts", "oom_kills"):
        field = "restarts" if metric == "pod_restarts" else "oom_kills"
        workloads = [d for name, d in results.deployments.items() if workload in (None, name)]
        return float(sum(getattr(d, field) for d in workloads)), ""
    if metric == "unready_seconds":
        spans = [d.unready_seconds for name, d in results.deployments.items()
                 if workload in (None, name) and d.unready_seconds is not None]
        return (max(spans), "") if spans else (None, "no replica samples")
    if metric in SCALING_METRICS:
        return observe_scaling(metric, workload, results)
    raise ValueError(f"unknown metric {metric!r}")  # the model's Literal makes this unreachable


def observe_scaling(metric: str, deployment: str | None, results: RunResults) -> tuple[float | None, str]:
    """An autoscaling figure (elves.engine.results.autoscaling_figures): of one deployment, or without one
    the slowest lag or scale-down and the replica-seconds and changes summed."""
    figures = {name: d.scaling for name, d in results.deployments.items()
               if deployment in (None, name) and d.scaling is not None}
    whom = f"the {deployment}" if deployment else "no deployment"
    if not figures:
        return None, f"{whom} was not autoscaled and its replicas did not change"
    if metric == "replica_changes":
        return float(sum(f.replica_changes for f in figures.values())), ""
    if metric == "replica_seconds":
        known = [f.replica_seconds for f in figures.values() if f.replica_seconds is not None]
        return (sum(known), "") if known else (None, "no replica samples")
    values = [getattr(f, metric) for f in figures.values() if getattr(f, metric) is not None]
    if len(values) < len(figures):  # the slowest is one that never got there
        return None, ("did not scale up" if metric == "scale_up_lag_seconds"
                      else "did not scale back down to its minimum before the drain ended")
    return max(values), ""


def observe_promql(objective: Objective, prom: Prometheus, at: float) -> tuple[float | None, str]:
    try:
        samples = prom.query(objective.promql or "", at)
    except PrometheusUnavailable:
        raise  # a blip: evaluated again on the next step
    except PrometheusError as exc:
        raise VerdictError(f"objective {objective.promql!r} could not be evaluated: {exc}") from None
    if not samples:
        return None, "the query returned no data"
    return samples[0].value, "" if len(samples) == 1 else f"first of {len(samples)} series"


def evaluate(objectives: list[Objective], results: RunResults, prom: Prometheus | None = None,
             at: float | None = None, drops_judged: bool = False) -> Verdict:
    """Every objective as a check; passed when all hold (and the system drained). `drops_judged`:
    the LoadTest's own objectives judge dropped iterations (elves.engine.results.generator_limit)."""
    checks = []
    for objective in objectives:
        if objective.promql is not None:
            if prom is None:
                raise VerdictError("a PromQL objective needs Prometheus")
            observed, detail = observe_promql(objective, prom, at if at is not None else results.window.end.timestamp())
        else:
            observed, detail = observe(objective, results)
        checks.append(Check(name=objective.name, observed=observed, target=target_text(objective),
                            ok=compare(observed, objective.op, objective.target), detail=detail))
    if not results.drain_completed:
        checks.append(Check(name="drain_completed", observed=0, target="== 1", ok=False,
                            detail="queues not empty or ledger incomplete when the drain timed out"))
    systems_drops = "" if drops_judged else drops_blamed_on_system(results)
    if systems_drops:
        checks.append(Check(name="dropped_iterations", observed=float(results.dropped_iterations), target="== 0",
                            ok=False, detail=systems_drops))
    return verdict_of(checks, generator_limits(results, drops_judged))


def verdict_of(checks: list[Check], limited_by: list[str]) -> Verdict:
    """Passed when every check held and the load was the one asked for."""
    return Verdict(passed=all(c.ok for c in checks) and not limited_by, checks=checks, limited_by=limited_by)


def phase_of(verdict: Verdict) -> Phase:
    """How a run (or a test) with this verdict ends."""
    if verdict.limited_by:
        return "Limited"
    return "Succeeded" if verdict.passed else "Failed"


# --- breakpoint ---------------------------------------------------------------------

def timeline_query(objective: Objective, test_id: str, namespace: str) -> str | None:
    """PromQL that follows an objective's metric over time (the system's series in `namespace`);
    None when it only exists at the end."""
    metric = objective.metric
    if objective.promql is not None:
        return objective.promql
    if metric in LATENCY_METRICS:
        quantile = int(metric.rsplit("_p", 1)[1]) / 100
        return promql.k6_latency_quantile(quantile, test_id, endpoint=objective.endpoint)
    if metric == MEAN_LATENCY:
        return promql.k6_mean_latency(test_id, promql.RATE_WINDOW, by=None, endpoint=objective.endpoint)
    if metric == "http_req_failed_rate":
        return promql.k6_error_rate(test_id, endpoint=objective.endpoint)
    if metric == "queue_depth_max":
        # Without a queue named: the work queues, as in observe().
        return promql.queue_depth_deepest([objective.queue] if objective.queue else promql.WORK_QUEUES,
                                          namespace=namespace)
    if metric == "dropped_iterations":
        return promql.k6_dropped_iterations_so_far(test_id)
    return None


def first_sustained_breach(points: list[tuple[float, float | None]], objective: Objective) -> float | None:
    """When the objective broke and stayed broken for BREAKPOINT_SUSTAIN samples in a row.

    Early in a ramp a handful of requests makes ratios jumpy (one failure of five is 20 %);
    a breakpoint is where the system stops holding, not one unlucky sample."""
    run: list[float] = []
    for t, value in points:
        if value is None:
            continue
        if compare(value, objective.op, objective.target):
            run = []
            continue
        run.append(t)
        if len(run) >= BREAKPOINT_SUSTAIN:
            return run[0]
    return None


@dataclass(frozen=True)
class Breach:
    """An objective that broke and stayed broken (first_sustained_breach) in one of its series."""

    since: float  # when it broke
    objective: str  # its name
    never_held: bool  # broken from the first sample measured


def sustained_breaches(objectives: list[Objective], prom: Prometheus, test_id: str, start: float, end: float,
                       what: str) -> Iterator[Breach]:
    """Each objective's series that broke and stayed broken over [start, end], in the objectives'
    order; `what` names the search in a VerdictError (the breakpoint's, the first drop's). Read
    lazily: the caller stops asking when it has its answer."""
    for objective in objectives:
        expr = timeline_query(objective, test_id, prom.system_namespace)
        if expr is None:
            continue
        try:
            series = prom.query_range(expr, start, end, BREAKPOINT_STEP_SECONDS)
        except PrometheusUnavailable:
            raise  # waited out by the phase machine
        except PrometheusError as exc:
            raise VerdictError(f"{what} for {objective.name} failed: {exc}") from None
        for s in series:
            if (since := first_sustained_breach(s.points, objective)) is not None:
                measured = [t for t, value in s.points if value is not None]
                yield Breach(since, objective.name, since == measured[0])


def find_breakpoint(objectives: list[Objective], prom: Prometheus, test_id: str, load_start: float,
                    load_end: float, rate_profile: list[Segment], warmup_seconds: float = 0.0,
                    warm: bool = True) -> Breakpoint | None:
    """The planned arrival rate at the first moment any objective broke during a ramp (after
    the warm-up, when there is one: a cold JVM is not the system's limit); `warm` False marks it
    as found after a measured warm-up that did not settle (elves.engine.results.warmup)."""
    breaches = sustained_breaches(objectives, prom, test_id, load_start + warmup_seconds, load_end,
                                  "breakpoint search")
    first = min(breaches, key=lambda breach: breach.since, default=None)  # the earliest; the first of a tie
    if first is None:
        return None
    t, check, never_held = first.since, first.objective, first.never_held
    achieved = prom.value(promql.k6_request_rate(test_id, by=None), t)
    # Never before the load's start: the first step may fall a moment before it.
    into = max(0.0, t - load_start)
    return Breakpoint(rate=rate_at(rate_profile, into), achieved_rate=achieved, at_seconds=round(into, 3),
                      check=check, warm=warm, never_held=never_held)


# --- sweeps -------------------------------------------------------------------------

def sweep_scaling(results: RunResults) -> tuple[float | None, float | None]:
    """A sweep row's cost and lag: ready replicas integrated over every deployment with scaling
    figures, and the slowest autoscaled deployment's scale-up lag (None: none scaled up)."""
    cost, _ = observe_scaling("replica_seconds", None, results)
    lags = [d.scaling.scale_up_lag_seconds for d in results.deployments.values()
            if d.scaling is not None and d.scaling.autoscaler and d.scaling.scale_up_lag_seconds is not None]
    return cost, (max(lags) if lags else None)


def _load_values(point: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A sweep point's load (its load.* values): the points of one load are compared with each other."""
    return tuple((k, v) for k, v in point.items() if k.startswith("load."))


def sweep_table(runs: list[RunStatus]) -> list[SweepRow]:
    """One row per run with throughput, speedup and scaling efficiency against the first point of
    the same load (the same load.* values).

    Efficiency divides the speedup by how much the swept system values grew (their product for a
    grid), e.g. 3 ingestors doing 2.7x the work of 1 are 90 % efficient; values that are
    not numbers get a speedup only."""
    rows = []
    bases: dict[tuple[tuple[str, Any], ...], RunStatus] = {}
    for run in runs:
        base = bases.setdefault(_load_values(run.point), run)
        results = run.results
        row = SweepRow(index=run.index, point=dict(run.point),
                       passed=run.verdict.passed if run.verdict else None,
                       limited=bool(run.verdict and run.verdict.limited_by))
        if results is not None:
            row.rate = results.rate
            row.throughput = results.throughput
            row.p95, row.p99, row.error_rate = results.total.p95, results.total.p99, results.total.error_rate
            deepest_queue = deepest(results.queues)
            row.queue_depth_max = deepest_queue[1] if deepest_queue else None
            row.lost = results.ledger.lost_requests if results.ledger and not results.ledger.nothing_accepted() else None
            row.replica_seconds, row.scale_up_lag_seconds = sweep_scaling(results)
        base_throughput = base.results.throughput if base.results else None
        if row.throughput is not None and base_throughput:
            row.speedup = row.throughput / base_throughput
            growth = 1.0
            for key, value in run.point.items():
                if key.startswith("load."):
                    continue
                now, first = numeric(value), numeric(base.point.get(key))
                if now is None or not first:
                    growth = math.nan
                    break
                growth *= now / first
            if not math.isnan(growth) and growth > 0:
                row.efficiency = row.speedup / growth
        rows.append(row)
    return rows


def sweep_answers(rows: list[SweepRow]) -> list[str]:
    """What a sweep of the system answers, per load: the first point (in the sweep's order, so the
    fewest replicas when they are listed from few to many) whose verdict passed, e.g.
    "load.rate = 120/min: system.replicas.orders-worker = 2 held (the first point that did)"."""
    if not rows or not any(not k.startswith("load.") for k in rows[0].point):
        return []
    answers: dict[tuple[tuple[str, Any], ...], str] = {}
    for row in rows:
        load = _load_values(row.point)
        system = ", ".join(f"{k} = {v}" for k, v in row.point.items() if not k.startswith("load."))
        if load not in answers:
            answers[load] = "no point held"
        if answers[load] == "no point held" and row.passed and not row.limited:
            answers[load] = f"{system} held (the first point that did)"
    return [(", ".join(f"{k} = {v}" for k, v in load) + ": " if load else "") + answer
            for load, answer in answers.items()]
