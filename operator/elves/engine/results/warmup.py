"""A measured warm-up (spec.load.warmup: auto): did the services' JVMs settle before the ramp?

A freshly started JVM answers slowly while its JIT compiles the hot paths: a breakpoint ramp
started then finds the JIT's limit, not the system's (34/s on a cold stack, 681/s
warm). The warm-up holds a light constant load in a k6 run of its own
(elves.engine.planning.plan.warmup_stages); while it runs, this module reads from Prometheus the moment
from which both
- every deployment's busiest JVM compiled less than JIT_SETTLED_MS_PER_SECOND, and
- the warm-up's p99 over the last window was within P99_SETTLED_CHANGE of the window before,
and `watch` says so once both have held for SETTLED_HOLD_SECONDS: the runner then stops the
warm-up and starts the load (elves.engine.runner.warmup). A breakpoint found after a warm-up
that never settled is marked (Breakpoint.warm).
"""

from __future__ import annotations

from elves.engine.models.status import WarmupSettling
from elves.engine.results import promql
from elves.engine.results.prometheus import Prometheus

# A JVM that spends less than 5 % of a core on compiling has compiled what the load runs
# hot; what is left are re-compilations and rarely run methods whose compilation no longer
# shows in the latency. On the local stack (2026-11-26, bench/results/2026-11-26-warmup-auto-
# cold-stack.txt) a cold gateway and registry compiled 500-670 ms per second in the first
# minute of 100/s, still 150-300 at two minutes, and 10-50 once warm higher up the ramp.
JIT_SETTLED_MS_PER_SECOND = 50.0
# Two windows' p99 within a fifth of each other: what is left is the noise of a light load's
# few hundred requests per window, not a JVM getting faster.
P99_SETTLED_CHANGE = 0.2
# Each window holds four scrapes (5 s) and k6 pushes; shorter windows make the p99 noise.
WINDOW_SECONDS = 20.0
STEP_SECONDS = 5.0
# Settled on four steps in a row before the warm-up is stopped: the JIT goes quiet for a step
# between two bursts while it works through the paths, and a momentary quiet is not warm.
SETTLED_HOLD_SECONDS = 15.0

Points = list[tuple[float, float | None]]


def _at(points: Points, t: float) -> float | None:
    """The value at `t` on the query's step grid (None when missing)."""
    for when, value in points:
        if abs(when - t) < STEP_SECONDS / 2:
            return value
    return None


def jit_settled(jit: dict[str, Points], t: float) -> bool:
    """Every deployment's JIT below the threshold at `t` (no series at all: not known, not settled)."""
    values = [_at(points, t) for points in jit.values()]
    return bool(values) and all(v is not None and v < JIT_SETTLED_MS_PER_SECOND for v in values)


def p99_settled(p99: Points, t: float) -> bool:
    """The p99 of the window ending at `t` within P99_SETTLED_CHANGE of the window before it."""
    now, before = _at(p99, t), _at(p99, t - WINDOW_SECONDS)
    if now is None or before is None or before <= 0:
        return False
    return abs(now - before) <= P99_SETTLED_CHANGE * before


def settled_at(jit: dict[str, Points], p99: Points, hold_start: float, end: float) -> float | None:
    """The first step from which both stayed settled to the end of the warm-up (None: they were
    not settled at its end). Staying matters: the JIT goes quiet and busy again while it works
    through the paths, and what the ramp after the warm-up meets is the JVMs at its end. The
    p99's two windows must both lie within the constant load (from `hold_start`)."""
    first = hold_start + 2 * WINDOW_SECONDS
    steps = [first + i * STEP_SECONDS for i in range(int((end - first) // STEP_SECONDS) + 1)] if end >= first else []
    since = None
    for t in reversed(steps):
        if not (jit_settled(jit, t) and p99_settled(p99, t)):
            break
        since = t
    return since


def settled_online(jit: dict[str, Points], p99: Points, hold_start: float, now: float) -> float | None:
    """While the warm-up runs: the step since which both have stayed settled, once that is
    SETTLED_HOLD_SECONDS back (None: keep warming)."""
    last = _last_step(hold_start, now)
    at = settled_at(jit, p99, hold_start, last)
    return at if at is not None and last - at >= SETTLED_HOLD_SECONDS else None


def read(prom: Prometheus, test_id: str, hold_start: float, end: float) -> tuple[dict[str, Points], Points]:
    """The JIT's ms per second by deployment and the warm-up's p99, on the STEP_SECONDS grid from
    `hold_start` to `end`."""
    if end < hold_start:  # still ramping up (or ended during it): nothing to read, and a range must not end first
        return {}, []
    window = f"{WINDOW_SECONDS:g}s"
    jit = {s.labels.get("application", "?"): s.points for s in prom.query_range(
        promql.jvm_compilation_ms_per_second(window, namespace=prom.system_namespace), hold_start, end, STEP_SECONDS)}
    p99_series = prom.query_range(promql.k6_latency_quantile(0.99, test_id, rate_window=window),
                                  hold_start, end, STEP_SECONDS)
    return jit, p99_series[0].points if p99_series else []


def watch(prom: Prometheus, test_id: str, load_start: float, hold_start: float, now: float,
          bound: float) -> WarmupSettling | None:
    """The finding of a warm-up still running (from `load_start`, its constant load from
    `hold_start`), once it has settled for SETTLED_HOLD_SECONDS; None while it has not."""
    if now < hold_start + 2 * WINDOW_SECONDS + SETTLED_HOLD_SECONDS:
        return None  # it cannot have settled for long enough yet: no need to ask
    jit, p99 = read(prom, test_id, hold_start, now)
    if settled_online(jit, p99, hold_start, now) is None:
        return None
    return judge(jit, p99, load_start, hold_start, _last_step(hold_start, now), bound)


def measure(prom: Prometheus, test_id: str, load_start: float, hold_start: float, end: float,
            bound: float | None = None) -> WarmupSettling:
    """Whether and when the warm-up from `load_start` to `end` (its constant load from
    `hold_start`) settled, with the JIT's rate and the p99 then (at the end when it did not)."""
    jit, p99 = read(prom, test_id, hold_start, end)
    return judge(jit, p99, load_start, hold_start, end, bound)


def judge(jit: dict[str, Points], p99: Points, load_start: float, hold_start: float, end: float,
          bound: float | None = None) -> WarmupSettling:
    """The finding from the series `read` reads: the JIT's ms per second by deployment, and the
    warm-up's p99, both on the STEP_SECONDS grid from `hold_start` to `end`; `bound`: the
    warm-up's longest (spec.load.warmupTimeout; by default it ran to `end`)."""
    at = settled_at(jit, p99, hold_start, end)
    when = at if at is not None else _last_step(hold_start, end)
    jit_then = {app: round(v, 1) for app, points in sorted(jit.items()) if (v := _at(points, when)) is not None}
    return WarmupSettling(
        settled=at is not None, settled_after_seconds=None if at is None else round(at - load_start, 3),
        timeout_seconds=round(end - load_start if bound is None else bound, 3), jit_ms_per_second=jit_then,
        p99=_at(p99, when), reason="" if at is not None else _why_not(jit, when))


def _last_step(start: float, end: float) -> float:
    return start + (end - start) // STEP_SECONDS * STEP_SECONDS


def _why_not(jit: dict[str, Points], t: float) -> str:
    """What kept the warm-up from settling, at its end `t`."""
    if not jit:
        return ("no JIT compilation series (jvm_compilation_time_ms_total) in Prometheus: whether the JVMs"
                " were warm is not known")
    if not jit_settled(jit, t):
        busy = sorted(app for app, points in jit.items()
                      if (value := _at(points, t)) is None or value >= JIT_SETTLED_MS_PER_SECOND)
        return f"the JIT of {' and '.join(busy)} was still compiling"
    return f"the p99 still changed by more than {P99_SETTLED_CHANGE:.0%} from one window to the next"
