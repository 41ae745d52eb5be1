"""The reconciler: scaling, crash restarts with back-off, rolling restarts without loss."""

import asyncio
import signal
from pathlib import Path

import yaml

from elves.local.background import Background
from elves.local.layout import Layout
from elves.local.operations import Operations
from elves.local.ports import Ports
from elves.local.processes import Child
from elves.local.reconciler import Reconciler
from elves.local.settings import Settings

from elves.local.replicas import (
    PROBE_FAILURE_THRESHOLD, READINESS_PERIOD_SECONDS, READINESS_TIMEOUT_SECONDS, DeploymentSpec, Replica,
    Restart, Start, Stop, exit_code_of, is_settled, plan, restart_delay, terminated_reason,
)


def running(slot, generation=1, ready=True, deployment="ingestor"):
    replica = Replica(deployment, slot, generation)
    replica.started(pid=1000 + slot, now=0.0)
    replica.ready = ready
    return replica


def test_scale_up_starts_replicas_in_the_lowest_free_slots():
    spec = DeploymentSpec("ingestor", replicas=3)
    assert plan(spec, [running(1)], now=0) == [Start(0), Start(2)]


def test_scale_down_stops_unready_then_highest_slots():
    spec = DeploymentSpec("ingestor", replicas=1)
    replicas = [running(0), running(1), running(2, ready=False)]
    assert plan(spec, replicas, now=0) == [Stop(replicas[2]), Stop(replicas[1])]


def test_scale_to_zero_stops_everything():
    spec = DeploymentSpec("ingestor", replicas=0)
    replicas = [running(0), running(1)]
    assert {a.replica.slot for a in plan(spec, replicas, now=0)} == {0, 1}


def test_terminating_replicas_keep_their_slot_but_do_not_count():
    spec = DeploymentSpec("ingestor", replicas=1)
    leaving = running(0)
    leaving.phase = "terminating"
    assert plan(spec, [leaving], now=0) == [Start(1)]


def test_sigkill_counts_a_restart_with_reason_error_and_restarts_at_once():
    replica = running(0)
    replica.started(pid=5, now=100.0)
    replica.exited(-9, now=200.0)
    assert (replica.restarts, replica.last_exit_code, replica.last_reason) == (1, 137, "Error")
    assert plan(DeploymentSpec("ingestor", 1), [replica], now=200.0) == [Restart(replica)]


def test_jvm_out_of_memory_exit_is_reported_as_oomkilled():
    assert terminated_reason(exit_code_of(3)) == "OOMKilled"
    assert terminated_reason(exit_code_of(1)) == "Error"
    assert terminated_reason(0) == "Completed"


def test_crash_loop_backs_off():
    replica = running(0)
    replica.started(pid=5, now=0.0)
    replica.exited(1, now=1.0)
    replica.started(pid=6, now=1.0)
    replica.exited(1, now=2.0)
    assert replica.restart_at == 2.0 + restart_delay(2) == 7.0
    spec = DeploymentSpec("ingestor", 1)
    assert plan(spec, [replica], now=3.0) == []
    assert plan(spec, [replica], now=7.0) == [Restart(replica)]
    assert [restart_delay(n) for n in (1, 2, 3, 4, 10)] == [0, 5, 10, 20, 60]


def test_rolling_restart_surges_one_and_waits_for_it_to_be_ready():
    spec = DeploymentSpec("ingestor", replicas=2, generation=2)
    old = [running(0, generation=1), running(1, generation=1)]
    assert plan(spec, old, now=0) == [Start(2)]
    fresh = running(2, generation=2, ready=False)
    # The new replica is not ready yet: nothing old may go.
    assert plan(spec, old + [fresh], now=0) == []
    fresh.ready = True
    assert plan(spec, old + [fresh], now=0) == [Stop(old[1])]


def test_rolling_restart_of_a_single_replica_keeps_one_ready():
    spec = DeploymentSpec("gateway", replicas=1, generation=2)
    old = running(0, generation=1, deployment="gateway")
    assert plan(spec, [old], now=0) == [Start(1)]
    fresh = running(1, generation=2, ready=True, deployment="gateway")
    assert plan(spec, [old, fresh], now=0) == [Stop(old)]


def test_crashed_replica_with_old_settings_is_replaced_not_restarted():
    spec = DeploymentSpec("ingestor", replicas=1, generation=2)
    crashed = running(0, generation=1)
    crashed.exited(1, now=1.0)
    assert plan(spec, [crashed], now=5.0) == [Stop(crashed), Start(1)]


def test_readiness_survives_two_failed_probes_but_not_three():
    replica = running(0, ready=False)
    replica.probed(True, now=0.0)
    replica.probed(False, now=5.0)
    replica.probed(False, now=10.0)
    assert replica.ready
    replica.probed(False, now=15.0)
    assert not replica.ready


def test_a_ready_replica_is_probed_each_period_and_an_unready_one_every_round():
    replica = running(0, ready=False)
    assert replica.probe_due(0.0)
    replica.probed(True, now=0.0)
    assert not replica.probe_due(READINESS_PERIOD_SECONDS - 0.1)
    assert replica.probe_due(READINESS_PERIOD_SECONDS)
    replica.ready = False
    assert replica.probe_due(0.1)


def test_the_local_readiness_probe_has_the_charts_timing():
    values = yaml.safe_load((Path(__file__).resolve().parents[3] / "charts/elves/values.yaml").read_text())
    for name in ("gateway", "registry"):
        readiness = values["services"][name]["probes"]["readiness"]
        assert (readiness["periodSeconds"], readiness["timeoutSeconds"], readiness["failureThreshold"]) == (
            READINESS_PERIOD_SECONDS, READINESS_TIMEOUT_SECONDS, PROBE_FAILURE_THRESHOLD), name


def test_settled_only_when_all_desired_replicas_are_current_and_ready():
    spec = DeploymentSpec("ingestor", replicas=2)
    assert is_settled(spec, [running(0), running(1)]) == (True, "")
    settled, detail = is_settled(spec, [running(0), running(1, ready=False)])
    assert not settled and detail == "ingestor: 1/2 ready"


class _RecordedChild(Child):
    """A replica's process that is never started: what it is sent goes to `events`."""

    def __init__(self, pod, events, log_path):
        super().__init__(pod, ["true"], {}, log_path)
        self.events = events

    def poll(self):
        return None

    def send(self, sig):
        self.events.append(signal.Signals(sig).name)
        return True

    async def stop(self, grace_seconds):
        self.events.append("SIGTERM")
        return 0


def _two_gateways(tmp_path, events, children):
    """A reconciler with two ready gateway replicas whose processes are `children`; each
    change of the Service's rotation is recorded in `events` as the ports left in it."""
    background = Background()
    settings = Settings(state_dir=tmp_path, local_replicas={"gateway": 2, "registry": 0, "ingestor": 0},
                        service_command="true")
    ports = Ports(0)
    reconciler = Reconciler(settings, Layout(tmp_path), ports, background, Operations(background),
                            lambda: None, out_of_rotation=lambda: events.append(
                                f"rotation {[port for _, port in reconciler.ready_backends('gateway')()]}"),
                            gone=lambda deployment, slot: events.append(f"gone {deployment}-{slot}"))
    for slot, child in enumerate(children):
        replica = running(slot, deployment="gateway")
        reconciler.replicas.append(replica)
        reconciler.children[replica.pod] = child(replica.pod, events, tmp_path / "log")
    return background, ports, reconciler


def test_a_replica_leaves_the_rotation_before_it_is_signalled(tmp_path):
    # Per-connection balancing has no retry: a connection that races a stop is refused.
    events = []

    async def scenario():
        background, ports, reconciler = _two_gateways(tmp_path, events, (_RecordedChild, _RecordedChild))
        killed = reconciler.kill("gateway", "gateway-1")
        assert events == [f"rotation {[ports.replica_http('gateway', 0)]}", "SIGKILL"], killed
        events.clear()
        reconciler.replicas.remove(killed)  # as if its exit had been collected
        reconciler.scale("gateway", 0)
        reconciler.tick(0.0)
        await asyncio.sleep(0)  # the stop runs in the background
        assert events == ["rotation []", "SIGTERM", "gone gateway-0"]
        await background.cancel_all()

    asyncio.run(scenario())


class _ExitedChild(_RecordedChild):
    """A replica's process that has died on its own (a crash, an OOM kill)."""

    def poll(self):
        return 3


def test_a_replica_that_dies_leaves_the_rotation_at_once(tmp_path):
    # Until the next probe round its port refuses every connection the Service sends it.
    events = []
    _, ports, reconciler = _two_gateways(tmp_path, events, (_RecordedChild, _ExitedChild))
    reconciler.paused = True  # only the exits are collected: no restart is planned
    reconciler.tick(100.0)
    # Out of the rotation first, then the Service forgets the connections it sent there.
    assert events == [f"rotation {[ports.replica_http('gateway', 0)]}", "gone gateway-1"]
    assert [r.phase for r in reconciler.replicas] == ["running", "crashed"]
