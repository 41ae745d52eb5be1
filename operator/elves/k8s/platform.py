"""KubernetesPlatform: the Platform protocol (elves.engine.platform) on a cluster.

The system is the chart's Deployments and StatefulSets in the system namespace; the load
is a k6-operator TestRun in the LoadTest's namespace, owned by the LoadTest. One object
per LoadTest: the kopf handlers make a new one for every step. Every method returns
quickly; rollouts, pod starts and k6 are observed by later calls.
"""

from __future__ import annotations

import base64
import logging
import random
import time
from pathlib import Path
from typing import Any, Callable

from kubernetes.client.exceptions import ApiException

from elves.constants import DEPLOYMENTS
from elves.engine.k6 import script_env
from elves.engine.platform import LoadRun, LoadStatus, Readiness
from elves.k8s import archive, faults, manifests, names, workloads
from elves.k8s.faults import fault_call
from elves.k8s.kube import Kube, exec_failure
from elves.k8s.loadstate import load_status
from elves.k8s.lock import SystemLock
from elves.k8s.settings import OperatorSettings

log = logging.getLogger(__name__)

STATEFULSETS = ("rabbitmq", "postgres")
JWT_SECRET_KEY = "jwt-secret"
CONFIGMAP_SCRIPT_PREFIX = "configmap:"
# Linux refuses to start a process with one environment string longer than 128 KiB
# (MAX_ARG_STRLEN); ELVES_TOKENS carries a token per user.
MAX_ENV_VALUE_BYTES = 120 * 1024


class LoadError(RuntimeError):
    """The load cannot be started; the message says what to fix."""


class KubernetesPlatform:
    name = "kubernetes"

    def __init__(self, settings: OperatorSettings, kube: Kube, loadtest: dict[str, Any],
                 clock: Callable[[], float] = time.time):
        self.settings = settings
        self.kube = kube
        self.loadtest = loadtest  # the LoadTest as read from the API (metadata with uid)
        self.namespace = loadtest["metadata"]["namespace"]
        self.system = settings.system_namespace
        self.clock = clock
        self.lock = SystemLock(kube, self.system)
        self._jwt_secret: str | None = None

    def prometheus_url(self) -> str:
        return self.settings.prometheus_url

    # ---- one test at a time -----------------------------------------------------------

    def acquire(self, owner: str) -> Readiness:
        return self.lock.acquire(owner, self.loadtest["metadata"]["uid"])

    def release(self, owner: str) -> None:
        self.lock.release(owner)

    # ---- the system ---------------------------------------------------------------------

    def _deployment(self, name: str) -> dict[str, Any]:
        deployment = self.kube.deployment(self.system, name)
        if deployment is None:
            raise LoadError(f"Deployment {name} not found in namespace {self.system}: is the elves chart installed "
                            f"there (ELVES_SYSTEM_NAMESPACE)?")
        return deployment

    def snapshot_system(self) -> dict[str, Any]:
        return {name: workloads.snapshot(self._deployment(name)) for name in DEPLOYMENTS}

    def restore_system(self, snapshot: dict[str, Any]) -> None:
        for name, wanted in snapshot.items():
            deployment = self._deployment(name)
            ops = workloads.restore_ops(deployment, wanted)
            if ops:
                self.kube.patch_deployment(self.system, name, ops)
            if deployment["spec"].get("replicas", 1) != wanted["replicas"]:
                self.kube.scale_deployment(self.system, name, wanted["replicas"])

    def reset(self) -> None:
        """Restart the services. The database is not emptied on a cluster (the operator has no
        access to it); every number the engine reads is keyed by the run's test id."""
        for name in DEPLOYMENTS:
            self.kube.patch_deployment(self.system, name, workloads.restart_patch(self.clock()))

    def apply_system(self, system: dict[str, Any]) -> None:
        """spec.system: env variables are set (others stay), limits changed, replicas scaled."""
        env, resources = system.get("env") or {}, system.get("resources") or {}
        for name in DEPLOYMENTS:
            limits = resources.get(name) or {}
            if env.get(name) or limits.get("memory") or limits.get("cpu"):
                ops = workloads.change_ops(self._deployment(name), env.get(name), limits.get("memory"),
                                           limits.get("cpu"))
                if ops:
                    self.kube.patch_deployment(self.system, name, ops)
        for name, replicas in (system.get("replicas") or {}).items():
            if replicas is not None:
                self.kube.scale_deployment(self.system, name, replicas)

    def system_ready(self) -> Readiness:
        reasons = []
        for name in DEPLOYMENTS:
            deployment = self.kube.deployment(self.system, name)
            reason = (f"Deployment {name} not found in namespace {self.system}" if deployment is None
                      else workloads.deployment_not_ready(deployment))
            if reason:
                reasons.append(reason)
        for name in STATEFULSETS:  # absent when the chart points at an existing broker or database
            statefulset = self.kube.statefulset(self.system, name)
            reason = statefulset and workloads.statefulset_not_ready(statefulset)
            if reason:
                reasons.append(reason)
        return Readiness(not reasons, "; ".join(reasons))

    def jwt_secret(self) -> str:
        if self._jwt_secret is None:
            where = f"Secret {self.system}/{self.settings.secret_name}"
            secret = self.kube.secret(self.system, self.settings.secret_name)
            if secret is None:
                raise LoadError(f"{where} not found (ELVES_SECRET_NAME): the tokens k6 sends are signed with its "
                                f"{JWT_SECRET_KEY}")
            value = (secret.get("data") or {}).get(JWT_SECRET_KEY)
            if not value:
                raise LoadError(f"{where} has no key {JWT_SECRET_KEY}")
            self._jwt_secret = base64.b64decode(value).decode("utf-8")
        return self._jwt_secret

    # ---- the load -------------------------------------------------------------------------

    def _script(self, run: LoadRun) -> tuple[str, str]:
        """(ConfigMap, key) holding what the runners execute; the archive's ConfigMap is made here."""
        if run.script.startswith(CONFIGMAP_SCRIPT_PREFIX):
            name, _, key = run.script[len(CONFIGMAP_SCRIPT_PREFIX):].partition("/")
            configmap = self.kube.configmap(self.namespace, name)
            if configmap is None:
                raise LoadError(f"spec.load.script.configMap: ConfigMap {name} not found in namespace {self.namespace}")
            keys = set(configmap.get("data") or {}) | set(configmap.get("binaryData") or {})
            if key not in keys:
                raise LoadError(f"spec.load.script.configMap.file: ConfigMap {name} has no key {key} "
                                f"(it has: {', '.join(sorted(keys)) or 'nothing'})")
            return name, key
        index = names.run_index(run.test_id)
        try:
            packed = archive.pack(self.settings.k6_binary, Path(run.script), script_env(run))
        except archive.ArchiveError as exc:
            raise LoadError(str(exc)) from None
        self.kube.apply_configmap(manifests.script_configmap(self.loadtest, index, packed))
        return names.script_configmap_name(self.loadtest["metadata"]["name"], index), names.SCRIPT_KEY

    def start_load(self, run: LoadRun) -> None:
        tokens = ",".join(run.tokens)  # ELVES_TOKENS
        if len(tokens) > MAX_ENV_VALUE_BYTES:
            users = tokens.count(",") + 1
            raise LoadError(f"spec.load.users: {users} users make {len(tokens)} bytes of ELVES_TOKENS, more than a "
                            f"runner's environment takes; use at most {users * MAX_ENV_VALUE_BYTES // len(tokens)}")
        script = self._script(run)
        env = manifests.runner_pod_env(run, self.settings.prometheus_url, self.settings.gateway_url,
                                       self.settings.registry_url)
        body = manifests.testrun(self.loadtest, run, script, self.settings.k6_image, env)
        if not self.kube.create_testrun(body):
            existing = self.kube.testrun(self.namespace, body["metadata"]["name"]) or {}
            owners = {o.get("uid") for o in existing.get("metadata", {}).get("ownerReferences") or []}
            if self.loadtest["metadata"]["uid"] not in owners:
                raise LoadError(f"TestRun {self.namespace}/{body['metadata']['name']} already exists and belongs to "
                                f"something else; delete it and create the LoadTest again")
        log.info("TestRun %s/%s created for %s", self.namespace, body["metadata"]["name"], run.test_id)

    def load_status(self, test_id: str) -> LoadStatus:
        name = names.testrun_name(self.loadtest["metadata"]["name"], names.run_index(test_id))
        testrun = self.kube.testrun(self.namespace, name)
        pods = self.kube.pods(self.namespace, f"{names.K6_LABEL_TESTRUN}={name}") if testrun is not None else []
        return load_status(testrun, pods, self.clock(), self.settings.unschedulable_grace_seconds,
                           f"{self.namespace}/{name}")

    def stop_load(self, test_id: str) -> None:
        """Delete the run's TestRun; k6-operator's Jobs and pods go with it."""
        name = names.testrun_name(self.loadtest["metadata"]["name"], names.run_index(test_id))
        self.kube.delete_testrun(self.namespace, name)

    # ---- faults and the ledger ----------------------------------------------------------

    def apply_fault(self, fault: dict[str, Any]) -> str:
        call = fault_call(fault)
        system = self.system
        if call.action == "scale":
            before = self._deployment(call.deployment)["spec"].get("replicas", 1)
            self.kube.scale_deployment(system, call.deployment, call.replicas)  # type: ignore[arg-type]
            return f"scaled Deployment {call.deployment} from {before} to {call.replicas} replicas"
        if call.action == "killPod":
            pods = self.kube.pods(system, f"{names.COMPONENT_LABEL}={call.deployment}")
            pod = workloads.pick_pod(pods, random.choice)
            if pod is None:
                raise LoadError(f"no running pod of {call.deployment} to kill in namespace {system}")
            return self._kill_pod(pod, call.deployment)
        if call.action == "restart":
            self.kube.patch_deployment(system, call.deployment, workloads.restart_patch(self.clock()))
            return f"rollout restart of Deployment {call.deployment}"
        if call.action == "restartInfra":
            if not self.kube.delete_pod(system, call.pod):
                raise LoadError(f"pod {call.pod} not found in namespace {system} (is it run by the chart?)")
            return f"deleted pod {call.pod}; its StatefulSet starts it again"
        if call.action == "resources":
            ops = workloads.change_ops(self._deployment(call.deployment), memory=call.memory, cpu=call.cpu)
            if ops:
                self.kube.patch_deployment(system, call.deployment, ops)
            limits = ", ".join(f"{k} {v}" for k, v in (("memory", call.memory), ("cpu", call.cpu)) if v)
            return f"Deployment {call.deployment}: limits {limits} (a rolling update)"
        raise ValueError(f"fault action {call.action!r} is not possible on a cluster")

    def _kill_pod(self, pod: dict[str, Any], deployment: str) -> str:
        """SIGKILL the container's main process so the kubelet restarts it in the same pod
        (elves.k8s.faults, KILL_COMMAND says why); delete the pod only when that cannot be done."""
        system, name = self.system, pod["metadata"]["name"]
        before = faults.container_run(pod, deployment)
        if before is None:
            why = f"its container {deployment} is not running"
        else:
            try:
                errors = self.kube.exec_in_pod(system, name, deployment, faults.KILL_COMMAND)
            except (ApiException, OSError) as exc:
                why = f"exec into it failed: {exec_failure(exc)}"
            else:
                deadline = time.monotonic() + faults.KILL_SECONDS
                while time.monotonic() < deadline:
                    if faults.container_died(before, self.kube.pod(system, name), deployment):
                        return (f"killed the main process of container {deployment} in pod {name} (kill -9 through "
                                f"exec); the kubelet restarts it in the same pod")
                    time.sleep(0.5)
                why = (f"kill -9 through exec left container {deployment} running for {faults.KILL_SECONDS:.0f}s "
                       f"(is shareProcessNamespace off, making the JVM PID 1?{' stderr: ' + errors.strip()[:200] if errors.strip() else ''})")
        # No grace period: a kill, not a graceful shutdown.
        self.kube.delete_pod(system, name, grace_seconds=0)
        log.warning("killPod %s: %s; deleted the pod instead", name, why)
        return f"deleted pod {name} of {deployment} without a grace period ({why})"

    def registry_url(self) -> str:
        return self.settings.registry_url
