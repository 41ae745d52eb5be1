"""The figures a run has, by scope: each figure's name, kind and where it is read from, and the
row that sets one figure of two runs side by side. Rules of the regression gate (thresholds)
name them; compare.figures reads them from a run and writes them.

A scope is the total (the run as a whole), an endpoint, a queue, a deployment or the
ledger. Every endpoint, queue and deployment has a `present` figure, so one the baseline has
and the new run lacks shows as a row of its own. A value that is not a number (None, NaN)
is no figure: the row then has it on one side only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from elves.constants import DEAD_LETTER_SUFFIX
from elves.engine.models.status import RunResults
from elves.engine.models.summary import deepest

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
