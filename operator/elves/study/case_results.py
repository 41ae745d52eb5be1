"""One case's committed files (its case results) and what the page and the answers read from them.

Everything here is computed from what summary.json and run.json hold: the load asked and
offered in one unit, the ledger's surplus, when a planned change took effect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elves.engine.models.errors import SpecError
from elves.engine.models.load import Load
from elves.engine.models.loadtest import LoadTest, parse_loadtest
from elves.engine.models.status import LoadTestStatus, RunResults, RunStatus
from elves.engine.models.summary import work_queues
from elves.engine.models.units import format_duration, format_rate, format_seconds
from elves.engine.planning.plan import expand_sweep, peak_rate, planned_iterations
from elves.engine.results.compare import CompareError, summary_status
from elves.study.cases import Case

SUMMARY, SERIES, RUN_FILE, MACHINE_FILE = "summary.json", "series.json", "run.json", "machine.json"

# Scenarios whose iterations can be counted from the requests the summary holds: the mix keys
# (execs) each of whose iterations sends exactly one request to the endpoint of the same name.
# None: every key of the mix. A journey sends several requests with retries: not countable.
COUNTED_EXECS: dict[str, tuple[str, ...] | None] = {"system-mix": None, "registry-mix": None, "ingestor": ("getData",)}


@dataclass
class CaseResult:
    case: Case
    summary: dict[str, Any] | None = None
    run: dict[str, Any] | None = None
    series: dict[str, Any] | None = None
    status: LoadTestStatus | None = None
    test: LoadTest | None = None
    problems: list[str] = field(default_factory=list)
    baseline: "CaseResult | None" = None  # finding.baseline's case, linked by the page

    @property
    def runs(self) -> list[RunStatus]:
        return [r for r in (self.status.runs if self.status else []) if r.results is not None]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def read_case(directory: Path, case: Case) -> CaseResult:
    result = CaseResult(case, read_json(directory / case.id / SUMMARY), read_json(directory / case.id / RUN_FILE),
                        read_json(directory / case.id / SERIES))
    if result.summary is not None:
        try:
            result.status = summary_status(result.summary)
            result.test = parse_loadtest(result.summary.get("loadtest", {}), f"{case.id}/{SUMMARY}")
        except (ValueError, SpecError, CompareError) as exc:
            result.problems.append(f"{case.id}/{SUMMARY} unusable: {str(exc).splitlines()[0]}")
    return result


# --- the load: asked and offered, in one unit ------------------------------------------

def run_load(test: LoadTest | None, run: RunStatus | None = None) -> Load | None:
    """The load a run was planned with (a sweep of load.rate or load.users changes it per run)."""
    if test is None:
        return None
    points = expand_sweep(test.spec)
    return points[run.index].load if run is not None and run.index < len(points) else test.spec.load


def asked_rate(test: LoadTest | None, run: RunStatus | None = None) -> float | None:
    load = run_load(test, run)
    return peak_rate(load) if load is not None and not load.closed else None


def closed_text(load: Load) -> str:
    """A closed model's users (and iterations)."""
    users = max([s.users or 0 for s in load.stages or []] or [load.users])
    return f"{users} users" + (f", {load.iterations} iterations" if load.iterations else "")


@dataclass(frozen=True)
class Offered:
    """The iterations the plan asked for and k6 sent, counted in the same unit."""
    unit: str  # "requests" or "getData round trips"
    asked: float  # iterations over the planned load
    sent: int
    peak: float  # the planned peak rate of the counted iterations, per second
    # Whether `asked` is the run's own (its summary records what its planner asked), or today's
    # planner's reading of its spec: for a profile, whose shape the planner makes, not the same.
    recorded: bool = True


def offered(test: LoadTest | None, run: RunStatus) -> Offered | None:
    """Asked and sent iterations of the counted execs, or None when the summary cannot count them."""
    load = run_load(test, run)
    if load is None or run.results is None or load.scenario not in COUNTED_EXECS:
        return None
    if load.closed and not load.iterations:
        return None  # users loop for a time: the plan fixes no number of iterations
    mix = load.effective_mix
    keys = COUNTED_EXECS[load.scenario] or tuple(mix)
    share = sum(mix.get(k, 0) for k in keys) / (sum(mix.values()) or 1)
    recorded = run.results.planned_iterations
    planned = recorded if recorded is not None else planned_iterations(load) or 0.0
    sent = sum(run.results.endpoints[k].requests for k in keys if k in run.results.endpoints)
    unit = "requests" if COUNTED_EXECS[load.scenario] is None else f"{' + '.join(keys)} round trips"
    return Offered(unit, planned * share, sent, 0.0 if load.closed else peak_rate(load) * share,
                   recorded is not None or load.profile is None)


def asked_text(test: LoadTest | None, run: RunStatus | None = None) -> str:
    """The planned load, in the unit `sent_text` counts: `200 requests (200/min peak)`."""
    load = run_load(test, run)
    if load is None:
        return "-"
    counted = offered(test, run) if run is not None else None
    if load.closed:
        return closed_text(load) + (f" ({counted.asked:,.0f} {counted.unit})" if counted else "")
    if counted is None:
        return f"{format_rate(peak_rate(load))} peak ({load.scenario or 'script'} iterations)"
    unrecorded = "" if counted.recorded else " as today's planner reads its spec (the summary does not record its own)"
    return (f"{counted.asked:,.0f} {counted.unit} in {format_duration(load.duration_seconds)}"
            f" ({format_rate(counted.peak)} peak){unrecorded}")


def sent_text(test: LoadTest | None, run: RunStatus) -> str:
    """What k6 sent, in the unit `asked_text` uses, and the requests per second over the load."""
    r = run.results
    assert r is not None
    counted = offered(test, run)
    took = format_duration(round(r.load_seconds))
    if counted is None:
        return f"{r.requests:,} requests in {took} ({format_rate(r.rate)})"
    return f"{counted.sent:,} {counted.unit} in {took} ({format_rate(counted.sent / r.load_seconds if r.load_seconds else 0)})"


# --- the other figures ------------------------------------------------------------------

def queue_text(results: RunResults) -> str:
    queues = [(name, q.max) for name, q in work_queues(results.queues).items() if q.max is not None]
    return ", ".join(f"{name.removeprefix('elves.')} {depth:g}" for name, depth in queues) or "-"


def restarts_text(results: RunResults) -> str:
    parts = [f"{name} {d.restarts}" + (f" ({d.oom_kills} OOM)" if d.oom_kills else "")
             for name, d in results.deployments.items() if d.restarts or d.oom_kills]
    return ", ".join(parts) or "none"


def replicas_text(results: RunResults) -> str:
    """Ready replicas per deployment, with the moments they changed: `ingestor 3, 0 at 1m12s, 3 at 2m05s`."""
    parts = []
    for name, d in results.deployments.items():
        changes, last = [], None
        for point in d.timeline:
            if point.ready is not None and point.ready != last:
                changes.append(f"{point.ready:g}" if last is None else f"{point.ready:g} at {format_duration(round(max(point.t, 0)))}")
                last = point.ready
        if changes:
            parts.append(f"{name} " + ", ".join(changes))
    return "; ".join(parts) or "-"


def lost(results: RunResults) -> tuple[int | None, int | None]:
    return (None, None) if results.ledger is None else (results.ledger.lost_requests, results.ledger.lost_logs)


def lost_total(results: RunResults) -> int | None:
    requests, logs = lost(results)
    return None if requests is None or logs is None else requests + logs


def unexpected_logs(results: RunResults) -> int:
    """Logs persisted beyond those the 2xx answers promised: the ledger's `lost` hides them (it is never below 0)."""
    ledger = results.ledger
    return max(0, ledger.logs_persisted - ledger.logs_expected) if ledger else 0


STORED_TWICE = "stored twice"  # how surplus_text ends when k6's requests cannot explain the surplus


def surplus_text(results: RunResults, logged: tuple[str, ...]) -> str | None:
    """The ledger's surplus and what the summary says of its cause, or None when it balances."""
    surplus = unexpected_logs(results)
    if not surplus:
        return None
    ledger = results.ledger
    assert ledger is not None
    sent = sum(results.endpoints[e].requests for e in logged if e in results.endpoints)
    failed = sum(results.endpoints[e].failed for e in logged if e in results.endpoints)
    timeouts = sum(results.endpoints[e].timeouts for e in logged if e in results.endpoints)
    head = (f"the ledger does not balance: {ledger.logs_persisted:,} logs stored against {ledger.logs_expected:,}"
            f" expected, {surplus:,} unexpected")
    if ledger.logs_persisted <= sent and surplus <= failed:
        return (f"{head}; no more than the {sent:,} requests k6 sent: {surplus:,} of the {failed:,} it counted as failed"
                f" ({timeouts:,} timed out) were stored all the same, the server finishing work k6 had given up on")
    return f"{head}, more than the {sent:,} requests k6 sent: {STORED_TWICE}"


def drain_text(results: RunResults) -> str:
    return format_seconds(results.drain_seconds) if results.drain_completed else "did not complete"


def point_text(run: RunStatus) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in run.point.items())


# --- planned changes: did they take effect inside the load? --------------------------------

@dataclass(frozen=True)
class Landed:
    label: str
    planned_at: float  # seconds into the load
    applied_at: float  # when the harness applied it (the fault's firedAt), seconds into the load
    effect_at: float | None  # when the change was seen (replicas), None when never
    load_seconds: float

    @property
    def inside(self) -> bool:
        return self.effect_at is not None and self.effect_at <= self.load_seconds


def landed(test: LoadTest | None, run: RunStatus) -> list[Landed]:
    """Each fault of the run and when it took effect: a scale-up when its first new replica was
    ready, a scale-down when the replicas fell to the target, a pause when it ended; anything
    else when it fired."""
    r = run.results
    if r is None:
        return []
    faults = test.spec.faults if test is not None else []
    out = []
    for event in run.faults:
        spec = faults[event.index] if event.index < len(faults) else None
        fired = (event.fired_at - run.load_started_at).total_seconds() if run.load_started_at else event.at
        effect: float | None = fired
        if spec is not None and spec.scale is not None and spec.scale.deployment in r.deployments:
            effect = _replicas_changed(r, spec.scale.deployment, spec.scale.replicas, fired)
        elif spec is not None and spec.pause is not None:
            effect = fired + spec.pause.for_.seconds
        out.append(Landed(event.label or event.action, event.at, fired, effect, r.load_seconds))
    return out


def _replicas_changed(results: RunResults, deployment: str, target: int, at: float) -> float | None:
    timeline = results.deployments[deployment].timeline
    before = [p.ready for p in timeline if p.t <= at and p.ready is not None]
    start = before[-1] if before else None
    for point in timeline:
        if point.t < at or point.ready is None:
            continue
        if (start is not None and target > start and point.ready > start) or point.ready == target:
            return point.t
    return None
