"""The load's state from a k6-operator TestRun and its pods: plain dicts in, LoadStatus out.

k6-operator moves `status.stage` through initialization -> initialized -> created ->
started -> stopped -> finished (or error). It reaches `finished` even when a runner
failed, and leaves a pod that cannot start waiting forever, so the pods are read too:
an OOM-killed, unschedulable, unpullable or crashing runner, or a failed initializer
(a script error), ends the load with a reason a person can act on. A container the kubelet
cannot create or start yet ends it only once the kubelet has kept failing for a while: it tries
again by itself, and on a busy node the first tries fail for passing reasons (the run's Secret,
created just before its TestRun, not yet in the kubelet's cache; the container runtime timing
out).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from elves.engine.planning.k6 import FINISHED_CODES, describe_exit
from elves.engine.planning.platform import LoadStatus
from elves.k8s.names import K6_LABEL_RUNNER

STARTING_STAGES = ("", "initialization", "initialized", "created")
FINISHED_STAGES = ("stopped", "finished")
IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
START_FAILURE_REASONS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")
# How long a pod's container may fail to be created or started (the kubelet retrying) before the
# load ends in Error: long enough for a Secret to reach the kubelet and a busy runtime to answer,
# short against the load's start deadline (Timeouts.load_start).
START_RETRY_GRACE_SECONDS = 60.0


def _role(pod: dict[str, Any]) -> str:
    labels = pod.get("metadata", {}).get("labels") or {}
    name = pod.get("metadata", {}).get("name", "")
    job = labels.get("job-name", "") or labels.get("batch.kubernetes.io/job-name", "")
    if labels.get(K6_LABEL_RUNNER) == "true":
        return "runner"
    if job.endswith("-initializer") or "-initializer-" in name:
        return "initializer"
    if job.endswith("-starter") or "-starter-" in name:
        return "starter"
    return "k6"


def _since(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _terminated_problem(where: str, role: str, terminated: dict[str, Any], memory: str, logs: str) -> str | None:
    reason, code = terminated.get("reason") or "", terminated.get("exitCode")
    message = (terminated.get("message") or "").strip()
    detail = f": {message[-800:]}" if message else ""
    if reason == "OOMKilled":
        limit = f" (memory limit {memory})" if memory else ""
        return (f"{where} was OOMKilled{limit}: k6 needed more memory; give the runners more memory or "
                f"spread the load over more runners (spec.load.parallelism){detail}")
    if code in (None, 0):
        return None
    if role == "initializer":
        return (f"{where} failed (exit {code}): the script does not load in k6 (a script error or a bad "
                f"option){detail}; its output: {logs}")
    if role == "runner" and code in FINISHED_CODES:
        return None  # thresholds crossed: the load ran as planned, the verdict comes from Prometheus
    return f"{where}: {describe_exit(code)}{detail}"


def pod_problem(pod: dict[str, Any], now: float, unschedulable_grace: float) -> str | None:
    """Why this k6-operator pod keeps the load from running as planned, or None."""
    meta, status = pod.get("metadata", {}), pod.get("status") or {}
    role = _role(pod)
    where = f"{role} pod {meta.get('namespace', '')}/{meta.get('name', '')}".replace(" /", " ")
    logs = f"kubectl logs -n {meta.get('namespace', '')} {meta.get('name', '')}"
    limits = {c.get("name"): ((c.get("resources") or {}).get("limits") or {}).get("memory", "")
              for c in (pod.get("spec") or {}).get("containers") or []}
    if status.get("phase") == "Failed" and status.get("reason") == "Evicted":
        return f"{where} was evicted: {status.get('message', '').strip()}"
    for container in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated")
        reason, message = waiting.get("reason", ""), (waiting.get("message") or "").strip()
        if reason in IMAGE_PULL_REASONS:
            return f"{where} cannot pull its image {container.get('image', '')}: {reason}: {message}".rstrip(": ")
        if reason in START_FAILURE_REASONS:
            since = _since(meta.get("creationTimestamp"))
            waited = now - since if since is not None else START_RETRY_GRACE_SECONDS
            if waited < START_RETRY_GRACE_SECONDS:
                continue  # the kubelet tries again
            return f"{where} cannot start ({waited:.0f}s after it was created): {reason}: {message}".rstrip(": ")
        if reason == "CrashLoopBackOff":
            last = (container.get("lastState") or {}).get("terminated") or {}
            return f"{where} keeps crashing (CrashLoopBackOff, last exit {last.get('exitCode', '?')} {last.get('reason', '')})".rstrip()
        for ended in (terminated, (container.get("lastState") or {}).get("terminated")):
            if ended:
                problem = _terminated_problem(where, role, ended, limits.get(container.get("name"), ""), logs)
                if problem:
                    return problem
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                and condition.get("reason") == "Unschedulable":
            since = _since(condition.get("lastTransitionTime"))
            waited = now - since if since is not None else unschedulable_grace
            if waited >= unschedulable_grace:
                return (f"{where} cannot be scheduled ({waited:.0f}s): {condition.get('message', '').strip()}; "
                        "free resources, or ask for fewer runners (spec.load.parallelism)")
    return None


def _still_running(pod: dict[str, Any]) -> bool:
    """A pod that may still run k6: not ended (a deleted pod stays Running until it is gone)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def load_status(testrun: dict[str, Any] | None, pods: list[dict[str, Any]], now: float,
                unschedulable_grace: float, name: str = "") -> LoadStatus:
    """The state of one run's load, from its TestRun (None: gone) and the TestRun's pods."""
    if testrun is None:
        # Deleted (stop_load) with its pods in the background: gone once no runner still runs, so
        # the load after a stopped warm-up starts when nothing of the warm-up pushes any more.
        if any(_still_running(pod) for pod in pods):
            return LoadStatus("running", f"the TestRun {name} is deleted; its pods are still stopping")
        return LoadStatus("error", f"the TestRun {name} is gone (deleted by someone else?)")
    for pod in sorted(pods, key=lambda p: p.get("metadata", {}).get("name", "")):
        problem = pod_problem(pod, now, unschedulable_grace)
        if problem:
            return LoadStatus("error", problem)
    status = testrun.get("status") or {}
    stage = status.get("stage") or ""
    if stage == "error":
        said = "; ".join(f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or []
                         if c.get("message"))
        return LoadStatus("error", f"k6-operator set TestRun {name} to stage error"
                                   + (f" ({said})" if said else "") + f"; see kubectl describe testrun {name}")
    if stage in FINISHED_STAGES:
        return LoadStatus("finished")
    if stage == "started":
        return LoadStatus("running")
    if stage in STARTING_STAGES:
        return LoadStatus("starting")
    return LoadStatus("error", f"TestRun {name} has a stage this operator does not know: {stage!r}")
