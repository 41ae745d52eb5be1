"""The load's state from a TestRun's stage and its pods, as k6-operator and the kubelet report them."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from elves.k8s.loadstate import load_status

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp()
GRACE = 120.0


def a_testrun(stage: str | None, conditions: list[dict] | None = None) -> dict[str, Any]:
    status = {} if stage is None else {"stage": stage}
    if conditions:
        status["conditions"] = conditions
    return {"metadata": {"name": "elves-t-0"}, "status": status}


def pod(name: str = "elves-t-0-1-abcde", role: str = "runner", phase: str = "Running",
        state: dict | None = None, conditions: list[dict] | None = None, memory: str = "",
        created: str | None = None) -> dict[str, Any]:
    labels = {"app": "k6", "k6_cr": "elves-t-0"}
    if role == "runner":
        labels |= {"runner": "true", "job-name": "elves-t-0-1"}
    else:
        labels["job-name"] = f"elves-t-0-{role}"
    container = {"name": "k6", "image": "grafana/k6:1.8.1", "state": state or {"running": {}}}
    resources = {"limits": {"memory": memory}} if memory else {}
    return {"metadata": {"name": name, "namespace": "team-a", "labels": labels,
                         **({"creationTimestamp": created} if created else {})},
            "spec": {"containers": [{"name": "k6", "resources": resources}]},
            "status": {"phase": phase, "containerStatuses": [container], "conditions": conditions or []}}


def at(seconds_ago: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_ago, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("stage, state", [
    (None, "starting"), ("initialization", "starting"), ("initialized", "starting"), ("created", "starting"),
    ("started", "running"), ("stopped", "finished"), ("finished", "finished"),
])
def test_k6_operators_stages_map_onto_the_load_states(stage, state):
    assert load_status(a_testrun(stage), [pod()], NOW, GRACE).state == state


def test_a_stage_error_is_an_error_with_what_k6_operator_said():
    status = load_status(a_testrun("error", [{"type": "TestRunRunning", "message": "initializer job has failed"}]),
                         [], NOW, GRACE, "team-a/elves-t-0")
    assert status.state == "error"
    assert "TestRunRunning: initializer job has failed" in status.reason
    assert "kubectl describe testrun team-a/elves-t-0" in status.reason


def test_a_testrun_that_is_gone_is_an_error():
    status = load_status(None, [], NOW, GRACE, "team-a/elves-t-0")
    assert (status.state, status.reason) == ("error", "the TestRun team-a/elves-t-0 is gone (deleted by someone else?)")
    # Its ended pods (the initializer's, a runner's done) do not keep it running.
    assert load_status(None, [pod(phase="Succeeded")], NOW, GRACE).state == "error"


def test_a_deleted_testrun_whose_runners_still_stop_is_still_running():
    # stop_load deletes the TestRun with its pods in the background (a warm-up stopped before
    # the load): its k6 may still push samples until its pods are gone.
    status = load_status(None, [pod()], NOW, GRACE, "team-a/elves-t-0")
    assert (status.state, status.reason) == ("running", "the TestRun team-a/elves-t-0 is deleted; its pods are"
                                                        " still stopping")


def test_an_oom_killed_runner_ends_the_load_even_when_k6_operator_says_finished():
    killed = pod(phase="Failed", memory="256Mi", state={"terminated": {"exitCode": 137, "reason": "OOMKilled"}})
    status = load_status(a_testrun("finished"), [killed], NOW, GRACE)
    assert status.state == "error"
    assert status.reason.startswith("runner pod team-a/elves-t-0-1-abcde was OOMKilled (memory limit 256Mi)")
    assert "spec.load.parallelism" in status.reason


@pytest.mark.parametrize("reason", ["ImagePullBackOff", "ErrImagePull", "InvalidImageName"])
def test_a_runner_that_cannot_pull_its_image_ends_the_load(reason):
    waiting = pod(phase="Pending", state={"waiting": {"reason": reason, "message": "pull access denied"}})
    status = load_status(a_testrun("created"), [waiting], NOW, GRACE)
    assert status.state == "error"
    assert status.reason == (f"runner pod team-a/elves-t-0-1-abcde cannot pull its image grafana/k6:1.8.1: "
                             f"{reason}: pull access denied")


@pytest.mark.parametrize("reason, message", [
    ("CreateContainerConfigError", 'secret "elves-t-0-runner" not found'),
    ("CreateContainerError", "context deadline exceeded"),
    ("RunContainerError", "context deadline exceeded"),
])
def test_a_container_the_kubelet_cannot_start_yet_ends_the_load_only_after_its_retries(reason, message):
    # The run's Secret is created just before its TestRun, and a busy node's kubelet may not have
    # it yet, or its container runtime may time out: the kubelet tries again by itself.
    def waiting(created_ago: float) -> dict:
        return pod(phase="Pending", state={"waiting": {"reason": reason, "message": message}},
                   created=at(created_ago))

    assert load_status(a_testrun("created"), [waiting(20)], NOW, GRACE).state == "starting"
    status = load_status(a_testrun("created"), [waiting(61)], NOW, GRACE)
    assert status.state == "error"
    assert status.reason == (f"runner pod team-a/elves-t-0-1-abcde cannot start (61s after it was created): "
                             f"{reason}: {message}")


def test_a_crash_looping_container_ends_the_load():
    looping = pod(state={"waiting": {"reason": "CrashLoopBackOff"}})
    looping["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"exitCode": 2, "reason": "Error"}}
    status = load_status(a_testrun("started"), [looping], NOW, GRACE)
    assert status.reason == "runner pod team-a/elves-t-0-1-abcde keeps crashing (CrashLoopBackOff, last exit 2 Error)"


def test_an_unschedulable_runner_gets_a_grace_period_then_ends_the_load():
    def unschedulable(seconds_ago: float) -> dict:
        return pod(phase="Pending", state={"waiting": {"reason": "ContainerCreating"}}, conditions=[{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": at(seconds_ago),
            "message": "0/1 nodes are available: 1 Insufficient cpu."}])
    assert load_status(a_testrun("created"), [unschedulable(30)], NOW, GRACE).state == "starting"
    status = load_status(a_testrun("created"), [unschedulable(150)], NOW, GRACE)
    assert status.state == "error"
    assert status.reason.startswith("runner pod team-a/elves-t-0-1-abcde cannot be scheduled (150s): "
                                    "0/1 nodes are available: 1 Insufficient cpu.")


def test_a_failed_initializer_is_a_script_error_with_where_to_read_why():
    failed = pod("elves-t-0-initializer-xyz", role="initializer", phase="Failed",
                 state={"terminated": {"exitCode": 1, "reason": "Error", "message": "SyntaxError: Unexpected token"}})
    status = load_status(a_testrun("initialization"), [failed], NOW, GRACE)
    assert status.state == "error"
    assert "initializer pod team-a/elves-t-0-initializer-xyz failed (exit 1)" in status.reason
    assert "script error" in status.reason and "SyntaxError: Unexpected token" in status.reason
    assert status.reason.endswith("kubectl logs -n team-a elves-t-0-initializer-xyz")


def test_a_runner_whose_thresholds_failed_still_ran_the_load():
    done = pod(phase="Failed", state={"terminated": {"exitCode": 99, "reason": "Error"}})
    assert load_status(a_testrun("finished"), [done], NOW, GRACE).state == "finished"


def test_a_runner_that_exits_with_a_script_error_ends_the_load_with_k6s_meaning():
    broken = pod(phase="Failed", state={"terminated": {"exitCode": 107, "reason": "Error"}})
    status = load_status(a_testrun("started"), [broken], NOW, GRACE)
    assert status.reason == "runner pod team-a/elves-t-0-1-abcde: k6 exited with code 107 (script error)"


def test_an_evicted_runner_ends_the_load():
    evicted = pod(phase="Failed")
    evicted["status"] |= {"reason": "Evicted", "message": "The node was low on resource: memory."}
    assert load_status(a_testrun("started"), [evicted], NOW, GRACE).reason == \
        "runner pod team-a/elves-t-0-1-abcde was evicted: The node was low on resource: memory."


def test_runners_that_completed_are_fine():
    completed = pod(phase="Succeeded", state={"terminated": {"exitCode": 0, "reason": "Completed"}})
    assert load_status(a_testrun("finished"), [completed, completed], NOW, GRACE).state == "finished"
