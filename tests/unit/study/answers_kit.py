"""A study case built from the status models, as read_case would read it from a summary:
one run of a LoadTest with the figures a test sets and quiet defaults for the rest."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import (Check, DeploymentResult, EndpointResult, FaultEvent, Ledger, LoadTestStatus,
                                        DepthOverLoad, QueueResult, ReplicaPoint, RunResults, RunStatus, Verdict, Window)
from elves.study.cases import Case, Finding, Study
from elves.study.case_results import CaseResult

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
QUIET_RUN = {"cores": 2, "loadAverageBefore": [0.3, 0.4, 0.5], "loadAverageAfter": [1.2, 0.6, 0.5], "exitCode": 0}
SPEC = {"load": {"scenario": "system-mix", "rate": "600/min", "duration": "1m"}}  # 600 requests asked


def over_load(peak: float, steady: float = 0.0, trend: float = 0.0, transient: float | None = None) -> DepthOverLoad:
    """A 60 s load's depth over the load: `peak` after its first 20 s, `steady` and `trend` (per minute) over its last 20 s."""
    return DepthOverLoad(peak=peak, peak_at=40.0, transient=transient, transient_seconds=20.0, steady=steady,
                        steady_seconds=20.0, trend=trend)


def queue(peak: float, **shape: Any) -> QueueResult:
    """A work queue whose deepest point is `peak` (or the transient's, if deeper), with its depth over the load."""
    return QueueResult(max=max(peak, shape.get("transient") or 0.0), final=0.0, over_load=over_load(peak, **shape))


def results(**fields: Any) -> RunResults:
    """Quiet, complete results of 600 requests over 60 s (all getData), with `fields` replaced."""
    base: dict[str, Any] = dict(
        window=Window(start=T0, end=T0), load_seconds=60.0, requests=600, rate=10.0,
        endpoints={"getData": EndpointResult(requests=600, ok=600, rate=10.0, error_rate=0.0)},
        total=EndpointResult(requests=600, ok=600, rate=10.0, error_rate=0.0, p50=0.01, p95=0.02, p99=0.03),
        queues={"elves.ingestor.data.in": queue(3.0), "elves.registry.applog.in": queue(1.0)},
        deployments={d: DeploymentResult() for d in ("gateway", "registry", "ingestor")},
        ledger=Ledger(accepted=600, logs_expected=600, logs_persisted=600, requests_accepted=600,
                      requests_persisted=600, results_done=600),
        drain_seconds=2.0)
    base.update(fields)
    return RunResults(**base)


def checks(*failed: str, passed: int = 1) -> Verdict:
    """A verdict with `passed` objectives that held and one failed check per name in `failed`."""
    items = [Check(name="http_req_failed_rate", observed=0.0, target="< 0.01", ok=True)] * passed
    items += [Check(name=name, observed=61.5, target="< 60", ok=False) for name in failed]
    return Verdict(passed=not failed, checks=items)


def case(kind: str = "objectives", runs: list[RunResults] | None = None, verdict: Verdict | None = None,
         spec: dict[str, Any] | None = None, run: dict[str, Any] | None = None,
         points: list[dict[str, Any]] | None = None, faults: list[FaultEvent] | None = None,
         **finding: Any) -> CaseResult:
    """A case of finding `kind` whose runs have `runs`' results (one quiet run by default)."""
    test = parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": {"name": "t"},
                           "spec": spec or SPEC})
    verdict = verdict or checks()
    statuses = [RunStatus(index=i, test_id=f"t/{i}", point=(points or [{}] * len(runs or [1]))[i], phase="Succeeded",
                          results=r, verdict=verdict, faults=faults or [], load_started_at=T0)
                for i, r in enumerate(runs or [results()])]
    status = LoadTestStatus(phase="Succeeded", runs=statuses, results=statuses[-1].results, verdict=verdict)
    study_case = Case(id="c", group="study", title="C", file="c.yaml", question="?",
                      study=Study(load="-", saw="-", section="-"), finding=Finding(kind=kind, **finding))
    return CaseResult(study_case, summary={}, run=QUIET_RUN if run is None else run, status=status, test=test)


def timeline(*points: tuple[float, float]) -> list[ReplicaPoint]:
    """(seconds into the load, ready replicas) pairs."""
    return [ReplicaPoint(t=t, desired=ready, ready=ready) for t, ready in points]


def fault(index: int, at: float, label: str, applied: float | None = None) -> FaultEvent:
    """A fault planned `at` seconds into the load and applied `applied` seconds into it (default: as planned)."""
    return FaultEvent(index=index, at=at, fired_at=T0 + timedelta(seconds=at if applied is None else applied),
                      action=label, label=label)
