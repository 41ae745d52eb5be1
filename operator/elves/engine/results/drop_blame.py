"""Whose were a run's dropped iterations: the load generator's, or the system's?

k6 drops an iteration when no VU is free to start it on time. That happens when k6 itself
falls behind (its CPU, its VU ceiling) and then the figures are k6's: the run is Limited.
It also happens when the system stops answering in time: every VU waits on a slow answer,
the pool runs dry, and the drops are the system's breakdown seen from the generator. Calling
that Limited blames the generator for the system's failure (a fresh stack whose p99 never
held, 7 s answers and a quarter refused, ended Limited "raise spec.load.vus" while k6 used a
third of a core). So the drops are the system's when, at the first of them:
- an objective had already broken (for BREAKPOINT_SUSTAIN samples in a row): the system
  broke first; or
- the system's answers were slower than the stall the plan sizes the VU pool for: every VU
  was waiting on an answer (a drop means none was free), and that wait was the system's.
Otherwise the system still answered in time and k6 fell short: the generator's.
"""

from __future__ import annotations

from elves.engine.models.objectives import Objective
from elves.engine.models.scenarios import STALL_ALLOWANCE_SECONDS
from elves.engine.models.status import FirstDrop
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus, PrometheusError, PrometheusUnavailable
from elves.engine.results.verdict import BREAKPOINT_STEP_SECONDS, VerdictError, sustained_breaches

# Answers slower than the stall the plan sizes the pool for (elves.engine.models.scenarios.vus_for):
# a pool that runs dry while answers come faster is k6's, or a spec.load.vus set too small.
SLOW_ANSWER_SECONDS = STALL_ALLOWANCE_SECONDS
# Steps after the first drop to look for the answers' latency.
LATENCY_STEPS = 3


def _range(prom: Prometheus, expr: str, start: float, end: float, what: str) -> list:
    try:
        return prom.query_range(expr, start, end, BREAKPOINT_STEP_SECONDS)
    except PrometheusUnavailable:
        raise  # waited out by the phase machine
    except PrometheusError as exc:
        raise VerdictError(f"finding whose the dropped iterations were ({what}) failed: {exc}") from None


def _first_positive(prom: Prometheus, expr: str, start: float, end: float) -> float | None:
    """The first step at which `expr` was above 0 over [start, end], if any."""
    for series in _range(prom, expr, start, end, "the first drop"):
        for t, value in series.points:
            if value is not None and value > 0:
                return t
    return None


def _value(prom: Prometheus, expr: str, at: float) -> float | None:
    try:
        return prom.value(expr, at)
    except PrometheusUnavailable:
        raise
    except PrometheusError:
        return None


def first_drop(prom: Prometheus, objectives: list[Objective], test_id: str, load_start: float,
               load_end: float) -> FirstDrop | None:
    """When k6 first dropped an iteration in [load_start, load_end] and what the system was
    doing then (None when it dropped none)."""
    dropped_at = _first_positive(prom, promql.k6_dropped_iterations_so_far(test_id), load_start, load_end)
    if dropped_at is None:
        return None
    # The drops' own objective says nothing of the system; the first objective broken by then does.
    judged = [objective for objective in objectives if objective.metric != "dropped_iterations"]
    broken = next((b.objective for b in sustained_breaches(judged, prom, test_id, load_start, dropped_at,
                                                           "finding whose the dropped iterations were")
                   if b.since <= dropped_at), "")
    latency = vus = None
    # A latency is known once answers came back: at the first drop, or a step or two later when
    # the answers were slower than k6's flush.
    for step in range(LATENCY_STEPS):
        at = dropped_at + step * BREAKPOINT_STEP_SECONDS
        if at > load_end:
            break
        latency = _value(prom, promql.k6_mean_latency(test_id, promql.RATE_WINDOW, by=None), at)
        vus = _value(prom, promql.k6_vus(test_id), at)
        if latency is not None:
            break
    slow = latency is not None and latency >= SLOW_ANSWER_SECONDS
    return FirstDrop(at_seconds=round(max(0.0, dropped_at - load_start), 3), vus=vus, latency=latency,
                     broken_before=broken, system_held=bool(broken) or slow)
