"""The harness-limited outcome: when k6 dropped iterations, brought up every VU the plan allows, or a
runner used its cores to the full, the run ends Limited, whatever its objectives said: not Passed
(the load asked for was not offered) and not the system's Failed. `elves run` exits 3 and says so,
and so do the report and the LoadTest's status; a run within every limit keeps its own verdict."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from elves.engine.drive import EXIT_FAILED, EXIT_LIMITED, EXIT_PASSED, exit_code
from elves.engine.models.status import GeneratorCpu, Ledger, LoadTestStatus, RunResults, RunStatus, Verdict, Window
from elves.engine.planning.plan import plan_runs, vu_ceiling
from elves.engine.planning.platform import RunKey
from elves.engine.results.console import closing_tables, verdict_line
from elves.engine.results.generator_limit import generator_limits
from elves.engine.results.report import HTML, SUMMARY, write_report
from elves.engine.results.verdict import evaluate, phase_of, sweep_table
from engine_testkit import RUN
from runner_testkit import a_run_in_its_drain, drive

T0 = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)
NOTHING_LOST = [{"metric": "lost_requests", "op": "==", "value": 0}]

# A minute of getData answered and every result persisted: a ledger with something to check.
KEPT_ALL = Ledger(accepted=60, requests_accepted=60, requests_persisted=60, results_done=60)


def results(**figures) -> RunResults:
    """A minute of load that lost nothing (unless `figures` give another ledger), with the generator's `figures`."""
    return RunResults(**{"window": Window(start=T0, end=T0), "load_seconds": 60.0, "ledger": KEPT_ALL, **figures})


CAUSES = {
    "dropped iterations": ({"dropped_iterations": 12}, "k6 dropped 12 iterations"),
    "every VU brought up": ({"vus_max": 40.0, "vus_ceiling": 40}, "k6 brought up all 40 VUs the plan allows"),
    "a runner's CPU full": ({"generator_cpu": GeneratorCpu(cores_used=0.93, cores=1)},
                            "a k6 runner used 0.93 of its 1 core(s) (93%)"),
}


@pytest.mark.parametrize("figures, reason", CAUSES.values(), ids=CAUSES.keys())
def test_each_cause_makes_the_run_limited_though_every_objective_held(make_loadtest, figures, reason):
    run = results(**figures)
    (why,) = generator_limits(run)
    assert why.startswith(reason) and "spec.load." in why  # what to change, in the LoadTest
    verdict = evaluate(make_loadtest(slo=NOTHING_LOST).spec.objectives, run)
    assert all(c.ok for c in verdict.checks)
    assert (verdict.passed, verdict.limited_by, phase_of(verdict)) == (False, [why], "Limited")


WITHIN_LIMITS = {
    "no figures of the generator": {},
    "one VU short of the ceiling": {"vus_max": 39.0, "vus_ceiling": 40},
    "a closed model's VUs (they are its load)": {"vus_max": 40.0, "vus_ceiling": None},
    "a runner just under 90 % of its core": {"generator_cpu": GeneratorCpu(cores_used=0.89, cores=1)},
    "a runner with a core to spare": {"generator_cpu": GeneratorCpu(cores_used=1.5, cores=2)},
}


@pytest.mark.parametrize("figures", WITHIN_LIMITS.values(), ids=WITHIN_LIMITS.keys())
def test_a_run_within_every_limit_keeps_its_own_verdict(make_loadtest, figures):
    assert generator_limits(results(**figures)) == []
    objectives = make_loadtest(slo=NOTHING_LOST).spec.objectives
    assert phase_of(evaluate(objectives, results(**figures))) == "Succeeded"
    lost = results(**figures, ledger=Ledger(requests_accepted=5, lost_requests=2))
    assert phase_of(evaluate(objectives, lost)) == "Failed"


def test_a_limited_run_that_also_missed_an_objective_is_limited_with_the_miss_kept(make_loadtest):
    run = results(dropped_iterations=3, ledger=Ledger(requests_accepted=5, lost_requests=2))
    verdict = evaluate(make_loadtest(slo=NOTHING_LOST).spec.objectives, run)
    assert phase_of(verdict) == "Limited"
    assert [(c.name, c.ok) for c in verdict.checks] == [("lost_requests", False)]


# --- through the phase machine, as `elves run` and the operator drive it ------------------------

def _conditions(status) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}


def test_a_run_whose_k6_runner_used_its_core_ends_limited_in_status_cli_and_report(
        make_loadtest, known_run_prometheus, tmp_path):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    platform.runner_cpu = [GeneratorCpu(cores_used=0.4, cores=2), GeneratorCpu(cores_used=0.95, cores=1)]
    status, events = drive(ctx, platform, clock, status=status)

    # The platform was asked about the load's own window.
    assert platform.called("generator_cpu") == [(RunKey(0, RUN.test_id), RUN.load_start, RUN.load_end)]
    assert (status.phase, status.runs[0].phase) == ("Limited", "Limited")
    (why,) = status.verdict.limited_by
    assert why.startswith("a k6 runner used 0.95 of its 1 core(s) (95%) over the load")
    assert status.results.generator_cpu == GeneratorCpu(cores_used=0.95, cores=1)  # the busiest by share
    conditions = _conditions(status)
    assert conditions["Completed"] == ("True", "Limited")
    assert conditions["Failed"] == ("True", "HarnessLimited") and conditions["Ready"] == ("False", "Limited")
    assert conditions["HarnessLimited"] == ("True", "GeneratorLimited")
    assert conditions["Passed"] == ("False", "HarnessLimited")
    (failed,) = [c for c in status.conditions if c.type == "Failed"]
    assert why in failed.message and "not the system" in failed.message
    assert status.summary.verdict.startswith("Limited ")  # kubectl get's Verdict column
    assert events[-1].reason == "Limited" and events[-1].type == "Warning"

    assert exit_code(status) == EXIT_LIMITED == 3
    assert verdict_line(status).startswith("Verdict: LIMITED by the load generator, not the system (")
    assert why in verdict_line(status)
    assert any("busiest runner 0.95 of 1 core(s) (95%)" in line for line in closing_tables(status, "60s"))

    html = write_report(tmp_path, ctx.test, status, None)
    page = html.read_text()
    assert "<span class='badge Limited'>Limited</span>" in page
    assert "Limited by the load generator, not the system" in page and why.split(" (")[0] in page
    assert '"limitedBy": [' in (tmp_path / SUMMARY).read_text() and html.name == HTML


def test_a_run_within_the_generators_limits_ends_by_its_objectives(make_loadtest, known_run_prometheus):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    platform.runner_cpu = [GeneratorCpu(cores_used=0.3, cores=1)]
    status, _ = drive(ctx, platform, clock, status=status)
    assert status.phase in ("Succeeded", "Failed") and status.verdict.limited_by == []
    assert _conditions(status)["HarnessLimited"] == ("False", "LoadOffered")
    assert _conditions(status)["Passed"][1] in ("ObjectivesMet", "ObjectivesMissed")
    assert exit_code(status) == (EXIT_PASSED if status.phase == "Succeeded" else EXIT_FAILED)
    assert not verdict_line(status).startswith("Verdict: LIMITED")
    assert any("busiest runner 0.30 of 1 core(s) (30%)" in line for line in closing_tables(status, "60s"))


def test_a_platform_that_cannot_tell_the_cpu_leaves_it_unknown_not_limited(make_loadtest, known_run_prometheus):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    status, _ = drive(ctx, platform, clock, status=status)  # runner_cpu: none measured
    assert status.results.generator_cpu is None and status.phase in ("Succeeded", "Failed")
    assert any("CPU unknown" in line for line in closing_tables(status, "60s"))


def test_a_sweeps_table_names_the_point_the_generator_limited():
    held = RunStatus(index=0, test_id="t/x/0", point={"load.rate": "10/s"}, phase="Succeeded", results=results(),
                     verdict=Verdict(passed=True))
    short = RunStatus(index=1, test_id="t/x/1", point={"load.rate": "900/s"}, phase="Limited",
                      results=results(dropped_iterations=40),
                      verdict=Verdict(passed=False, limited_by=generator_limits(results(dropped_iterations=40))))
    rows = sweep_table([held, short])
    assert [(row.passed, row.limited) for row in rows] == [(True, False), (False, True)]
    status = LoadTestStatus(phase="Limited", runs=[held, short], sweep=rows, verdict=short.verdict)
    lines = closing_tables(status, "60s")
    header = next(i for i, line in enumerate(lines) if line.startswith("run ") and line.rstrip().endswith("verdict"))
    assert [lines[header + 2].split()[-1], lines[header + 3].split()[-1]] == ["passed", "limited"]


def test_the_vu_ceiling_is_the_open_models_pool_when_k6_may_grow_it(make_loadtest):
    def ceiling(**load):
        (plan,) = plan_runs(make_loadtest(load={"scenario": "system-mix", "rate": "120/min", "duration": "1m", **load}))
        return plan.scenarios, vu_ceiling(plan.scenarios)

    scenarios, planned = ceiling()
    assert planned == sum(s["maxVUs"] for s in scenarios.values()) > sum(s["preAllocatedVUs"] for s in scenarios.values())
    assert ceiling(mix={"getData": 1}, vus={"preAllocated": 40, "max": 80})[1] == 80
    # k6 starts a pool that cannot grow whole: at its ceiling from the first second, which says nothing.
    assert ceiling(vus={"preAllocated": 40})[1] is None
    # A closed model's VUs are its load, not a ceiling.
    assert ceiling(rate=None, users=8)[1] is None


def test_a_light_loads_vu_reading_says_what_k6_sampled_and_how_busy_the_vus_were():
    """k6 counts an open model's VU only while it runs an iteration, once a second: 5 requests a
    second answered in 10 ms read "at most 0 VUs" at every sample. The line says it is a sample
    and gives the mean in flight beside it, so 464 requests beside "0 VUs" reads true."""
    from elves.engine.models.status import EndpointResult
    from elves.engine.results.generator_limit import generator_text
    light = results(vus_max=0.0, vus_ceiling=73, requests=464,
                    total=EndpointResult(requests=464, rate=5.0, mean=0.01, concurrency=0.05))
    text = generator_text(light)
    assert "at most 0 of 73 VUs busy at a 1 s sample, 0.05 requests in flight on average" in text, text
    # Without a latency to multiply, nothing is made up.
    assert "in flight" not in generator_text(results(vus_max=3.0, vus_ceiling=10)), generator_text(results())
