"""A LoadTest that states its own dropped_iterations objective judges the drops its faults cause
(calls hung on a killed gateway hold the VUs): they pass or fail that objective as the system's,
and do not make the run Limited; k6's own limits (the VU ceiling, its CPU) still do. Compare and
the study read the limits as the verdict judged them, and apply the rule to a summary written
before verdicts said so."""

from __future__ import annotations

from datetime import datetime, timezone

from elves.engine.models.status import Ledger, RunResults, Verdict, Window
from elves.engine.results.generator_limit import judged_limits
from elves.engine.results.verdict import evaluate, phase_of

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
NOTHING_LOST = {"metric": "lost_requests", "op": "==", "value": 0}

# A minute of getData answered and every result persisted: a ledger with something to check.
KEPT_ALL = Ledger(accepted=60, requests_accepted=60, requests_persisted=60, results_done=60)


def results(**figures) -> RunResults:
    return RunResults(**{"window": Window(start=T0, end=T0), "load_seconds": 60.0, "ledger": KEPT_ALL, **figures})


def judged(make_loadtest, slo, run: RunResults) -> Verdict:
    spec = make_loadtest(slo=slo).spec
    return evaluate(spec.objectives, run, drops_judged=spec.judges_drops)


def test_drops_within_the_loadtests_own_tolerance_pass(make_loadtest):
    verdict = judged(make_loadtest, [NOTHING_LOST, {"metric": "dropped_iterations", "op": "<=", "value": 5}],
                     results(dropped_iterations=3))
    assert (phase_of(verdict), verdict.limited_by) == ("Succeeded", [])


def test_drops_beyond_the_loadtests_own_tolerance_fail_as_the_systems(make_loadtest):
    verdict = judged(make_loadtest, [NOTHING_LOST, {"metric": "dropped_iterations", "op": "<=", "value": 5}],
                     results(dropped_iterations=9))
    assert (phase_of(verdict), verdict.limited_by) == ("Failed", [])
    assert [c.name for c in verdict.checks if not c.ok] == ["dropped_iterations"]


def test_without_its_own_tolerance_a_drop_is_the_generators(make_loadtest):
    verdict = judged(make_loadtest, [NOTHING_LOST], results(dropped_iterations=3))
    assert phase_of(verdict) == "Limited" and verdict.limited_by[0].startswith("k6 dropped 3 iterations")


def test_a_stated_tolerance_does_not_excuse_the_vu_ceiling(make_loadtest):
    verdict = judged(make_loadtest, [NOTHING_LOST, {"metric": "dropped_iterations", "op": "<=", "value": 5}],
                     results(dropped_iterations=3, vus_max=40.0, vus_ceiling=40))
    assert phase_of(verdict) == "Limited"
    assert [why.split(":")[0].split(",")[0] for why in verdict.limited_by] == ["k6 brought up all 40 VUs the plan allows"]


def test_compare_and_the_study_read_the_limits_as_the_verdict_judged_them():
    run = results(dropped_iterations=3)
    assert judged_limits(run, Verdict(passed=True, checks=[], limited_by=[])) == []
    # A summary from before verdicts carried limitedBy: the rule on its figures.
    old = Verdict.model_validate({"passed": True, "checks": []})
    assert judged_limits(run, old)[0].startswith("k6 dropped 3 iterations")
    assert judged_limits(run, None)[0].startswith("k6 dropped 3 iterations")
