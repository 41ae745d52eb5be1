"""The answer to each case's question, computed from its run's figures and its own verdict.

A rule per kind of finding (study.yaml's `finding.kind`) reads the one measurement that
answers the question. Before any rule, a run that cannot answer is "Inconclusive", with
the reason: it ran on a busy machine, its generator could not offer the load, or a planned
change (a scale-up, a kill) took effect after the load had ended. The measurement is still
shown after the reason, marked as not an answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from elves.constants import SCALED_ON_QUEUE, WORK_QUEUES
from elves.engine.models.autoscaling import autoscaled
from elves.engine.models.scenarios import BUILTIN_SCENARIOS
from elves.engine.models.status import RunResults, RunStatus
from elves.engine.models.summary import deepest
from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.planning.plan import expand_sweep
from elves.engine.results.format import observed_text, percent_text, value_text
from elves.engine.results.generator_limit import judged_limits
from elves.study.case_results import (CaseResult, asked_rate, drain_text, landed, lost_total, offered, point_text,
                                 queue_text, restarts_text, surplus_text)
from elves.study.quiet import busy_reason

READS = ("getHistory", "getAllHistory", "getStatus")
ERRORS_OK = 0.01
# k6 sent less than this share of the iterations the plan asked for: the generator, not the system, set the load.
OFFERED_SHARE = 0.9
# A rate at least this many times the one at as many workers as cores: it kept growing past the cores.
STILL_GROWING = 1.10
# A drain longer than this after a breakpoint ramp: the work behind the HTTP answers fell behind.
FELL_BEHIND_DRAIN_SECONDS = 30.0


@dataclass(frozen=True)
class Answer:
    outcome: str  # Yes | No | Partly | Not found | Inconclusive | Unknown
    text: str

    def __str__(self) -> str:
        return f"{self.outcome}: {self.text}"


# --- runs that cannot answer ---------------------------------------------------------------

def generator_reasons(result: CaseResult, run: RunStatus) -> list[str]:
    """Why the generator, not the system, set the run's load: the verdict's rule
    (elves.engine.results.generator_limit) as the verdict judged it, or applied to the figures for a
    summary written before verdicts said so; and, what only the study counts, k6 sending less
    than the plan asked."""
    r = run.results
    assert r is not None
    reasons = judged_limits(r, run.verdict)
    counted = offered(result.test, run)
    if counted is not None and counted.asked and counted.sent < OFFERED_SHARE * counted.asked:
        reasons.append(f"k6 sent {counted.sent:,} of the {counted.asked:,.0f} {counted.unit} asked"
                       f" ({counted.sent / counted.asked:.0%})")
    return reasons


def late_change_reasons(result: CaseResult, run: RunStatus) -> list[str]:
    reasons = []
    for change in landed(result.test, run):
        if change.inside:
            continue
        when = ("never took effect" if change.effect_at is None else
                f"took effect at {format_duration(round(change.effect_at))}")
        reasons.append(f"'{change.label}' (planned at {format_duration(round(change.planned_at))}) {when},"
                       f" after the load ended at {format_duration(round(change.load_seconds))}")
    return reasons


def inconclusive_reasons(result: CaseResult) -> list[str]:
    reasons = []
    busy = busy_reason(result.run)
    if busy:
        reasons.append(f"ran on a busy machine: {busy}")
    for run in result.runs:
        prefix = f"{point_text(run)}: " if len(result.runs) > 1 else ""
        reasons += [prefix + reason for reason in generator_reasons(result, run) + late_change_reasons(result, run)]
    return reasons


# --- one rule per kind of finding -----------------------------------------------------------

def _last(result: CaseResult) -> RunResults:
    results = result.runs[-1].results
    assert results is not None
    return results


def _missed(result: CaseResult, run: RunStatus | None = None) -> list[str]:
    """The run's own objectives that failed, as `name observed (wanted target)`."""
    verdict = (run or result.runs[-1]).verdict
    return [f"{c.name} {observed_text(c.name, c.observed)} (wanted {c.target})"
            for c in (verdict.checks if verdict else []) if not c.ok]


def _ledger(result: CaseResult, r: RunResults) -> list[str]:
    """Problems of the ledger a reader must see: lost work, and a surplus `lost` cannot show."""
    problems = []
    if lost_total(r):
        problems.append(f"lost {lost_total(r)}")
    scenario = BUILTIN_SCENARIOS.get(result.test.spec.load.scenario or "") if result.test else None
    surplus = surplus_text(r, scenario.logged_endpoints if scenario else ())
    if surplus:
        problems.append(surplus)
    return problems


def steady(result: CaseResult) -> Answer:
    r = _last(result)
    top = deepest(r.queues)
    restarts = sum(d.restarts for d in r.deployments.values())
    problems = []
    if restarts:
        problems.append(f"{restarts} restart(s) ({restarts_text(r)})")
    problems += _ledger(result, r)
    if (r.total.error_rate or 0) >= ERRORS_OK:
        problems.append(f"{percent_text(r.total.error_rate)} failed")
    limit = result.case.finding.queue_below
    if top is not None and limit is not None and top[1] >= limit:
        problems.append(f"{top[0].removeprefix('elves.')} piled up to {top[1]:g}")
    missed = _missed(result)
    if missed:
        problems.append("missed its own objectives " + ", ".join(missed))
    if problems:
        return Answer("No", ", ".join(problems) + ".")
    queue = f"the deepest queue {top[0].removeprefix('elves.')} {top[1]:g}" if top else "no queue measured"
    return Answer("Yes", f"no restart, nothing lost, {percent_text(r.total.error_rate)} failed, {queue},"
                         f" p99 {format_seconds(r.total.p99)}, every objective held.")


def overload(result: CaseResult) -> Answer:
    r, finding = _last(result), result.case.finding
    queue = finding.queue or WORK_QUEUES[0]
    depth = r.queues[queue].max if queue in r.queues else None
    if depth is None:
        return Answer("Unknown", f"{queue} was not measured.")
    restarts = sum(d.restarts for d in r.deployments.values())
    short = queue.removeprefix("elves.")
    problems = _ledger(result, r)
    kept = "nothing was lost" if not problems else "; ".join(problems)
    if depth >= (finding.above or 0) or restarts:
        return Answer("Yes" if not problems else "Partly",
                      f"{short} piled up to {depth:g} ({restarts} restart(s)) and {kept}.")
    return Answer("No", f"the single ingestor kept up ({short} peaked at {depth:g}, under {finding.above:g}; no restart)"
                        f" and {kept}.")


def bottleneck(result: CaseResult) -> Answer:
    r, expect = _last(result), result.case.finding.expect
    top = deepest(r.queues)
    if top is None:
        return Answer("Unknown", "no queue depth was measured.")
    depths = ", ".join(f"{q.removeprefix('elves.')} {r.queues[q].max:g}" for q in expect
                       if q in r.queues and r.queues[q].max is not None) or "(not measured)"
    if top[0] in expect and top[1] > 0:
        return Answer("Yes", f"the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}); the registry's"
                             f" queues: {depths}.")
    return Answer("No", f"the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}); the registry's"
                        f" peaked at {depths}.")


def fault_tolerance(result: CaseResult) -> Answer:
    run = result.runs[-1]
    r = _last(result)
    data = r.endpoints.get("getData")
    reads = {e: r.endpoints[e].error_rate for e in READS if e in r.endpoints and r.endpoints[e].error_rate}
    worst = max(reads.items(), key=lambda item: item[1]) if reads else None
    data_ok = data is not None and (data.error_rate or 0) < ERRORS_OK
    kept = lost_total(r) == 0 and r.drain_completed and not _ledger(result, r)
    changes = "; ".join(f"{c.label} at {format_duration(round(c.effect_at))}" for c in landed(result.test, run)
                        if c.effect_at is not None)
    reads_text = f"{worst[0]} failed {percent_text(worst[1])} over the run" if worst else "no read failed"
    text = (f"getData failed {percent_text(data.error_rate if data else None)} while {reads_text}; queues peaked at "
            f"{queue_text(r)} and drained in {drain_text(r)} after the load; lost {lost_total(r)}"
            + (f" (changes took effect: {changes}, load over at {format_duration(round(r.load_seconds))})" if changes else "")
            + ".")
    if data_ok and kept and worst:
        return Answer("Yes", text)
    return Answer("Partly" if data_ok and kept else "No", text)


def served(result: CaseResult) -> Answer:
    run = result.runs[-1]
    r, finding = _last(result), result.case.finding
    endpoint = finding.endpoint or ""
    mix = result.test.spec.load.effective_mix if result.test else {}
    asked = (asked_rate(result.test, run) or 0) * mix.get(endpoint, 0) / (sum(mix.values()) or 1)
    got = r.endpoints[endpoint].rate if endpoint in r.endpoints else 0.0
    text = (f"{endpoint} at {format_rate(got)} of {format_rate(asked)} asked, p99 {format_seconds(r.total.p99)},"
            f" {percent_text(r.total.error_rate)} failed")
    if r.throughput_stability is not None:
        text += f", last minute's throughput {r.throughput_stability:.2f} x the first's"
    registry = r.deployments.get("registry")
    if registry is not None and registry.heap_max_bytes is not None:
        text += f", registry heap up to {value_text(registry.heap_max_bytes, 'bytes')}, GC {format_seconds(registry.gc_seconds)}"
    problems = _ledger(result, r)
    text += "".join(f"; {p}" for p in problems)
    if asked and got >= finding.share * asked and (r.total.error_rate or 0) < ERRORS_OK and not problems:
        return Answer("Yes", f"{text}.")
    return Answer("No", f"{text}.")


def memory(result: CaseResult) -> Answer:
    runs = [run for run in result.runs if run.results]
    ooms = [(point_text(run), run.results.deployments["ingestor"].oom_kills
             if "ingestor" in run.results.deployments else 0) for run in runs]
    text = "; ".join(f"{point} {count} OOM kill(s)" for point, count in ooms)
    problems = [f"{point_text(run)}: {p}" for run in runs for p in _ledger(result, run.results)]
    tail = "; ".join(problems) if problems else "nothing lost"
    if ooms and ooms[0][1] > 0 and ooms[-1][1] == 0 and not problems:
        return Answer("Yes", f"{text}; {tail}.")
    return Answer("No", f"{text}; {tail}.")


def breakpoint_found(result: CaseResult) -> Answer:
    """Where it broke: the verdict's breakpoint, or what gave way that the objectives do not watch."""
    run = result.runs[-1]
    r = _last(result)
    verdict = run.verdict
    if verdict is not None and verdict.breakpoint is not None:
        b = verdict.breakpoint
        achieved = f" ({format_rate(b.achieved_rate)} achieved)" if b.achieved_rate is not None else ""
        return Answer("Yes", f"it broke at a planned {format_rate(b.rate)}{achieved}, {format_duration(round(b.at_seconds))}"
                             f" into the load, on {b.check}.")
    top = deepest(r.queues)
    peak = format_rate(asked_rate(result.test, run))
    held = f"no objective broke up to the planned peak of {peak} (p99 {format_seconds(r.total.p99)}, " \
           f"{percent_text(r.total.error_rate)} failed)"
    if top is not None and (not r.drain_completed or (r.drain_seconds or 0) > FELL_BEHIND_DRAIN_SECONDS):
        return Answer("Not found", f"{held}, but the work fell behind: {top[0].removeprefix('elves.')} piled up to"
                                   f" {top[1]:g} and took {drain_text(r)} to drain after the load; its objectives"
                                   f" watch the HTTP answers, not the work behind them.")
    return Answer("Not found", f"{held}: the ramp did not reach the system's limit.")


def scaling(result: CaseResult) -> Answer:
    """Whether the work per second stopped growing once the workers exceed the cores."""
    finding = result.case.finding
    cores = int((result.run or {}).get("cores") or 0)
    if not cores or not finding.workers:
        return Answer("Unknown", "the cores or the swept workers are not known.")
    by_clients: dict[object, list[tuple[float, float]]] = {}
    for run in result.runs:
        r = run.results
        assert r is not None
        workers = run.point.get(finding.workers)
        done = r.ledger.results_done if r.ledger else 0
        if isinstance(workers, (int, float)) and r.load_seconds:
            by_clients.setdefault(run.point.get(finding.clients or ""), []).append((float(workers), done / r.load_seconds))
    lines, grew = [], False
    for clients, points in by_clients.items():
        points.sort()
        at_cores = [rate for workers, rate in points if workers <= cores]
        past = [rate for workers, rate in points if workers > cores]
        series = " -> ".join(f"{rate:.2f}" for _, rate in points)
        lines.append(f"{clients} clients: {series} plots/s for {', '.join(f'{w:g}' for w, _ in points)} workers")
        if at_cores and past and max(past) >= STILL_GROWING * at_cores[-1]:
            grew = True
    if not lines:
        return Answer("Unknown", "no run swept the workers.")
    text = "; ".join(lines) + f" ({cores} cores)"
    if grew:
        return Answer("No", f"plots per second kept growing past the cores: {text}.")
    return Answer("Yes", f"plots per second stopped growing past the cores: {text}.")


def _autoscaled(result: CaseResult, run: RunStatus) -> bool:
    """Whether an autoscaler owned a deployment's replicas in this run (its sweep point's system)."""
    if result.test is None:
        return False
    points = expand_sweep(result.test.spec)
    system = points[run.index].system if run.index < len(points) else result.test.spec.system
    return bool(autoscaled(system.autoscaling))


def _configuration(run: RunStatus, deployment: str, autoscaled_run: bool) -> str:
    """`keda, 1 to 3 ready` or `fixed 4`: who set the deployment's replicas, and what they were."""
    r = run.results
    assert r is not None
    result = r.deployments.get(deployment)
    if result is None or result.replicas_max is None:
        return "replicas not measured"
    scaling = result.scaling
    if autoscaled_run and scaling is not None and scaling.autoscaler:
        return f"{scaling.autoscaler}, {result.replicas_min or 0:g} to {result.replicas_max:g} ready"
    return f"fixed {result.replicas_max:g}"


def _scaling_figures(run: RunStatus, queue: str, deployment: str) -> str:
    r = run.results
    assert r is not None
    depth = r.queues[queue].max if queue in r.queues else None
    dep = r.deployments.get(deployment)
    scaling = dep.scaling if dep else None
    parts = [f"deepest {queue.removeprefix('elves.')} {depth:g}" if depth is not None else "queue not measured"]
    if scaling and scaling.scale_up_lag_seconds is not None:
        parts.append(f"first added replica Ready {format_seconds(scaling.scale_up_lag_seconds)} after {scaling.trigger}")
    if scaling and scaling.replica_changes:
        parts.append(f"{scaling.replica_changes} replica change(s)")
    if scaling and scaling.replica_seconds is not None:
        parts.append(f"{scaling.replica_seconds:,.0f} replica-seconds")
    parts.append(f"drain {drain_text(r)}")
    lost_now = lost_total(r)
    parts.append(f"lost {lost_now}" if lost_now else "nothing lost")
    return ", ".join(parts)


def autoscaling(result: CaseResult) -> Answer:
    """Whether an autoscaler on the work queue removes the pile-up the fixed replicas had, and at
    what cost: its run against the same case's fixed run and the baseline case's fixed replicas."""
    finding = result.case.finding
    queue = finding.queue or WORK_QUEUES[0]
    fed_by_queue = [d for d, q in SCALED_ON_QUEUE.items() if q == queue] or list(SCALED_ON_QUEUE)
    deployment = finding.deployment or fed_by_queue[0]
    scaled = [run for run in result.runs if _autoscaled(result, run)]
    fixed = [run for run in result.runs if not _autoscaled(result, run)]
    baseline = result.baseline.runs if result.baseline else []
    if not scaled or not fixed:
        return Answer("Unknown", "the case needs a run with the autoscaler and one with fixed replicas.")
    lines = [f"{_configuration(run, deployment, auto)}: {_scaling_figures(run, queue, deployment)}"
             for run, auto in [(scaled[-1], True), (fixed[-1], False)] + [(run, False) for run in baseline[-1:]]]
    text = "; ".join(lines)
    r_scaled, r_fixed = scaled[-1].results, fixed[-1].results
    assert r_scaled is not None and r_fixed is not None
    depth = (r_scaled.queues[queue].max if queue in r_scaled.queues else None,
             r_fixed.queues[queue].max if queue in r_fixed.queues else None)
    if depth[0] is None or depth[1] is None:
        return Answer("Unknown", f"{queue} was not measured in both runs: {text}.")
    lost_any = any(lost_total(run.results) for run in [*scaled, *fixed, *baseline] if run.results)
    if lost_any:
        return Answer("No", f"something was lost: {text}.")
    if depth[0] * 2 <= depth[1]:
        return Answer("Yes", f"the autoscaled queue peaked at half the fixed one's or less: {text}.")
    if depth[0] < depth[1]:
        return Answer("Partly", f"the autoscaled queue peaked lower, but not at half the fixed one's: {text}.")
    return Answer("No", f"the autoscaled queue peaked as deep as the fixed one's or deeper: {text}.")


def objectives(result: CaseResult) -> Answer:
    verdict = result.status.verdict if result.status else None
    if verdict is None:
        return Answer("Unknown", "no verdict.")
    missed = [m for run in result.runs for m in _missed(result, run)]
    problems = [p for run in result.runs if run.results for p in _ledger(result, run.results)]
    if not missed and not problems:
        return Answer("Yes", f"every objective held ({len(verdict.checks)}/{len(verdict.checks)}).")
    return Answer("No", "; ".join([f"missed {', '.join(missed)}"] * bool(missed) + problems) + ".")


RULES = {"steady": steady, "overload": overload, "bottleneck": bottleneck, "fault_tolerance": fault_tolerance,
         "served": served, "memory": memory, "breakpoint": breakpoint_found, "scaling": scaling,
         "autoscaling": autoscaling, "objectives": objectives}


def answer(result: CaseResult) -> Answer:
    """The case's answer; the caller has checked that it ran and has results."""
    measured = RULES[result.case.finding.kind](result)
    reasons = inconclusive_reasons(result)
    if reasons:
        return Answer("Inconclusive", "; ".join(reasons) + f". What it measured (not an answer): {measured}")
    return measured
