"""The phase machine over a platform made of plain data and a clock the test moves.

These cover the lifecycle's rules: every wait ends at its deadline with a reason, faults
fire on time, Error vs Failed, the system is restored and released whatever the end.
The happy path against the real local stack is in tests/local/test_harness_*.py.
"""

from __future__ import annotations

import jwt
import pytest

from elves.engine.models.faults import ScaleFault
from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.status import DeploymentSnapshot, LoadTestStatus, SystemSnapshot
from elves.engine.planning.credentials import signing_key
from elves.engine.planning.platform import Readiness
from elves.engine.runner import Context, Timeouts, abort, set_condition, set_outcome_conditions, step
from engine_testkit import free_port
from runner_testkit import JWT_SECRET, FakeClock, FakePlatform, a_run_in_its_drain, drive, harness_error


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def platform(prometheus_server):
    return FakePlatform(prometheus_server.url)


def test_a_busy_system_is_waited_for_then_an_error_naming_the_holder(make_loadtest, platform, clock):
    platform.lock_holder = "local/other-test"
    ctx = Context(make_loadtest(), timeouts=Timeouts(lock=30))
    status, _ = drive(ctx, platform, clock)
    assert status.phase == "Error"
    condition = harness_error(status)
    assert condition.reason == "SystemBusy"
    assert "gave up after 30s" in condition.message and "local/other-test" in condition.message
    assert platform.called("restore") == [] and platform.lock_holder == "local/other-test"


def test_a_system_that_never_gets_ready_ends_in_error_and_is_restored(make_loadtest, platform, clock):
    platform.ready = Readiness(False, "ingestor 0/1 ready")
    ctx = Context(make_loadtest(system={"replicas": {"ingestor": 1}}), timeouts=Timeouts(system_ready=60))
    status, _ = drive(ctx, platform, clock)
    assert (status.phase, harness_error(status).reason) == ("Error", "SystemNotReady")
    assert "ingestor 0/1 ready" in harness_error(status).message
    assert [s.as_written() for s in platform.called("apply")] == [{"replicas": {"ingestor": 1}}]
    assert platform.called("restore") == [SystemSnapshot(deployments={"ingestor": DeploymentSnapshot(replicas=1)})]
    assert platform.called("release") == ["local/unit"] and platform.lock_holder is None
    assert status.summary.verdict == "Error: SystemNotReady"


def test_unreachable_prometheus_is_a_harness_error(make_loadtest, clock):
    platform = FakePlatform(f"http://127.0.0.1:{free_port()}")
    status, _ = drive(Context(make_loadtest(), timeouts=Timeouts(prometheus=5)), platform, clock)
    assert (status.phase, harness_error(status).reason) == ("Error", "PrometheusUnreachable")
    assert "unreachable" in harness_error(status).message
    assert platform.called("start_load") == []


def test_a_script_error_is_a_harness_error_with_k6s_words(make_loadtest, platform, clock):
    platform.load_states = ["error"]
    platform.load_error = "k6 exited with code 107 (script error): ReferenceError: getDta is not defined"
    status, _ = drive(Context(make_loadtest()), platform, clock)
    assert (status.phase, harness_error(status).reason) == ("Error", "LoadError")
    assert "ReferenceError: getDta is not defined" in harness_error(status).message
    assert status.runs[0].phase == "Error"
    assert platform.called("restore") and platform.lock_holder is None


def test_k6_that_never_starts_or_never_ends_is_stopped(make_loadtest, platform, clock):
    platform.load_states = ["starting"]
    status, _ = drive(Context(make_loadtest(), timeouts=Timeouts(load_start=10)), platform, FakeClock())
    assert harness_error(status).reason == "LoadDidNotStart"

    overrun = FakePlatform(platform.prometheus, load_states=["running"])
    status, _ = drive(Context(make_loadtest(), timeouts=Timeouts(load_grace=5)), overrun, clock)
    assert harness_error(status).reason == "LoadOverran"
    assert overrun.called("stop_load") == ["local/unit/0"]


def test_the_load_run_carries_the_plan(make_loadtest, platform, clock):
    platform.load_states = ["error"]
    drive(Context(make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "1m", "users": 3,
                                      "parallelism": 2}, runner={"nodeSelector": {"pool": "load"}})), platform, clock)
    (run,) = platform.called("start_load")
    assert run.test_id == "local/unit/0" and run.parallelism == 2 and run.duration_seconds == 60
    assert run.index == 0 and run.script.path.endswith("loadtests/scenarios/system-mix.js")
    assert run.runner.node_selector == {"pool": "load"}  # spec.runner, for the runner pods on a cluster
    claims = [jwt.decode(t, JWT_SECRET, algorithms=["HS256"], audience="elves-gateway", issuer="elves")
              for t in run.tokens]
    assert [c["sub"] for c in claims] == ["loadtest-user-0000", "loadtest-user-0001", "loadtest-user-0002"]
    admin = jwt.decode(run.admin_token, JWT_SECRET, algorithms=["HS256"], audience="elves-gateway")
    assert admin["admin"] is True
    # The run's tokens expire with the run (its minute of load plus the start, setup and grace
    # waits), not a day later.
    assert all(c["exp"] - c["iat"] <= 60 + 3600 for c in claims + [admin])
    # The registry's run credential, not its service key: this test id, the same lifetime.
    assert "service-key-of-the-fake" not in run.run_credential
    credential = jwt.decode(run.run_credential, signing_key("service-key-of-the-fake"), algorithms=["HS256"],
                            audience="elves-registry", issuer="elves")
    assert credential["sub"] == "local/unit/0" and credential["exp"] - credential["iat"] == admin["exp"] - admin["iat"]
    assert set(run.scenarios) == {"getData", "getStatus", "getHistory", "getAllHistory"}


def test_a_run_longer_than_its_credentials_may_live_is_refused_before_anything_changes(make_loadtest, platform,
                                                                                      clock):
    # A 1 h load needs credentials for 1 h plus the start, setup and grace waits: over a 1 h cap.
    test = make_loadtest(reset=True, load={"scenario": "registry-mix", "rate": "60/min", "duration": "1h"})
    status, _ = drive(Context(test, timeouts=Timeouts(run_credential_max=3600)), platform, clock)
    condition = harness_error(status)
    assert status.phase == "Error" and condition.reason == "RunTooLong"
    assert "spec.load.duration" in condition.message and "runCredentialMax" in condition.message
    # The error path's release of a lock never taken is all: nothing taken, reset or changed.
    assert [call for call, _ in platform.calls] == ["release"]


def test_faults_fire_on_time_in_order_then_drain_and_analysis_run(make_loadtest, platform, clock):
    test = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "1m"}, faults=[
        {"at": "40s", "scale": {"deployment": "ingestor", "replicas": 1}},
        {"at": "10s", "scale": {"deployment": "ingestor", "replicas": 0}},
        {"at": "10s", "killPod": {"deployment": "registry"}},
    ], drain={"timeout": "20s"})
    platform.load_states = ["starting"] * 3 + ["running"] * 120 + ["finished"]
    status, events = drive(Context(test), platform, clock, tick=0.5)
    run = status.runs[0]
    assert [(f.index, f.at) for f in run.faults] == [(1, 10), (2, 10), (0, 40)]
    started = run.load_started_at.timestamp()
    for fault in run.faults:  # fired within one tick of their time
        assert 0 <= fault.fired_at.timestamp() - started - fault.at <= 0.5
    assert [f.replicas if isinstance(f, ScaleFault) else f.kind for f in platform.called("fault")] == [0, "killPod", 1]
    assert [e.reason for e in events if e.reason == "Fault"] == ["Fault"] * 3
    assert ("Phase", "run 0: Running") in [(e.reason, e.message) for e in events]
    # This Prometheus holds no queue depth and no k6 samples: the drain times out (the
    # system's failure), then the analysis finds nothing k6 wrote (the harness's).
    assert any(e.reason == "DrainTimeout" and e.type == "Warning"
               and "drain timed out after 20s: no queue depth samples" in e.message for e in events)
    assert (status.phase, harness_error(status).reason) == ("Error", "NoLoadData")
    assert "no k6 samples for test id local/unit/0" in harness_error(status).message
    assert platform.called("restore") and platform.lock_holder is None


def test_a_fault_whose_effect_shows_later_is_observed_on_later_steps(make_loadtest, platform, clock):
    test = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "20s"},
                         faults=[{"at": "5s", "killPod": {"deployment": "registry"}}], drain={"timeout": "20s"})
    platform.kill_takes = 3.0
    platform.load_states = ["running"] * 40 + ["finished"]
    status, events = drive(Context(test), platform, clock, tick=0.5)
    (fault,) = status.runs[0].faults
    observed = platform.called("observe")
    # No step waited: each looked once, until the container had died 3 s after the kill.
    assert len(observed) == 7 and observed[-1] - fault.fired_at.timestamp() == pytest.approx(3.0)
    assert (fault.message, fault.watch) == ("killed", None)
    assert [e.message for e in events if e.reason == "Fault"] == ["fault at 5s: killPod(deployment=registry): killed"]


def test_elves_own_deployment_still_restarting_after_the_load_holds_the_drain(make_loadtest, known_run_prometheus):
    """A kill late in the load leaves Elves' gateway restarting when the load ends: the drain waits
    for it by the rule it keeps for another system's workloads (the verdict waits as it does for
    them: tests/unit/engine/results/test_target_ledger.py), records what it found and says so once."""
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    assert ctx.target.own
    restarting = "Deployment gateway: 1 of 2 replicas ready"
    platform.ready = Readiness(False, restarting)
    events = []
    for _ in range(5):
        result = step(ctx, status, platform, clock)
        status, events = result.status, events + result.events
        assert status.phase == "Draining", harness_error(status).message
        assert f"not ready: {restarting}" in status.progress.waiting_for
        clock.t += result.delay
    assert status.runs[0].unready_after_load == restarting
    assert [e.message for e in events if "ready again" in e.message] == [
        f"draining: waiting for the workloads to be ready again: {restarting}"]  # said once, not at every look
    platform.ready = Readiness(True)
    status = step(ctx, status, platform, clock).status
    assert "not ready" not in status.progress.waiting_for  # what remains is the queues' and the ledger's
    assert status.runs[0].unready_after_load == restarting  # what the drain found stays in the run


def test_the_load_clock_starts_after_k6s_setup_when_the_platform_tells(make_loadtest, platform, clock):
    test = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "30s"},
                         faults=[{"at": "5s", "killPod": {"deployment": "ingestor"}}])
    platform.load_states = ["starting"] * 2 + ["setup"] * 20 + ["running"] * 80 + ["error"]
    status, _ = drive(Context(test), platform, clock, tick=0.5)
    run = status.runs[0]
    (fault,) = run.faults
    # 2 polls starting, 20 in setup(), then the clock starts: the kill comes 5 s after that.
    assert fault.fired_at.timestamp() - run.load_started_at.timestamp() == pytest.approx(5, abs=0.5)
    assert run.load_started_at.timestamp() - run.started_at.timestamp() >= 10


def test_a_setup_that_never_ends_is_a_harness_error(make_loadtest, platform, clock):
    platform.load_states = ["setup"]
    status, _ = drive(Context(make_loadtest(), timeouts=Timeouts(load_setup=20)), platform, clock)
    assert harness_error(status).reason == "LoadSetupTooLong"
    assert platform.called("stop_load") == ["local/unit/0"]


def test_the_ledger_is_read_before_the_load_as_a_baseline(make_loadtest, platform, clock):
    platform.load_states = ["error"]
    status, _ = drive(Context(make_loadtest()), platform, clock)
    assert platform.called("ledger") == ["local/unit/0"]
    assert status.runs[0].ledger_baseline["requests"] == 7
    names = [name for name, _ in platform.calls]
    assert names.index("ledger") < names.index("start_load")


def test_a_registry_whose_ledger_never_answers_is_a_harness_error(make_loadtest, platform, clock):
    platform.ledger_error = "registry warming up"
    status, _ = drive(Context(make_loadtest(), timeouts=Timeouts(system_ready=30)), platform, clock)
    assert harness_error(status).reason == "LedgerUnavailable"
    assert "HTTP 503" in harness_error(status).message and "registry warming up" in harness_error(status).message
    assert platform.called("start_load") == []


def test_reset_comes_first_and_every_sweep_point_is_applied(make_loadtest, platform, clock):
    platform.load_states = ["error"]
    test = make_loadtest(reset=True, sweep={"system.replicas.ingestor": [1, 2]})
    status, _ = drive(Context(test), platform, clock)
    names = [name for name, _ in platform.calls]
    assert names[:5] == ["acquire", "reset", "apply", "ledger", "start_load"]
    assert [r.test_id for r in status.runs] == ["local/unit/0", "local/unit/1"]
    assert status.runs[0].point == {"system.replicas.ingestor": 1}


def test_abort_restores_and_releases(make_loadtest, platform, clock):
    ctx = Context(make_loadtest())
    status = LoadTestStatus()
    for _ in range(5):
        status = step(ctx, status, platform, clock).status
        clock.t += 1
    assert status.phase == "Running"
    result = abort(ctx, status, platform, clock, "interrupted (Ctrl-C)")
    assert result.status.phase == "Error" and harness_error(result.status).reason == "Aborted"
    assert platform.called("stop_load") == ["local/unit/0"]
    assert platform.called("restore") and platform.lock_holder is None
    # A final status stays final.
    assert step(ctx, result.status, platform, clock).status.phase == "Error"


def _conditions(status: LoadTestStatus) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in status.conditions}


def test_job_like_conditions_say_when_and_how_the_test_ended(make_document, platform, clock):
    document = make_document()
    document["metadata"]["generation"] = 3
    ctx = Context(parse_loadtest(document))
    status = LoadTestStatus()
    for _ in range(5):
        status = step(ctx, status, platform, clock).status
        clock.t += 1
    assert status.phase == "Running"
    # Under way: Completed, Failed and Ready are False, with the phase as the reason.
    assert {t: v for t, v in _conditions(status).items() if t in ("Completed", "Failed", "Ready")} == {
        "Completed": ("False", "Running"), "Failed": ("False", "Running"), "Ready": ("False", "Running")}
    ended = abort(ctx, status, platform, clock, "the LoadTest was deleted").status
    # Ended in Error: Completed (so `kubectl wait --for=condition=Completed` returns), and Failed.
    assert _conditions(ended)["Completed"] == ("True", "Error")
    assert _conditions(ended)["Failed"] == ("True", "Aborted")
    assert _conditions(ended)["Ready"] == ("False", "Error")
    assert {c.observed_generation for c in ended.conditions} == {3}
    assert len({c.type for c in ended.conditions}) == len(ended.conditions)  # a map keyed by type


@pytest.mark.parametrize(("phase", "passed", "completed", "failed", "ready"), [
    ("Succeeded", "True", ("True", "Succeeded"), ("False", "Succeeded"), ("True", "Succeeded")),
    ("Failed", "False", ("True", "Failed"), ("True", "ObjectivesMissed"), ("False", "Failed")),
])
def test_a_test_with_a_verdict_is_completed_and_ready_or_failed_by_it(phase, passed, completed, failed, ready):
    status = LoadTestStatus(phase=phase, observed_generation=2)
    set_condition(status, "Passed", passed, "ObjectivesMet" if passed == "True" else "ObjectivesMissed",
                  "" if passed == "True" else "lost_requests: observed 3, wanted == 0", 0.0)
    set_outcome_conditions(status, 1.0)
    conditions = _conditions(status)
    assert (conditions["Completed"], conditions["Failed"], conditions["Ready"]) == (completed, failed, ready)
    if phase == "Failed":
        (missed,) = [c for c in status.conditions if c.type == "Failed"]
        assert missed.message == "lost_requests: observed 3, wanted == 0" and missed.observed_generation == 2


class _Replicas:
    """A Prometheus stand-in that answers the two replica queries."""

    system_namespace = "elves"

    def __init__(self, desired, ready):
        self.answers = {"desired": desired, "ready": ready}

    def by_label(self, expr, label, time=None):
        return self.answers["desired" if "spec_replicas" in expr else "ready"]


def test_the_load_waits_until_prometheus_has_seen_the_replicas_ready():
    from elves.engine.runner import replicas_not_yet_seen_ready

    # Just after a start the last scrape still says 0 ready: "ready min 0" for a deployment nobody touched.
    assert replicas_not_yet_seen_ready(_Replicas({"gateway": 1, "registry": 1}, {"gateway": 0, "registry": 1})) \
        == ["gateway"]
    assert replicas_not_yet_seen_ready(_Replicas({"gateway": 1, "ingestor": 0}, {"gateway": 1})) == []
    assert replicas_not_yet_seen_ready(_Replicas({}, {})) == []


class _Endpoints:
    """A Prometheus stand-in answering the scrape-target queries of another system's workloads."""

    def __init__(self, listed, answering):
        self.answers = {"count": listed, "sum": answering}

    def by_label(self, expr, label, time=None):
        assert 'namespace="own-system"' in expr and label == "workload", expr
        return self.answers[expr.split(" ", 1)[0]]


def test_locally_another_systems_workloads_are_ready_when_their_labelled_endpoints_answer():
    from elves.engine.models.target import parse_system_under_test
    from elves.engine.planning.target import Target
    from elves.engine.runner.prepare import scraped_not_ready
    from foreign_system import foreign_system

    spec = parse_system_under_test(foreign_system(workloads=[{"name": "orders-api"}, {"name": "orders-worker"}])).spec
    local = Target.other("elves", spec, scraped_in="own-system")
    # The worker's second process does not answer; orders-api has no endpoint labelled: not waited for.
    assert scraped_not_ready(_Endpoints({"orders-worker": 2}, {"orders-worker": 1}), local) == [
        "orders-worker: 1 of 2 endpoints answer"]
    assert scraped_not_ready(_Endpoints({"orders-worker": 2}, {"orders-worker": 2}), local) == []
    # On a cluster the platform reads the workloads themselves; Elves' own never goes this way.
    assert scraped_not_ready(_Endpoints({"orders-worker": 2}, {}), Target.other("shop", spec)) == []
    assert scraped_not_ready(_Endpoints({"gateway": 1}, {}), Target()) == []


def test_every_step_but_done_has_a_function_and_the_status_keeps_its_words():
    from elves.engine.runner.machine import STEPS
    from elves.engine.models.status import Step

    assert set(STEPS) == set(Step) - {Step.DONE}
    # A status an earlier operator wrote (plain strings) reads back and is written back the same.
    status = LoadTestStatus.model_validate({"progress": {"step": "wait-reset"}})
    assert status.progress.step is Step.WAIT_RESET
    assert status.model_dump(mode="json", by_alias=True)["progress"]["step"] == "wait-reset"
    with pytest.raises(ValueError, match="progress.step"):
        LoadTestStatus.model_validate({"progress": {"step": "wait-resett"}})

