"""The answer to each case's question, computed from its run's figures and its own verdict.

A rule per kind of finding (study.yaml's `finding.kind`) reads the one measurement that
answers the question. Before any rule, a run that cannot answer is "Inconclusive", with
the reason and the rule that found it: it ran on a busy machine, its own stack saturated the
machine, its generator could not offer the load, or a planned change (a scale-up, a kill)
took effect after the load had ended. The measurement is still shown after the reason, marked
as not an answer. A figure a rule needs that the run did not record makes the answer "Cannot
tell", naming what is missing. Every answer names the rule that made it (`RULES`,
`STANDING_RULES`; the results page lists them with what each says).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from elves.constants import SCALED_ON_QUEUE, WORK_QUEUES
from elves.engine.models.autoscaling import autoscaled
from elves.engine.models.scenarios import BUILTIN_SCENARIOS
from elves.engine.models.status import RunResults, RunStatus
from elves.engine.models.summary import deepest, work_queues
from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.planning.plan import expand_sweep
from elves.engine.results.depth import trend
from elves.engine.results.format import observed_text, percent_text, value_text
from elves.engine.results.generator_limit import judged_limits
from elves.engine.results.machine_state import (BUSY_LOAD_PER_CORE, BUSY_OUTSIDE_CORES, SATURATED_LOAD_PER_CORE,
                                                busy_reason, saturated_reason, saturation_unknown)
from elves.study.case_results import (STORED_TWICE, CaseResult, asked_rate, drain_text, landed, lost_total, offered,
                                      point_text, queue_text, restarts_text, surplus_text)
from elves.study.queue_depth import NO_DEPTH_OVER_LOAD, depth_text, depth_of, steady_comparison

READS = ("getHistory", "getAllHistory", "getStatus")
ERRORS_OK = 0.01
# k6 sent less than this share of the iterations the plan asked for: the generator, not the system, set the load.
OFFERED_SHARE = 0.9
# A rate at least this many times the one at as many workers as cores: it kept growing past the cores.
STILL_GROWING = 1.10
# A drain longer than this after a breakpoint ramp: the work behind the HTTP answers fell behind.
FELL_BEHIND_DRAIN_SECONDS = 30.0
# served with `held`: the last minute's throughput at least this share of the first's.
HELD_SHARE = 0.9


@dataclass(frozen=True)
class Answer:
    outcome: str  # Yes | No | Partly | Not found | Inconclusive | Cannot tell
    text: str
    rule: str = ""  # the rule that made it: a key of RULES or STANDING_RULES

    def __str__(self) -> str:
        return f"{self.outcome} [rule {self.rule}]: {self.text}" if self.rule else f"{self.outcome}: {self.text}"


# --- runs that cannot answer ---------------------------------------------------------------

def generator_reasons(result: CaseResult, run: RunStatus) -> list[str]:
    """Why the generator, not the system, set the run's load: the verdict's rule
    (elves.engine.results.generator_limit) as the verdict judged it, or applied to the figures for a
    summary written before verdicts said so; and, what only the study counts, k6 sending less
    than the plan asked."""
    r = run.results
    assert r is not None
    reasons = judged_limits(r, run.verdict)
    if _sent_short(result, run) and offered(result.test, run).recorded:
        counted = offered(result.test, run)
        reasons.append(f"k6 sent {counted.sent:,} of the {counted.asked:,.0f} {counted.unit} asked"
                       f" ({counted.sent / counted.asked:.0%})")
    return reasons


def _sent_short(result: CaseResult, run: RunStatus) -> bool:
    counted = offered(result.test, run)
    return counted is not None and bool(counted.asked) and counted.sent < OFFERED_SHARE * counted.asked


def unknown_reasons(result: CaseResult) -> list[tuple[str, str]]:
    """(rule, what is missing) for each standing rule the run's record cannot decide."""
    missing = []
    saturation = saturation_unknown(result.run)
    if saturation:
        missing.append(("stack-saturated", f"whether the machine was saturated: {saturation}"))
    for run in result.runs:
        counted = offered(result.test, run)
        if _sent_short(result, run) and not counted.recorded:
            missing.append(("generator-limited", f"whether k6 offered the load: it sent {counted.sent:,} of the"
                            f" {counted.asked:,.0f} {counted.unit} today's planner asks of its spec, and the summary"
                            f" does not record what the planner that ran it asked (a profile's shape is the"
                            f" planner's, which changes with the code)"))
    return missing


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


def inconclusive_reasons(result: CaseResult) -> list[tuple[str, str]]:
    """(rule, reason) for each reason the run cannot answer."""
    reasons = []
    busy = busy_reason(result.run)
    if busy:
        reasons.append(("busy-machine", f"ran on a busy machine: {busy}"))
    saturated = saturated_reason(result.run)
    if saturated:
        reasons.append(("stack-saturated", f"ran on a saturated machine: {saturated}"))
    for run in result.runs:
        prefix = f"{point_text(run)}: " if len(result.runs) > 1 else ""
        reasons += [("generator-limited", prefix + reason) for reason in generator_reasons(result, run)]
        reasons += [("change-after-load", prefix + reason) for reason in late_change_reasons(result, run)]
    return reasons


# The rules that decide whether a run can answer at all, before the rule of its kind.
STANDING_RULES = {
    "busy-machine": f"Other processes than the stack used over {BUSY_OUTSIDE_CORES:g} cores on average while the case"
                    f" ran, or the load average was over {BUSY_LOAD_PER_CORE:g} per core before it: Inconclusive"
                    " (elves.engine.results.machine_state.busy_reason; `elves compare` applies it too).",
    "stack-saturated": f"The load average was over {SATURATED_LOAD_PER_CORE:g} per core during the load (recorded"
                       " since the suite samples it there) or, in an older record, at the run's end, whoever caused"
                       " it, the stack's own processes included: Inconclusive; no load average recorded: Cannot"
                       " tell (elves.engine.results.machine_state.saturated_reason; `elves compare` applies it too).",
    "generator-limited": "k6 dropped iterations, brought up every VU the plan allows or filled a runner's cores (the"
                         f" verdict's rule), or sent under {OFFERED_SHARE:.0%} of the iterations asked: Inconclusive;"
                         " asked by a profile the summary does not record the count of: Cannot tell.",
    "change-after-load": "A planned change (a scale, a pause) took effect after the load had ended: Inconclusive.",
}


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


def _ledger(result: CaseResult, r: RunResults) -> tuple[list[str], list[str]]:
    """(problems, notes) of the ledger a reader must see. Lost work is a problem, and so is work
    stored twice; a surplus the requests k6 gave up on explain (the server finished them) is
    never loss: a note beside the answer, not a reason for it."""
    problems = []
    if lost_total(r):
        problems.append(f"lost {lost_total(r)}")
    scenario = BUILTIN_SCENARIOS.get(result.test.spec.load.scenario or "") if result.test else None
    surplus = surplus_text(r, scenario.logged_endpoints if scenario else ())
    if surplus and surplus.endswith(STORED_TWICE):
        return problems + [surplus], []
    return problems, [f"not a loss: {surplus}"] if surplus else []


def _with_notes(answer: Answer, notes: list[str]) -> Answer:
    return replace(answer, text=answer.text.rstrip(".") + "".join(f"; {n}" for n in notes) + ".") if notes else answer


def _growing(result: CaseResult, run: RunStatus) -> list[str]:
    """Work queues still growing at the load's end, in words (their depth over the load known)."""
    r = run.results
    assert r is not None
    growing = []
    for queue in work_queues(r.queues):
        depth = depth_of(result, run, queue)
        if depth is not None and trend(depth) == "growing":
            growing.append(depth_text(result, run, queue))
    return growing


def _queue_over(result: CaseResult, run: RunStatus, limit: float) -> tuple[str | None, str | None]:
    """(a work queue that piled up to `limit` or more after the transient, in words; what is
    missing to tell), judged on the load after its first part; a deepest figure under the limit
    needs no more (nothing after the transient can be deeper)."""
    r = run.results
    assert r is not None
    for queue, q in work_queues(r.queues).items():
        if q.max is None or q.max < limit:
            continue
        depth = depth_of(result, run, queue)
        if depth is None:
            return None, (f"{queue.removeprefix('elves.')} reached {q.max:g}, at or over {limit:g}, and whether"
                          f" only in the transient of the load's first part cannot be told: {NO_DEPTH_OVER_LOAD}")
        if (depth.peak or 0) >= limit:
            return depth_text(result, run, queue), None
    return None, None


def steady(result: CaseResult) -> Answer:
    """Yes when no deployment restarted, nothing was lost, under 1 % of all requests failed, the
    run's own objectives held, and no work queue piled up to `queue_below` after the transient of
    the load's first part nor was still growing at the load's end; a queue still growing in a run
    shorter than the study's, or one over the limit whose transient cannot be told apart: Cannot tell."""
    run = result.runs[-1]
    r = _last(result)
    top = deepest(r.queues)
    restarts = sum(d.restarts for d in r.deployments.values())
    problems = []
    if restarts:
        problems.append(f"{restarts} restart(s) ({restarts_text(r)})")
    ledger_problems, notes = _ledger(result, r)
    problems += ledger_problems
    if (r.total.error_rate or 0) >= ERRORS_OK:
        problems.append(f"{percent_text(r.total.error_rate)} of all requests failed")
    limit = result.case.finding.queue_below
    piled, missing = _queue_over(result, run, limit) if limit is not None else (None, None)
    if piled:
        problems.append(f"piled up: {piled}")
    growing = _growing(result, run)
    short = result.case.study.seconds is not None and r.load_seconds < result.case.study.seconds
    if growing and not short:
        problems.append("still growing at the load's end: " + "; ".join(growing))
    missed = _missed(result)
    if missed:
        problems.append("missed its own objectives " + ", ".join(missed))
    if problems:
        return _with_notes(Answer("No", ", ".join(problems) + "."), notes)
    if missing:
        return Answer("Cannot tell", f"cannot tell: {missing}.")
    unknown = [q.removeprefix("elves.") for q, depth in work_queues(r.queues).items()
               if depth.max and depth_of(result, run, q) is None]
    if short and unknown:
        return Answer("Cannot tell", f"cannot tell whether {', '.join(unknown)} {'was' if len(unknown) == 1 else 'were'}"
                                     f" still growing when the load ended"
                                     f" ({format_duration(round(r.load_seconds))} of the study's"
                                     f" {format_duration(round(result.case.study.seconds or 0))}): {NO_DEPTH_OVER_LOAD}.")
    if growing:
        why = [c for q in work_queues(r.queues) for c in [steady_comparison(result, run, q)] if c]
        return Answer("Cannot tell", f"cannot tell: no pile-up during the load, but {'; '.join(why)}:"
                                     f" {'; '.join(growing)}.")
    queue = depth_text(result, run, top[0]) if top else "no queue measured"
    return _with_notes(Answer("Yes", f"no restart, nothing lost, {percent_text(r.total.error_rate)} of all requests"
                                     f" failed, {queue}, p99 {format_seconds(r.total.p99)}, every objective held."),
                       notes)


def overload(result: CaseResult) -> Answer:
    """Yes when the work `queue` piled up to `above` or more after the transient of the load's
    first part (or a deployment restarted) and nothing was lost (Partly when something was); No
    when it kept under. The depth says whether it may stand beside the study's steady state."""
    run = result.runs[-1]
    r, finding = _last(result), result.case.finding
    queue = finding.queue or WORK_QUEUES[0]
    if queue not in r.queues or r.queues[queue].max is None:
        return Answer("Cannot tell", f"cannot tell: {queue} was not measured.")
    restarts = sum(d.restarts for d in r.deployments.values())
    problems, notes = _ledger(result, r)
    kept = "nothing was lost" if not problems else "; ".join(problems)
    piled, missing = _queue_over(result, run, finding.above or 0)
    if missing and not restarts:
        return Answer("Cannot tell", f"cannot tell: {missing}.")
    depth = depth_text(result, run, queue)
    comparison = steady_comparison(result, run, queue)
    beside = f"; its depth {comparison}" if comparison else ""
    if piled or restarts:
        return _with_notes(Answer("Yes" if not problems else "Partly",
                                  f"{depth} ({restarts} restart(s)) and {kept}{beside}."), notes)
    return _with_notes(Answer("No", f"the single ingestor kept up ({depth}, under {finding.above:g}; no restart)"
                                    f" and {kept}{beside}."), notes)


def bottleneck(result: CaseResult) -> Answer:
    """Yes when the deepest work queue is one of `expect` (where the study saw the pile-up), No
    when another; each queue's peak, steady state and trend given, and whether it may stand beside
    the study's steady state."""
    run = result.runs[-1]
    r, expect = _last(result), result.case.finding.expect
    top = deepest(r.queues)
    if top is None:
        return Answer("Cannot tell", "cannot tell: no queue depth was measured.")
    named = [top[0]] + [q for q in expect if q != top[0] and q in r.queues and r.queues[q].max is not None]
    depths = "; ".join(depth_text(result, run, q) for q in named)
    comparisons = [c for q in expect if q in r.queues for c in [steady_comparison(result, run, q)] if c]
    beside = f"; the registry's queues' depths {comparisons[0]}" if comparisons else ""
    if top[0] in expect and top[1] > 0:
        return Answer("Yes", f"the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}): {depths}{beside}.")
    return Answer("No", f"the deepest queue was {top[0].removeprefix('elves.')} ({top[1]:g}), not the registry's:"
                        f" {depths}{beside}.")


def _changes_text(result: CaseResult, run: RunStatus) -> str:
    """Each planned change as planned, as applied and as it took effect, in seconds into the load."""
    parts = []
    for change in landed(result.test, run):
        effect = "never took effect" if change.effect_at is None else f"took effect {change.effect_at:.1f}"
        parts.append(f"{change.label}: planned {change.planned_at:.1f}, applied {change.applied_at:.1f}, {effect}")
    return "; ".join(parts)


def fault_tolerance(result: CaseResult) -> Answer:
    """Yes when getData failed under 1 % of its requests while a read failed (the consumers were
    gone), nothing was lost and the queues drained; Partly when no read failed; else No. The
    changes are given as applied and as they took effect, not as planned."""
    run = result.runs[-1]
    r = _last(result)
    data = r.endpoints.get("getData")
    reads = {e: r.endpoints[e].error_rate for e in READS if e in r.endpoints and r.endpoints[e].error_rate}
    worst = max(reads.items(), key=lambda item: item[1]) if reads else None
    data_ok = data is not None and (data.error_rate or 0) < ERRORS_OK
    problems, notes = _ledger(result, r)
    kept = lost_total(r) == 0 and r.drain_completed and not problems
    changes = _changes_text(result, run)
    reads_text = f"{worst[0]} failed {percent_text(worst[1])} of its own requests" if worst else "no read failed"
    text = (f"getData failed {percent_text(data.error_rate if data else None)} of its own requests while {reads_text}"
            f" ({percent_text(r.total.error_rate)} of all requests); queues peaked at {queue_text(r)} and drained in"
            f" {drain_text(r)} after the load; lost {lost_total(r)}"
            + (f" (changes, in seconds into the load: {changes}; the load ended at {r.load_seconds:.1f})"
               if changes else "") + ".")
    if data_ok and kept and worst:
        return _with_notes(Answer("Yes", text), notes)
    return _with_notes(Answer("Partly" if data_ok and kept else "No", text), notes)


def served(result: CaseResult) -> Answer:
    """Yes when `endpoint` achieved `share` of its asked rate, under 1 % of all requests failed and
    nothing was lost; with `held`, also the last minute's throughput at least 0.9 of the first's
    (a load under two minutes cannot tell)."""
    run = result.runs[-1]
    r, finding = _last(result), result.case.finding
    endpoint = finding.endpoint or ""
    mix = result.test.spec.load.effective_mix if result.test else {}
    asked = (asked_rate(result.test, run) or 0) * mix.get(endpoint, 0) / (sum(mix.values()) or 1)
    got = r.endpoints[endpoint].rate if endpoint in r.endpoints else 0.0
    text = (f"{endpoint} at {format_rate(got)} of {format_rate(asked)} asked (the mean over the load),"
            f" p99 {format_seconds(r.total.p99)}, {percent_text(r.total.error_rate)} of all requests failed")
    if r.throughput_stability is not None:
        text += f", last minute's throughput {r.throughput_stability:.2f} x the first's"
    registry = r.deployments.get("registry")
    if registry is not None and registry.heap_max_bytes is not None:
        text += f", registry heap up to {value_text(registry.heap_max_bytes, 'bytes')}, GC {format_seconds(registry.gc_seconds)}"
    problems, notes = _ledger(result, r)
    text += "".join(f"; {p}" for p in problems)
    if not (asked and got >= finding.share * asked and (r.total.error_rate or 0) < ERRORS_OK and not problems):
        return _with_notes(Answer("No", f"{text}."), notes)
    if finding.held and r.throughput_stability is None:
        return _with_notes(Answer("Cannot tell", f"cannot tell whether the throughput held: the load lasted"
                                                 f" {format_duration(round(r.load_seconds))}, and the last minute's"
                                                 f" throughput is set against the first's only from two minutes; {text}."),
                           notes)
    if finding.held and (r.throughput_stability or 0) < HELD_SHARE:
        return _with_notes(Answer("No", f"the throughput fell: {text}."), notes)
    return _with_notes(Answer("Yes", f"{text}."), notes)


def memory(result: CaseResult) -> Answer:
    """Yes when the smallest memory was OOM-killed, the largest was not, and nothing was lost."""
    runs = [run for run in result.runs if run.results]
    ooms = [(point_text(run), run.results.deployments["ingestor"].oom_kills
             if "ingestor" in run.results.deployments else 0) for run in runs]
    text = "; ".join(f"{point} {count} OOM kill(s)" for point, count in ooms)
    ledgers = [(point_text(run), _ledger(result, run.results)) for run in runs]
    problems = [f"{point}: {p}" for point, (found, _) in ledgers for p in found]
    notes = [f"{point}: {n}" for point, (_, noted) in ledgers for n in noted]
    tail = "; ".join(problems) if problems else "nothing lost"
    if ooms and ooms[0][1] > 0 and ooms[-1][1] == 0 and not problems:
        return _with_notes(Answer("Yes", f"{text}; {tail}."), notes)
    return _with_notes(Answer("No", f"{text}; {tail}."), notes)


def breakpoint_found(result: CaseResult) -> Answer:
    """Yes with the verdict's breakpoint (the planned rate and time where an objective broke); else
    Not found, saying whether the work behind the answers fell behind (a queue that took over 30 s
    to drain, or never drained) or the ramp did not reach the system's limit."""
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
    """Yes when plots per second (results done over the load) stopped growing once the workers
    exceed the cores: at more workers than cores under 1.1 x the rate at as many as cores, for
    every number of clients; else No."""
    finding = result.case.finding
    cores = int((result.run or {}).get("cores") or 0)
    if not cores or not finding.workers:
        return Answer("Cannot tell", "cannot tell: the cores or the swept workers are not recorded.")
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
        return Answer("Cannot tell", "cannot tell: no run swept the workers.")
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
    """Yes when the autoscaled run's deepest `queue` was at most half the fixed run's, Partly when
    lower, No when as deep or when anything was lost; with the replica-seconds, the scale-up lag and
    the drain beside the `baseline` case's fixed replicas."""
    finding = result.case.finding
    queue = finding.queue or WORK_QUEUES[0]
    fed_by_queue = [d for d, q in SCALED_ON_QUEUE.items() if q == queue] or list(SCALED_ON_QUEUE)
    deployment = finding.deployment or fed_by_queue[0]
    scaled = [run for run in result.runs if _autoscaled(result, run)]
    fixed = [run for run in result.runs if not _autoscaled(result, run)]
    baseline = result.baseline.runs if result.baseline else []
    if not scaled or not fixed:
        return Answer("Cannot tell", "cannot tell: the case needs a run with the autoscaler and one with fixed replicas.")
    lines = [f"{_configuration(run, deployment, auto)}: {_scaling_figures(run, queue, deployment)}"
             for run, auto in [(scaled[-1], True), (fixed[-1], False)] + [(run, False) for run in baseline[-1:]]]
    text = "; ".join(lines)
    r_scaled, r_fixed = scaled[-1].results, fixed[-1].results
    assert r_scaled is not None and r_fixed is not None
    depth = (r_scaled.queues[queue].max if queue in r_scaled.queues else None,
             r_fixed.queues[queue].max if queue in r_fixed.queues else None)
    if depth[0] is None or depth[1] is None:
        return Answer("Cannot tell", f"cannot tell: {queue} was not measured in both runs: {text}.")
    lost_any = any(lost_total(run.results) for run in [*scaled, *fixed, *baseline] if run.results)
    if lost_any:
        return Answer("No", f"something was lost: {text}.")
    if depth[0] * 2 <= depth[1]:
        return Answer("Yes", f"the autoscaled queue peaked at half the fixed one's or less: {text}.")
    if depth[0] < depth[1]:
        return Answer("Partly", f"the autoscaled queue peaked lower, but not at half the fixed one's: {text}.")
    return Answer("No", f"the autoscaled queue peaked as deep as the fixed one's or deeper: {text}.")


def objectives(result: CaseResult) -> Answer:
    """Yes when every objective of the LoadTest's own verdict held and nothing was lost or stored twice."""
    verdict = result.status.verdict if result.status else None
    if verdict is None:
        return Answer("Cannot tell", "cannot tell: the summary records no verdict.")
    missed = [m for run in result.runs for m in _missed(result, run)]
    ledgers = [_ledger(result, run.results) for run in result.runs if run.results]
    problems = [p for found, _ in ledgers for p in found]
    notes = [n for _, noted in ledgers for n in noted]
    if not missed and not problems:
        return _with_notes(Answer("Yes", f"every objective held ({len(verdict.checks)}/{len(verdict.checks)})."), notes)
    return _with_notes(Answer("No", "; ".join([f"missed {', '.join(missed)}"] * bool(missed) + problems) + "."), notes)


RULES = {"steady": steady, "overload": overload, "bottleneck": bottleneck, "fault_tolerance": fault_tolerance,
         "served": served, "memory": memory, "breakpoint": breakpoint_found, "scaling": scaling,
         "autoscaling": autoscaling, "objectives": objectives}


def answer(result: CaseResult) -> Answer:
    """The case's answer, naming the rule that made it; the caller has checked that it ran and has results."""
    kind = result.case.finding.kind
    measured = replace(RULES[kind](result), rule=kind)
    reasons = inconclusive_reasons(result)
    if reasons:
        rules = ", ".join(dict.fromkeys(rule for rule, _ in reasons))
        return Answer("Inconclusive", "; ".join(reason for _, reason in reasons)
                      + f". What it measured (not an answer): {measured}", rules)
    missing = unknown_reasons(result)
    if missing:
        rules = ", ".join(dict.fromkeys(rule for rule, _ in missing))
        return Answer("Cannot tell", "cannot tell " + "; nor ".join(what for _, what in missing)
                      + f". What it measured (not an answer): {measured}", rules)
    return measured


def rule_text(rule: str) -> str:
    """What a rule says, for the page's list of rules: a kind's docstring, or a standing rule's line."""
    if rule in STANDING_RULES:
        return STANDING_RULES[rule]
    return " ".join((RULES[rule].__doc__ or "").split())
