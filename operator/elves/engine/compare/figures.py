"""The figures of a run, by scope, and the rows that set two runs' figures side by side.

A scope is the total (the run as a whole), an endpoint, a queue, a deployment or the
ledger. Every endpoint, queue and deployment has a `present` figure, so one the baseline has
and the new run lacks shows as a row of its own. A value that is not a number (None, NaN)
is no figure: the row then has it on one side only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable

from elves.constants import DEAD_LETTER_SUFFIX
from elves.engine.format import is_known, value_text
from elves.engine.status import RunResults, Verdict
from elves.engine.summary import deepest

TOTAL, ENDPOINT, LEDGER = "total", "endpoint", "ledger"
SCOPE_ORDER = (TOTAL, ENDPOINT, "queue", "deployment", LEDGER)

VERDICT, PRESENT, REQUESTS = "verdict", "present", "requests"

# Figure name -> (kind, how to read it from the scope's result). Kinds: seconds, fraction
# (0..1), rate (per second), bytes, count, flag (1 yes, 0 no), verdict (1 Passed, 0 Failed).
Reader = Callable[[Any], Any]
ENDPOINT_FIGURES: dict[str, tuple[str, Reader]] = {
    REQUESTS: ("count", lambda e: e.requests), "rate": ("rate", lambda e: e.rate),
    "errors": ("fraction", lambda e: e.error_rate), "p50": ("seconds", lambda e: e.p50),
    "p90": ("seconds", lambda e: e.p90), "p95": ("seconds", lambda e: e.p95), "p99": ("seconds", lambda e: e.p99),
    "mean": ("seconds", lambda e: e.mean), "timeouts": ("count", lambda e: e.timeouts),
    "retries": ("count", lambda e: e.retries),
}
def dead_letters(results: RunResults) -> float | None:
    """The messages the dead-letter queues held at their deepest, all together (None: no such
    queue measured). A DLQ keeps what earlier tests left in it, so the figure is compared, not read
    as this run's own."""
    depths = [max(q.max or 0.0, q.final or 0.0) for name, q in results.queues.items()
              if name.endswith(DEAD_LETTER_SUFFIX) and (q.max is not None or q.final is not None)]
    return sum(depths) if depths else None


RUN_FIGURES: dict[str, tuple[str, Reader]] = {
    "dropped": ("count", lambda r: r.dropped_iterations),
    "deepest_queue": ("count", lambda r: (deepest(r.queues) or (None, None))[1]),
    "dead_letters": ("count", dead_letters),
    "drain": ("seconds", lambda r: r.drain_seconds),
    "drained": ("flag", lambda r: r.drain_completed),
    "throughput": ("rate", lambda r: r.throughput), "stability": ("count", lambda r: r.throughput_stability),
}
QUEUE_FIGURES: dict[str, tuple[str, Reader]] = {
    "depth_max": ("count", lambda q: q.max), "depth_final": ("count", lambda q: q.final),
}
DEPLOYMENT_FIGURES: dict[str, tuple[str, Reader]] = {
    "restarts": ("count", lambda d: d.restarts), "oom_kills": ("count", lambda d: d.oom_kills),
    "replicas_max": ("count", lambda d: d.replicas_max), "unready": ("seconds", lambda d: d.unready_seconds),
    "heap_max": ("bytes", lambda d: d.heap_max_bytes), "gc": ("seconds", lambda d: d.gc_seconds),
    "cpu_cores": ("count", lambda d: d.cpu_cores),
    # What autoscaling did (kept for an autoscaled or rescaled deployment): no default rule, a
    # user gates on them with --fail-on (replica_seconds:+20%, scale_up_lag:+50%).
    "replica_seconds": ("count", lambda d: d.scaling.replica_seconds if d.scaling else None),
    "replica_changes": ("count", lambda d: d.scaling.replica_changes if d.scaling else None),
    "scale_up_lag": ("seconds", lambda d: d.scaling.scale_up_lag_seconds if d.scaling else None),
}
LEDGER_FIGURES: dict[str, tuple[str, Reader]] = {
    "lost": ("count", lambda led: led.lost_requests + led.lost_logs),
    "lost_requests": ("count", lambda led: led.lost_requests), "lost_logs": ("count", lambda led: led.lost_logs),
    "duplicates": ("count", lambda led: led.duplicates),
    "results_failed": ("count", lambda led: led.results_failed),
}
YES_NO = ("flag", "verdict")  # the kinds a rule can only keep (or turn off)
FIGURES: dict[str, str] = {  # every figure's kind, for the rules
    VERDICT: "verdict", PRESENT: "flag",
    **{name: kind for table in (ENDPOINT_FIGURES, RUN_FIGURES, QUEUE_FIGURES, DEPLOYMENT_FIGURES, LEDGER_FIGURES)
       for name, (kind, _) in table.items()},
}

Figures = dict[tuple[str, str], tuple[str, float]]  # (scope, figure) -> (kind, value), in table order


@dataclass(frozen=True)
class Row:
    run: str  # "" for a single run, else "run 1 (system.replicas.ingestor=3)"
    scope: str  # "total", "endpoint getData", "queue elves.ingestor.data.in", "deployment ingestor", "ledger"
    figure: str
    kind: str
    baseline: float | None
    new: float | None
    # The requests the row's endpoint made in each run (None elsewhere): a rule judges an
    # endpoint's figures only when both runs made enough of them.
    requests: tuple[float | None, float | None] = (None, None)

    @property
    def endpoint(self) -> bool:
        return self.scope.startswith(ENDPOINT + " ")

    @property
    def selector(self) -> str:
        """What a rule's {selector} names: total, ledger, or the endpoint's, queue's or deployment's name."""
        return self.scope.split(" ", 1)[1] if " " in self.scope else self.scope

    @property
    def missing(self) -> bool:
        """The baseline has the figure, the new run does not."""
        return self.baseline is not None and self.new is None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    return float(value) if is_known(value) else None


def run_figures(results: RunResults | None, verdict: Verdict | None) -> Figures:
    """Every figure one run has (none without results), total first, then endpoints, queues,
    deployments and the ledger."""
    found: Figures = {}

    def add(scope: str, table: dict[str, tuple[str, Reader]], source: Any, present: bool = False) -> None:
        if present:
            found[(scope, PRESENT)] = ("flag", 1.0)
        for name, (kind, read) in table.items():
            value = _number(read(source))
            if value is not None:
                found[(scope, name)] = (kind, value)

    if verdict is not None:
        found[(TOTAL, VERDICT)] = ("verdict", 1.0 if verdict.passed else 0.0)
    if results is None:
        return found
    add(TOTAL, ENDPOINT_FIGURES, results.total)
    add(TOTAL, RUN_FIGURES, results)
    for name, endpoint in results.endpoints.items():
        add(f"{ENDPOINT} {name}", ENDPOINT_FIGURES, endpoint, present=True)
    for name, queue in results.queues.items():
        add(f"queue {name}", QUEUE_FIGURES, queue, present=True)
    for name, deployment in results.deployments.items():
        add(f"deployment {name}", DEPLOYMENT_FIGURES, deployment, present=True)
    if results.ledger is not None:
        add(LEDGER, LEDGER_FIGURES, results.ledger)
    return found


def rows(label: str, baseline: Figures, new: Figures) -> list[Row]:
    """A row for each figure either run has, grouped by scope (the baseline's order first)."""
    keys = list(baseline) + [key for key in new if key not in baseline]
    scopes = {scope: index for index, (scope, _) in reversed(list(enumerate(keys)))}  # first appearance
    order = list(FIGURES)
    keys.sort(key=lambda key: (SCOPE_ORDER.index(key[0].split(" ", 1)[0]), scopes[key[0]], order.index(key[1])))
    result = []
    for scope, figure in keys:
        before, after = baseline.get((scope, figure)), new.get((scope, figure))
        kind = (before or after)[0]  # type: ignore[index] - every key is in one of the two
        row = Row(label, scope, figure, kind, before[1] if before else None, after[1] if after else None)
        if row.endpoint:
            row = replace(row, requests=(_value(baseline, scope, REQUESTS), _value(new, scope, REQUESTS)))
        result.append(row)
    return result


def _value(figures: Figures, scope: str, figure: str) -> float | None:
    found = figures.get((scope, figure))
    return found[1] if found else None


def format_value(kind: str, value: float | None) -> str:
    """A figure in its unit, as the report writes it."""
    if value is not None and kind in YES_NO:
        return ("Passed" if value >= 1 else "Failed") if kind == "verdict" else ("yes" if value >= 1 else "no")
    return value_text(value, {"fraction": "percent", "count": "number"}.get(kind, kind))


def change_text(row: Row) -> str:
    """From the baseline to the new value: "+12.5 %", "+0.60 pp", "+3 (from 0)", "missing"."""
    if row.baseline is None or row.new is None:
        return "missing" if row.missing else "only in new"
    if row.new == row.baseline:
        return "="
    if row.kind in YES_NO:
        return "worse" if row.new < row.baseline else "better"
    if row.kind == "fraction":
        return f"{(row.new - row.baseline) * 100:+.2f} pp"
    if row.baseline == 0:
        return ("+" if row.new > 0 else "-") + f"{format_value(row.kind, abs(row.new))} (from 0)"
    return f"{(row.new - row.baseline) / abs(row.baseline) * 100:+.1f} %"
