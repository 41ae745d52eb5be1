"""Short strings for a finished (or failed) test: kubectl columns, the CLI's last lines."""

from __future__ import annotations

from elves.constants import DEAD_LETTER_SUFFIX
from elves.engine.models.status import LoadTestStatus, RunResults, Summary
from elves.engine.models.units import format_rate, format_seconds

# The Lost column of a run whose ledger could not be checked: no figure, and never 0.
UNCHECKED = "unchecked"


def work_queues(queues: dict) -> dict:
    """A run's queue results without the dead-letter queues: those keep what earlier tests
    left there, and "the queue" of a summary or an objective means where work piled up."""
    return {name: q for name, q in queues.items() if not name.endswith(DEAD_LETTER_SUFFIX)}


def deepest(queues: dict) -> tuple[str, float] | None:
    """(queue, depth) of the deepest work queue in a run's results, if any were measured."""
    measured = [(name, q.max) for name, q in work_queues(queues).items() if q.max is not None]
    return max(measured, key=lambda item: item[1]) if measured else None


def summarize(status: LoadTestStatus) -> Summary:
    summary = Summary()
    checks = status.verdict.checks if status.verdict else []
    if status.phase == "Error":
        reasons = [c.reason for c in status.conditions if c.type == "HarnessError" and c.status == "True"]
        summary.verdict = f"Error: {reasons[0]}" if reasons else "Error"
    elif status.verdict is not None:
        passed = sum(1 for c in checks if c.ok)
        word = "Limited" if status.verdict.limited_by else "Passed" if status.verdict.passed else "Failed"
        summary.verdict = f"{word} {passed}/{len(checks)}"
    results = status.results
    if results is not None:
        summary.rate = format_rate(results.rate)
        summary.p99 = format_seconds(results.total.p99)
        queue = deepest(results.queues)
        if queue is not None:
            summary.deepest_queue = f"{queue[0].removeprefix('elves.')}={queue[1]:g}"
        ledger = results.ledger
        if ledger is None or ledger.nothing_accepted():
            summary.lost = UNCHECKED
        else:
            summary.lost = str(ledger.lost_requests + ledger.lost_logs)
        summary.restarts = sum(d.restarts for d in results.deployments.values())
    return summary


def failures_text(results: RunResults, endpoint: str | None, most: int = 3) -> str:
    """Why requests failed, the most frequent first (of `endpoint`, or of all):
    `failed requests: getData 27 x k6 1000 (no answer: EOF or another error); getStatus 2 x HTTP 503`."""
    names = results.endpoints if endpoint is None else {endpoint: results.endpoints[endpoint]}
    counts = sorted(((count, name, reason) for name, e in names.items() for reason, count in e.failures.items()),
                    key=lambda c: (-c[0], c[1], c[2]))
    text = "; ".join(f"{name} {count} x {reason}" for count, name, reason in counts[:most])
    return f"failed requests: {text}" + ("; ..." if len(counts) > most else "") if counts else ""
