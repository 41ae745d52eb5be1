"""Whether a run can stand in a comparison at all, read from how it ended and where it ran:
its phase and conditions, its generator's limits, and the machine recorded with it.

A run that ended in Error, is not finished, or whose load the generator limited has no figures
of the system's to compare (exit 2), and neither has a run from a busy machine (other work
shared its cores) or a saturated one (more runnable tasks than its cores could serve, the
stack's own included): a change could be the machine's (inconclusive, exit 2). The machine is
read from the run.json beside the summary by the results page's own rules
(elves.engine.results.machine_state); a summary without one says nothing of its machine. No flag
lets either through: a figure from such a machine does not say how the system did. A run that
ended Failed can be compared, but is never as good as its baseline (`failed_reasons`).
"""

from __future__ import annotations

from typing import Any

from elves.engine.results.compare.summaries import RUN_FILE, RUN_RECORD, RunView, Side
from elves.engine.results.generator_limit import judged_limits
from elves.engine.results.machine_state import busy_reason, saturated_reason, saturation_unknown

ENDED = ("Succeeded", "Failed", "Limited", "Error")  # phases of a finished LoadTest (and run)


def _where(side: Side, run: RunView) -> str:
    return f"{run.label} of {side.called}" if run.label else side.called


def limited_reasons(side: Side) -> list[str]:
    """Why the side's figures are k6's, not the system's: its load generator limited a run's load
    (the verdict's rule on its figures), or the run says it was limited (phase, condition)."""
    reasons = []
    for run in side.measured:
        limits = judged_limits(run.results, run.verdict) if run.results is not None else []
        if not limits and run.phase == "Limited":
            limits = ["its phase is Limited"]
        if limits:
            reasons.append(f"{_where(side, run)} was limited by its load generator, not the system, so its figures are"
                           f" k6's: {'; '.join(limits)}")
    if not reasons and (side.phase == "Limited" or side.conditions.get("HarnessLimited") == "True"):
        said = "its phase is Limited" if side.phase == "Limited" else "its condition HarnessLimited is True"
        reasons.append(f"{side.called} was limited by its load generator ({said}), so its figures are k6's")
    return reasons


def ended_reasons(side: Side) -> list[str]:
    """Why the side did not end in a way its figures can be judged: Error, or not finished."""
    if side.phase == "Error" or side.conditions.get("HarnessError") == "True":
        return [f"{side.called} ended in Error ({side.state}): the harness could not run it, its figures are"
                " not the system's"]
    if side.phase and side.phase not in ENDED:
        return [f"{side.called} has not finished (phase {side.phase})"]
    return [f"{_where(side, run)} ended in Error" for run in side.measured if run.phase == "Error"]


def machine_reasons(side: Side, summary: dict[str, Any]) -> list[str]:
    """Why the machine it ran on cannot bear its figures, from the run.json recorded with it:
    busy or saturated, by the results page's rules (busy_reason, saturated_reason), or a run.json
    that does not say whether it was saturated; empty when neither, or no run.json is recorded."""
    record = summary.get(RUN_RECORD)
    reasons = []
    if busy := busy_reason(record):
        reasons.append(f"{side.called} ran on a busy machine ({busy}): a change could be the machine's, not the"
                       " system's; rerun it on a quiet one")
    if saturated := saturated_reason(record):
        reasons.append(f"{side.called} ran on a saturated machine (its {RUN_FILE}: {saturated}): its latencies and"
                       " depths measure the wait for a CPU as much as the system; rerun it with fewer processes or"
                       " more cores")
    elif record is not None and (unknown := saturation_unknown(record)):
        # The suite always records one: a run.json without it was cut, and the page says "Cannot tell".
        reasons.append(f"cannot tell whether {side.called} ran on a saturated machine: {unknown}")
    return reasons


def failed_reasons(side: Side, run: RunView) -> list[str]:
    """Why a run ended Failed, by its phase, its verdict or (a single run) the LoadTest's
    conditions; empty when it passed. A Failed run is never as good as its baseline."""
    reasons = []
    if run.phase == "Failed":
        reasons.append("its phase is Failed")
    if run.verdict is not None and not run.verdict.passed and not run.verdict.limited_by:
        missed = [c.name for c in run.verdict.checks if not c.ok]
        reasons.append("its verdict failed" + (f" ({', '.join(missed)} missed)" if missed else ""))
    if len(side.runs) == 1:
        if side.phase == "Failed" and run.phase != "Failed":
            reasons.append("the LoadTest's phase is Failed")
        if side.conditions.get("Failed") == "True":
            reasons.append("its condition Failed is True")
        if side.conditions.get("Passed") == "False":
            reasons.append("its condition Passed is False")
    return reasons
