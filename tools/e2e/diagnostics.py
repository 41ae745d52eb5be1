"""What a tier-4 test prints when its LoadTest ends in a phase the test did not expect, or does not
end in time (release.run_loadtest): all a person needs to find the cause, read while the cluster
is still there, since it is gone by the time anyone looks. The LoadTest's phase, conditions and
each run's message; its Events; the target namespace's Deployments (a sweep point waits for their
rollout) and its k6 pods' states with their last lines; the operator's last few hundred lines.

Each part is read on its own: one that cannot be read says why, and the others still come. The
formatting is plain functions of the API's JSON, tested in tier 1 without a cluster
(tests/unit/tools/test_e2e_diagnostics.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, get_args

from elves.engine.planning.platform import LoadPart
from elves.k8s.names import K6_LABEL_RUNNER, K6_LABEL_TESTRUN, testrun_name

from kube import Cluster

OPERATOR_LOG_LINES = 300
POD_LOG_LINES = 30
STATUS_CHARS = 6000
# A run's facts that say where it stopped; its results and verdict are in the status dump.
RUN_FACTS = ("phase", "message", "startedAt", "loadStartedAt", "loadEndedAt", "drainedAt", "unreadyAfterLoad",
             "finishedAt")


def describe_loadtest(lt: dict[str, Any]) -> str:
    """The phase, every condition and each run's phase, message and times; then the whole status,
    cut at STATUS_CHARS."""
    meta, status = lt.get("metadata") or {}, lt.get("status") or {}
    lines = [f"LoadTest {meta.get('namespace')}/{meta.get('name')}: phase {status.get('phase')!r} "
             f"(generation {meta.get('generation')}, observed {status.get('observedGeneration')})"]
    for condition in status.get("conditions") or []:
        lines.append(f"  condition {condition.get('type')}={condition.get('status')} "
                     f"({condition.get('reason') or 'no reason'}): {condition.get('message') or 'no message'}")
    verdict = status.get("verdict") or {}
    if verdict:
        failing = [c for c in verdict.get("checks") or [] if not c.get("ok")]
        lines.append(f"  verdict: passed {verdict.get('passed')}; failing checks: "
                     + ("; ".join(f"{c.get('name')} observed {c.get('observed')!r} {c.get('detail') or ''}".rstrip()
                                  for c in failing) or "none"))
    if status.get("progress"):
        lines.append(f"  progress: {json.dumps(status['progress'])}")
    for run in status.get("runs") or []:
        facts = ", ".join(f"{key} {run[key]!r}" for key in RUN_FACTS if run.get(key))
        lines.append(f"  run {run.get('index')} {json.dumps(run.get('point') or {})}: {facts or 'nothing recorded'}")
        for fault in run.get("faults") or []:
            lines.append(f"    fault {fault.get('label')}: {fault.get('message')}")
    lines.append(f"  status: {json.dumps(status, indent=1)[:STATUS_CHARS]}")
    return "\n".join(lines)


def describe_events(events: dict[str, Any]) -> str:
    """Events oldest first, one a line: when, type, reason, the object and the message."""
    items = sorted(events.get("items") or [],
                   key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp") or "")
    if not items:
        return "  (no events)"
    return "\n".join(
        f"  {e.get('lastTimestamp') or e.get('eventTime') or e['metadata'].get('creationTimestamp')} "
        f"{e.get('type')} {e.get('reason')} {e.get('involvedObject', {}).get('kind')}/"
        f"{e.get('involvedObject', {}).get('name')}"
        f"{' x' + str(e['count']) if (e.get('count') or 1) > 1 else ''}: {e.get('message')}"
        for e in items)


def describe_deployments(deployments: dict[str, Any]) -> str:
    """Each Deployment's replicas (wanted, updated, ready, available) and its conditions' messages."""
    lines = []
    for d in deployments.get("items") or []:
        spec, status = d.get("spec") or {}, d.get("status") or {}
        lines.append(f"  {d['metadata']['name']}: replicas {spec.get('replicas')}, updated {status.get('updatedReplicas', 0)}, "
                     f"ready {status.get('readyReplicas', 0)}, available {status.get('availableReplicas', 0)}, "
                     f"generation {d['metadata'].get('generation')} observed {status.get('observedGeneration')}")
        for condition in status.get("conditions") or []:
            lines.append(f"    {condition.get('type')}={condition.get('status')} ({condition.get('reason')}): "
                         f"{condition.get('message')}")
    return "\n".join(lines) or "  (no deployments)"


def _container_state(container: dict[str, Any]) -> str:
    kind, detail = next(iter((container.get("state") or {}).items()), ("unknown", {}))
    said = ", ".join(f"{key} {detail[key]}" for key in ("reason", "exitCode", "message") if key in detail)
    return f"{container.get('name')} {kind}{' (' + said + ')' if said else ''}, restarts {container.get('restartCount', 0)}"


def describe_pods(pods: dict[str, Any]) -> str:
    """Each pod's phase, node and containers' states (waiting, running, terminated, with reason and
    exit code) and restarts, and its unschedulable or other condition messages."""
    lines = []
    for pod in pods.get("items") or []:
        status = pod.get("status") or {}
        containers = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
        lines.append(f"  {pod['metadata']['name']}: {status.get('phase')}"
                     f"{' (' + status['reason'] + ')' if status.get('reason') else ''}; "
                     + ("; ".join(_container_state(c) for c in containers) or "no container started"))
        for condition in status.get("conditions") or []:
            if condition.get("status") != "True" and condition.get("message"):
                lines.append(f"    {condition.get('type')}: {condition.get('message')}")
    return "\n".join(lines) or "  (no pods)"


def k6_pods_of(pods: dict[str, Any], loadtest: str, runs: int) -> dict[str, Any]:
    """The pods of the LoadTest's TestRuns (runners, initializers, starters): their TestRun label
    names the load's or the warm-up's TestRun of one of its `runs` runs."""
    testruns = {testrun_name(loadtest, run, part) for run in range(runs) for part in get_args(LoadPart)}
    return {"items": [p for p in pods.get("items") or []
                      if (p["metadata"].get("labels") or {}).get(K6_LABEL_TESTRUN) in testruns]}


def _read(read: Callable[[], str]) -> str:
    try:
        return read()
    except Exception as error:  # noqa: BLE001 - one part that cannot be read must not hide the others
        return f"  (could not be read: {error})"


def _part(title: str, read: Callable[[], str]) -> str:
    return f"--- {title}\n{_read(read)}"


def loadtest_diagnostics(cluster: Cluster, name: str, namespace: str, operator_namespace: str,
                         operator: str) -> str:
    """Everything above for LoadTest `namespace/name`, read from the cluster now."""
    def k6_pods() -> str:
        lt = cluster.kubectl_json("get", "loadtest", name, "-n", namespace)
        runs = max(1, len((lt.get("status") or {}).get("runs") or []))
        pods = k6_pods_of(cluster.kubectl_json("get", "pods", "-n", namespace), name, runs)
        # A pod whose container never started has no log: that pod says so, the others still come.
        logs = [f"  last {POD_LOG_LINES} lines of {p['metadata']['name']} "
                f"({'runner' if (p['metadata'].get('labels') or {}).get(K6_LABEL_RUNNER) == 'true' else 'k6'}):\n"
                + _read(lambda pod=p["metadata"]["name"]: cluster.kubectl("logs", pod, "-n", namespace,
                                                                         "--all-containers", f"--tail={POD_LOG_LINES}"))
                for p in pods["items"]]
        return "\n".join([describe_pods(pods), *logs])

    return "\n".join([
        _part("the LoadTest", lambda: describe_loadtest(cluster.kubectl_json("get", "loadtest", name, "-n", namespace))),
        _part("its events", lambda: describe_events(cluster.kubectl_json(
            "get", "events", "-n", namespace, "--field-selector", f"involvedObject.name={name}"))),
        _part(f"the Deployments in {namespace}",
              lambda: describe_deployments(cluster.kubectl_json("get", "deployments", "-n", namespace))),
        _part(f"the LoadTest's k6 pods in {namespace}", k6_pods),
        _part(f"warnings in {namespace}", lambda: describe_events(cluster.kubectl_json(
            "get", "events", "-n", namespace, "--field-selector", "type=Warning"))),
        _part(f"the last {OPERATOR_LOG_LINES} lines of the operator ({operator_namespace}/{operator})",
              lambda: cluster.kubectl("logs", f"deployment/{operator}", "-n", operator_namespace,
                                      f"--tail={OPERATOR_LOG_LINES}", timeout=60)),
    ])
