"""Tier 1: what a tier-4 test prints when its LoadTest ends in a phase the test did not expect, or
does not end in time (tools/e2e/diagnostics.py, called by release.run_loadtest). The cluster is
gone by the time anyone reads a CI log, so what a person would miss if this broke: the reason a
LoadTest ended in Error (its conditions' and runs' messages), the Events the operator emitted, a
Deployment whose rollout never finished, a runner pod OOM-killed or unschedulable. The parts that
read the cluster are kubectl calls; here, the API's JSON as kubectl prints it, in plain data."""

from __future__ import annotations

from diagnostics import describe_deployments, describe_events, describe_loadtest, describe_pods, k6_pods_of

ERRORED = {
    "metadata": {"name": "orders-workers", "namespace": "shop", "generation": 1},
    "status": {
        "phase": "Error", "observedGeneration": 1,
        "conditions": [
            {"type": "Completed", "status": "True", "reason": "Error", "message": "run 2 of 2: the system did not settle"},
            {"type": "Failed", "status": "True", "reason": "Error", "message": "run 2 of 2: the system did not settle"},
        ],
        "progress": {"waitingFor": "orders-worker to roll out"},
        "runs": [
            {"index": 0, "point": {"system.replicas.orders-worker": 1}, "phase": "Succeeded",
             "loadStartedAt": "2026-11-29T20:01:00Z", "finishedAt": "2026-11-29T20:02:10Z"},
            {"index": 1, "point": {"system.replicas.orders-worker": 2}, "phase": "Error",
             "message": "Deployment orders-worker: 1 of 2 replicas ready after 60 s",
             "faults": [{"label": "scale orders-worker", "message": "scaled orders-worker to 2"}]},
        ],
        "verdict": {"passed": False, "checks": [
            {"name": "lost_requests", "ok": False, "observed": 3, "detail": "3 accepted, not persisted"},
            {"name": "p95", "ok": True, "observed": 0.2}]},
    },
}


def test_the_loadtest_says_its_phase_conditions_failing_checks_and_where_each_run_stopped() -> None:
    text = describe_loadtest(ERRORED)
    assert text.startswith("LoadTest shop/orders-workers: phase 'Error' (generation 1, observed 1)")
    assert "condition Failed=True (Error): run 2 of 2: the system did not settle" in text
    assert "verdict: passed False; failing checks: lost_requests observed 3 3 accepted, not persisted" in text
    assert "p95 observed" not in text.split("status:")[0]
    assert 'progress: {"waitingFor": "orders-worker to roll out"}' in text
    assert ("run 1 {\"system.replicas.orders-worker\": 2}: phase 'Error', message 'Deployment orders-worker: "
            "1 of 2 replicas ready after 60 s'") in text
    assert "fault scale orders-worker: scaled orders-worker to 2" in text
    # The whole status follows, for what the lines above leave out.
    assert '"observedGeneration": 1' in text


def test_a_loadtest_without_a_status_yet_still_says_so() -> None:
    text = describe_loadtest({"metadata": {"name": "lt", "namespace": "elves", "generation": 2}})
    assert text.startswith("LoadTest elves/lt: phase None (generation 2, observed None)")


def test_events_come_oldest_first_with_their_object_and_count() -> None:
    events = {"items": [
        {"metadata": {}, "lastTimestamp": "2026-11-29T20:03:00Z", "type": "Warning", "reason": "Error",
         "involvedObject": {"kind": "LoadTest", "name": "orders-workers"}, "message": "the system did not settle"},
        {"metadata": {}, "lastTimestamp": "2026-11-29T20:01:00Z", "type": "Normal", "reason": "Started", "count": 2,
         "involvedObject": {"kind": "LoadTest", "name": "orders-workers"}, "message": "run 1 of 2"},
    ]}
    first, second = describe_events(events).splitlines()
    assert first == "  2026-11-29T20:01:00Z Normal Started LoadTest/orders-workers x2: run 1 of 2"
    assert second == "  2026-11-29T20:03:00Z Warning Error LoadTest/orders-workers: the system did not settle"
    assert describe_events({"items": []}) == "  (no events)"


def test_a_deployment_short_of_ready_replicas_shows_its_counts_and_why() -> None:
    text = describe_deployments({"items": [{
        "metadata": {"name": "orders-worker", "generation": 3},
        "spec": {"replicas": 2},
        "status": {"updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 3,
                   "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                                   "message": 'ReplicaSet "orders-worker-7d9" is progressing.'}]}}]})
    assert text.splitlines() == [
        "  orders-worker: replicas 2, updated 1, ready 1, available 1, generation 3 observed 3",
        '    Progressing=True (ReplicaSetUpdated): ReplicaSet "orders-worker-7d9" is progressing.']


def test_pods_show_their_containers_end_and_why_they_are_not_scheduled() -> None:
    text = describe_pods({"items": [
        {"metadata": {"name": "elves-orders-workers-1-1-abc"},
         "status": {"phase": "Failed", "containerStatuses": [
             {"name": "k6", "restartCount": 0, "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}},
        {"metadata": {"name": "elves-orders-workers-1-2-def"},
         "status": {"phase": "Pending", "conditions": [
             {"type": "PodScheduled", "status": "False", "message": "0/1 nodes are available: 1 Insufficient cpu."}]}},
    ]})
    assert text.splitlines() == [
        "  elves-orders-workers-1-1-abc: Failed; k6 terminated (reason OOMKilled, exitCode 137), restarts 0",
        "  elves-orders-workers-1-2-def: Pending; no container started",
        "    PodScheduled: 0/1 nodes are available: 1 Insufficient cpu."]


def test_the_k6_pods_are_those_of_this_loadtests_testruns_only() -> None:
    def pod(name: str, testrun: str) -> dict:
        return {"metadata": {"name": name, "labels": {"k6_cr": testrun}}}

    pods = {"items": [pod("a", "elves-orders-workers-0"), pod("b", "elves-orders-workers-1-warmup"),
                      pod("c", "elves-orders-workers-2"), pod("d", "elves-orders-0"), {"metadata": {"name": "worker"}}]}
    assert [p["metadata"]["name"] for p in k6_pods_of(pods, "orders-workers", runs=2)["items"]] == ["a", "b"]
