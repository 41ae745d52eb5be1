"""The phase machine survives blips and crashes: a dependency that fails for a moment is
waited out (with a deadline, then Error naming the cause), and the snapshot of the system is
saved before the system is changed, so a driver that dies in between restores the original.

The platform is runner_testkit's FakePlatform (plain data); Prometheus is a real one, paused
with SIGSTOP as a busy or restarting Prometheus would stall.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from elves.engine.models.status import DeploymentSnapshot, LoadTestStatus, SystemSnapshot
from elves.engine.results.blips import RIDE_OUT_SECONDS, TransientError
from elves.engine.runner import Context, step
from engine_testkit import RUN, PrometheusServer, backfill
from runner_testkit import FakeClock, FakePlatform, a_run_in_its_drain, drive, harness_error


class Blip(TransientError):
    harness_reason = "KubernetesApiUnavailable"


class BlippingPlatform(FakePlatform):
    """load_status fails `failures` times with a 503 before answering."""

    failures: int = 0

    def load_status(self, test_id: str):
        if self.failures:
            self.failures -= 1
            raise Blip("the Kubernetes API server is unavailable: HTTP 503 etcdserver: leader changed")
        return super().load_status(test_id)


def test_an_api_server_blip_is_waited_out_and_the_test_goes_on(make_loadtest, prometheus_server):
    platform = BlippingPlatform(prometheus_server.url, load_states=["running"])
    ctx, clock, status = Context(make_loadtest()), FakeClock(), LoadTestStatus()
    while status.phase != "Running":
        status = step(ctx, status, platform, clock).status
        clock.t += 1
    platform.failures = 3
    waits = []
    for _ in range(3):
        result = step(ctx, status, platform, clock)
        status = result.status
        waits.append(result.delay)
        assert status.phase == "Running", harness_error(status).message
        assert status.progress.retrying.endswith("HTTP 503 etcdserver: leader changed")
        clock.t += result.delay
    assert waits == sorted(waits) and waits[-1] > waits[0]  # each try waits longer
    result = step(ctx, status, platform, clock)
    assert result.status.phase == "Running" and result.status.progress.retrying == ""
    assert [e.message for e in result.events if e.reason == "Progress"][0].startswith("recovered after ")


def test_a_failure_that_lasts_ends_the_test_in_error_naming_the_cause(make_loadtest, prometheus_server):
    platform = BlippingPlatform(prometheus_server.url, load_states=["running"])
    platform.failures = 10**6
    status, _ = drive(Context(make_loadtest()), platform, FakeClock())
    assert status.phase == "Error"
    condition = harness_error(status)
    assert condition.reason == "KubernetesApiUnavailable"
    assert condition.message.startswith(f"still failing after {int(RIDE_OUT_SECONDS // 60)}m")
    assert condition.message.endswith("HTTP 503 etcdserver: leader changed")
    assert platform.called("restore") and platform.lock_holder is None


class SizedPlatform(FakePlatform):
    """A system whose replicas apply_system really changes, so a snapshot shows when it was taken."""

    replicas: int = 1

    def snapshot_system(self) -> SystemSnapshot:
        return SystemSnapshot(deployments={"ingestor": DeploymentSnapshot(replicas=self.replicas)})

    def apply_system(self, system) -> None:
        super().apply_system(system)
        self.replicas = system.replicas["ingestor"]


def test_the_snapshot_is_saved_before_the_system_changes_so_a_crash_between_restores_the_original(
        make_loadtest, prometheus_server):
    platform = SizedPlatform(prometheus_server.url, load_states=["error"], load_error="k6 exited")
    ctx, clock = Context(make_loadtest(system={"replicas": {"ingestor": 3}})), FakeClock()
    status = LoadTestStatus()
    while status.snapshot is None:
        status = step(ctx, status, platform, clock).status  # what the driver saves after each step
        clock.t += 1
    # The step that took the snapshot stopped there: nothing is changed until it is saved.
    assert platform.called("apply") == [] and status.progress.step == "prepare"
    saved = status

    step(ctx, saved, platform, clock)  # changes the system; the driver dies before it saves
    assert platform.replicas == 3

    status, _ = drive(ctx, platform, clock, status=saved)  # the next driver goes on from what was saved
    assert status.phase == "Error" and harness_error(status).reason == "LoadError"
    assert [s.deployments["ingestor"].replicas for s in platform.called("restore")] == [1]


@pytest.fixture
def paused_prometheus(tmp_path):
    """A Prometheus holding a known run's history, stopped and continued by the test."""
    server = PrometheusServer(tmp_path, data_dir=backfill(tmp_path, RUN.history()))
    yield server
    os.kill(server.process.pid, signal.SIGCONT)  # never leave it stopped
    server.stop()




def test_prometheus_paused_for_15s_during_the_drain_and_the_run_still_reaches_its_verdict(
        make_loadtest, paused_prometheus):
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, paused_prometheus.url)

    os.kill(paused_prometheus.process.pid, signal.SIGSTOP)
    resume = threading.Timer(15.0, os.kill, (paused_prometheus.process.pid, signal.SIGCONT))
    resume.start()
    try:
        result = step(ctx, status, platform, clock)  # a query that gets no answer within its timeout
        assert result.status.phase == "Draining", harness_error(result.status).message
        assert "did not answer within" in result.status.progress.retrying
        clock.t += result.delay
        status, events = drive(ctx, platform, clock, status=result.status)
    finally:
        resume.cancel()
    assert status.phase in ("Succeeded", "Failed"), harness_error(status).message
    assert status.verdict is not None and status.verdict.checks
    assert not [c for c in status.conditions if c.type == "HarnessError"]
    assert any(e.message.startswith("recovered after ") and "did not answer within" in e.message for e in events)


def test_a_ledger_the_registry_cannot_serve_for_a_moment_after_the_drain_is_waited_out(
        make_loadtest, known_run_prometheus):
    """A registry whose database restarted near the end of the load answers 503 for a while:
    the analysis waits for the ledger rather than judging the run without it."""
    ctx, status, platform, clock = a_run_in_its_drain(make_loadtest, known_run_prometheus.url)
    platform.ledger_error = "database restarting"
    for _ in range(200):  # the drain waits for the ledger until its timeout, then the analysis asks again
        result = step(ctx, status, platform, clock)
        status = result.status
        assert not status.final, "judged without the ledger"
        if status.progress.step == "analyze" and "database restarting" in status.progress.retrying:
            break
        clock.t += max(result.delay, 0.5)
    assert status.progress.step == "analyze" and "database restarting" in status.progress.retrying
    platform.ledger_error = ""
    clock.t += result.delay
    status, _ = drive(ctx, platform, clock, status=result.status)
    assert status.phase in ("Succeeded", "Failed"), harness_error(status).message
    assert status.results.ledger is not None
    # What the plan asked is recorded with the results, as the planner that ran it counted it.
    assert status.results.planned_iterations == 180.0  # 180/min for 60 s
