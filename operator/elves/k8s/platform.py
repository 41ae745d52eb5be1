"""KubernetesPlatform: the Platform protocol (elves.engine.planning.platform) on a cluster.

The system is the chart's Deployments and StatefulSets in the system namespace; the load
is a k6-operator TestRun in the LoadTest's namespace, owned by the LoadTest. One object
per LoadTest: the kopf handlers make a new one for every step. Every method returns
quickly; rollouts, pod starts and k6 are observed by later calls.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import random
import time
from typing import Any, Callable

from kubernetes.client.exceptions import ApiException

from elves.constants import DEPLOYMENTS, EMPTY_DATABASE_SQL, SYSTEM_QUEUES
from elves.engine.models.autoscaling import CpuAutoscaling, QueueAutoscaling
from elves.engine.models.faults import FaultAction, InfraFault, KillPodFault, ResourcesFault, RestartFault, ScaleFault
from elves.engine.models.status import (AutoscalerSnapshot, ContainerWatch, GeneratorCpu, SystemSnapshot,
                                       WorkloadAutoscalerSnapshot)
from elves.engine.models.system import System
from elves.engine.planning import k6
from elves.engine.planning.platform import FaultApplied, LoadRun, LoadStatus, Readiness, RunKey, RunScript
from elves.engine.planning.target import Target
from elves.engine.results.blips import TransientError
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.sql_count import FIELD as SQL_FIELD
from elves.engine.results.sql_count import SqlCountError
from elves.engine.runner import utc
from elves.k8s import autoscalers, faults, manifests, names, scripts, target_autoscalers, target_workloads, workloads
from elves.k8s.kube import Kube, NotOurs, exec_failure
from elves.k8s.loadstate import load_status
from elves.k8s.lock import SystemLock
from elves.k8s.runner_cpu import runner_cpu
from elves.k8s.scripts import LoadError
from elves.k8s.settings import OperatorSettings
from elves.k8s.sql_secrets import VALUE as SQL_SECRETS_VALUE

log = logging.getLogger(__name__)

STATEFULSETS = ("rabbitmq", "postgres")
# A reset on a cluster: the chart's single-replica StatefulSets' pods, and what runs in them.
RABBITMQ_POD, POSTGRES_POD = "rabbitmq-0", "postgres-0"
# Purge those of the system's queues that exist (rabbitmqctl fails on a missing one).
PURGE_QUEUES_COMMAND = [
    "sh", "-c", 'existing=$(rabbitmqctl -q list_queues --no-table-headers name) || exit 1; '
                'for queue; do if printf "%s\\n" "$existing" | grep -qxF "$queue"; then '
                'rabbitmqctl -q purge_queue "$queue" || exit 1; fi; done', "purge", *SYSTEM_QUEUES]
# The chart's container has POSTGRES_DB and the reset role (TRUNCATE on the tables it empties,
# nothing more: elves.data_plane) in ELVES_RESET_ROLE and ELVES_RESET_PASSWORD.
EMPTY_DATABASE_COMMAND = [
    "sh", "-c", 'PGPASSWORD="$ELVES_RESET_PASSWORD" psql -v ON_ERROR_STOP=1 -q -h 127.0.0.1 -U "$ELVES_RESET_ROLE" '
                '-d "$POSTGRES_DB" -c "$1"', "empty", EMPTY_DATABASE_SQL]
# The states a snapshot's seal vouches for: taken before the test, restored after it.
SEAL_TAKEN, SEAL_RESTORED = "taken", "restored"
JWT_SECRET_KEY = "jwt-secret"
SERVICE_KEY_KEY = "service-key"
# Linux refuses to start a process with one environment string longer than 128 KiB
# (MAX_ARG_STRLEN); the tokens' variable carries a token per user.
MAX_ENV_VALUE_BYTES = 120 * 1024


class AutoscalerGoing(TransientError):
    """An autoscaler of the same name is still being deleted (KEDA's finalizer): the step is tried
    again, and the test ends in Error only when it lasts (elves.engine.results.blips)."""

    harness_reason = "AutoscalerNotDeleted"


class KubernetesPlatform:
    name = "kubernetes"

    def __init__(self, settings: OperatorSettings, kube: Kube, owner: names.Owner,
                 clock: Callable[[], float] = time.time):
        self.settings = settings
        self.kube = kube
        self.owner = owner  # the LoadTest: it owns the runs' objects and holds the lock
        self.namespace = owner.namespace
        self.system = self.system_namespace = settings.system_namespace
        self.clock = clock
        self.lock = SystemLock(kube, self.system)
        self._secrets: dict[str, str] = {}
        # The system the test judges, set by the driver once it has resolved it (elves.k8s.target):
        # Elves' own until then; another system's workloads are the ones faults may act on.
        self.target = Target.elves(self.system_namespace)
        # The SystemUnderTest spec.target names (in the LoadTest's namespace), set by the driver:
        # the Secrets its SQL may use are granted to it by name (elves.k8s.sql_secrets).
        self.system_under_test: str = ""

    def prometheus_url(self) -> str:
        return self.settings.prometheus_url

    # ---- one test at a time per target ----------------------------------------------------

    def lock_target(self, namespace: str, system_under_test: str) -> None:
        """Hold the lock of another system (its SystemUnderTest in `namespace`) instead of Elves'
        own: set by the driver for a test of another system (elves.k8s.lock)."""
        self.lock = SystemLock(self.kube, namespace, f"SystemUnderTest {namespace}/{system_under_test}")

    def acquire(self, owner: str) -> Readiness:
        return self.lock.acquire(owner, self.owner.uid)

    def release(self, owner: str) -> None:
        self.lock.release(owner)

    # ---- the system ---------------------------------------------------------------------

    def _deployment(self, name: str) -> dict[str, Any]:
        deployment = self.kube.deployment(self.system, name)
        if deployment is None:
            raise LoadError(f"Deployment {name} not found in namespace {self.system}: is the elves chart installed "
                            f"there (ELVES_SYSTEM_NAMESPACE)?")
        return deployment

    def _seal(self, snapshot: SystemSnapshot, state: str) -> str:
        """An HMAC of the snapshot under a key LoadTest authors cannot read (the system's Secret):
        status.snapshot is writable by whoever may write the LoadTest's status, and restoring
        what they wrote would patch the services' env and resources with it. It covers this
        LoadTest's uid (an old LoadTest's snapshot, replayed into a new one of the same name,
        does not hold) and the snapshot's state: SEAL_TAKEN until it is restored, then
        SEAL_RESTORED, so whether the system was put back is read from the seal, which only
        the operator can make, not from status.restored, which anyone who may write the
        status can set."""
        key = hashlib.sha256(b"elves snapshot seal\0" + self.jwt_secret().encode()).digest()
        bound = b"\0".join((self.owner.uid.encode(), state.encode(), snapshot.sealed_content()))
        return hmac.new(key, bound, hashlib.sha256).hexdigest()

    def seal_state(self, snapshot: SystemSnapshot) -> str | None:
        """SEAL_TAKEN, SEAL_RESTORED, or None for a snapshot the operator did not seal for this LoadTest."""
        for state in (SEAL_TAKEN, SEAL_RESTORED):
            if snapshot.seal is not None and hmac.compare_digest(snapshot.seal, self._seal(snapshot, state)):
                return state
        return None

    def seal_restored(self, snapshot: SystemSnapshot) -> None:
        """Mark a snapshot that has been put back (see _seal)."""
        if self.seal_state(snapshot) == SEAL_TAKEN:
            snapshot.seal = self._seal(snapshot, SEAL_RESTORED)

    def _autoscaler(self, deployment: str) -> dict[str, Any] | None:
        """The deployment's autoscaler (the chart's or a run's), or None (also where its API is not served)."""
        return self.kube.autoscaler(self.system, autoscalers.kind_of(deployment), deployment)

    def _elves_deployments(self) -> tuple[str, ...]:
        """Elves' own Deployments, in a test of Elves' own system; none in a test of another (it
        may neither change them, elves.engine.planning.target_scope, nor find them: the harness alone,
        the chart's system.enabled: false, installs none and grants nothing over them)."""
        return DEPLOYMENTS if self.target.own else ()

    def _may_read_target(self) -> bool:
        """Whether the chart lets the operator read (and act on) another system's workloads: in the
        namespaces of operator.targetNamespaces only. Elsewhere no fault may name them
        (elves.k8s.target), so there is nothing to snapshot, and their readiness is not read."""
        return not self.target.own and self.target.namespace in self.settings.target_namespaces

    def _target_faults(self) -> target_workloads.TargetFaults:
        """Another system's listed workloads, read and changed through the API."""
        return target_workloads.TargetFaults(self.kube, target_workloads.TargetWorkloads.of(
            self.target.namespace, self.target.spec), self.clock)

    def snapshot_system(self) -> SystemSnapshot:
        snapshot = SystemSnapshot(deployments={name: workloads.snapshot(self._deployment(name))
                                               for name in self._elves_deployments()})
        for name in self._elves_deployments():
            if (existing := self._autoscaler(name)) is not None:
                snapshot.autoscalers[name] = autoscalers.snapshot(existing)
        if self._may_read_target():
            try:
                snapshot.workloads = self._target_faults().snapshot()
            except target_workloads.TargetWorkloadError as exc:
                raise LoadError(str(exc)) from None
            snapshot.workloads_namespace = self.target.namespace
            for workload, (kind, name) in target_autoscalers.described(self.target.spec).items():
                try:
                    existing = self.kube.autoscaler(self.target.namespace, kind, name)
                except ApiException as exc:
                    if exc.status != 403:
                        raise
                    # A chart from before this Role rule: nothing of it can change either (the
                    # apply is forbidden the same way), so there is nothing to put back.
                    log.warning("snapshot: may not read %s %s/%s (the chart's Role in operator.targetNamespaces"
                                " predates autoscaling of another system): not kept", kind.kind,
                                self.target.namespace, name)
                    continue
                snapshot.workload_autoscalers[workload] = WorkloadAutoscalerSnapshot(
                    kind=kind.kind, name=name, before=None if existing is None else autoscalers.snapshot(existing))
        snapshot.seal = self._seal(snapshot, SEAL_TAKEN)
        return snapshot

    def restore_system(self, snapshot: SystemSnapshot) -> None:
        state = self.seal_state(snapshot)
        if state == SEAL_RESTORED:
            return  # put back already; another test may have changed the system since
        if state is None:
            raise LoadError("status.snapshot is not what the operator recorded for this LoadTest (changed since, "
                            "unsealed, or another LoadTest's): not restoring it; put the Deployments back by hand")
        # The autoscalers first: one put back to the chart's settings (or deleted) no longer
        # overrules the replicas restored next. A snapshot of another system's test holds no
        # Deployment of Elves', and none of their autoscalers are read back.
        for name in DEPLOYMENTS if snapshot.deployments else ():
            self._restore_autoscaler(name, snapshot.autoscalers.get(name))
        for name, wanted in snapshot.deployments.items():
            deployment = self._deployment(name)
            ops = workloads.restore_ops(deployment, wanted)
            if ops:
                self.kube.patch_deployment(self.system, name, ops)
            if deployment["spec"].get("replicas", 1) != wanted.replicas:
                self.kube.scale_deployment(self.system, name, wanted.replicas)
        if snapshot.workloads_namespace:
            # Before the workloads' replicas, as for Elves' own: a restored autoscaler no longer overrules them.
            for workload, kept in snapshot.workload_autoscalers.items():
                kind = autoscalers.HPA if kept.kind == autoscalers.HPA.kind else autoscalers.SCALED_OBJECT
                self._restore_autoscaler(workload, kept.before, snapshot.workloads_namespace, kind, kept.name)
        if snapshot.workloads and snapshot.workloads_namespace:
            target_workloads.restore(self.kube, snapshot.workloads_namespace, snapshot.workloads)

    def _restore_autoscaler(self, deployment: str, wanted: AutoscalerSnapshot | None, namespace: str | None = None,
                            kind: autoscalers.Kind | None = None, name: str | None = None) -> None:
        """Put back what existed before the test exactly; remove what its runs created (an object
        none of its runs made, appearing during the test, is someone else's and stays). Elves'
        deployment's (its chart's name and kind), or another system's workload's, as `namespace`,
        `kind` and `name` say."""
        namespace, kind, name = namespace or self.system, kind or autoscalers.kind_of(deployment), name or deployment
        current = self.kube.autoscaler(namespace, kind, name)
        if wanted is None:
            if current is not None and autoscalers.made_by(current, self.owner.name):
                self.kube.delete_autoscaler(namespace, kind, name)
            return
        if current is None:
            meta = {"name": name, "namespace": namespace, "labels": wanted.labels, "annotations": wanted.annotations}
            self.kube.create_autoscaler(kind, {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta,
                                               "spec": wanted.spec})
        elif ops := autoscalers.restore_ops(current, wanted):
            self.kube.patch_autoscaler(namespace, kind, name, ops)

    def _apply_autoscaling(self, deployment: str, settings: QueueAutoscaling | CpuAutoscaling) -> None:
        """The run's autoscaler for the deployment, in the chart's shape (elves.k8s.autoscalers),
        replacing the chart's for the run; mode: fixed takes an existing one out of the way."""
        spec = None if autoscalers.is_fixed(settings) else autoscalers.spec_of(deployment, settings, self.settings.keda)
        self._put_autoscaler(self.system, autoscalers.kind_of(deployment), deployment, deployment, spec)

    def _put_autoscaler(self, namespace: str, kind: autoscalers.Kind, name: str, workload: str,
                        spec: dict[str, Any] | None) -> None:
        """Give the autoscaler `name` the run's `spec` (created if absent), or, with none (mode:
        fixed), take an existing one out of the way: a ScaledObject paused, an HPA deleted."""
        current = self.kube.autoscaler(namespace, kind, name)
        if current is not None and current["metadata"].get("deletionTimestamp"):
            # KEDA's finalizer is still removing the object a restore deleted: not yet.
            raise AutoscalerGoing(f"{kind.kind} {namespace}/{name} is still being deleted")
        if spec is None:
            if current is None:
                return
            if kind == autoscalers.SCALED_OBJECT:
                if ops := autoscalers.pause_ops(current):
                    self.kube.patch_autoscaler(namespace, kind, name, ops)
            else:
                self.kube.delete_autoscaler(namespace, kind, name)
            return
        if current is None:
            labels = autoscalers.run_labels(workload, self.owner.name)
            self.kube.create_autoscaler(kind, autoscalers.body(name, namespace, labels, spec, kind))
        elif ops := autoscalers.apply_ops(current, spec):
            self.kube.patch_autoscaler(namespace, kind, name, ops)

    def reset(self) -> None:
        """Empty the queues and the database, then restart the services, as in the local mode:
        through pods/exec into the chart's rabbitmq-0 and postgres-0. A broker or database
        outside the chart (externalRabbitmq, externalPostgresql) is left as it is, logged."""
        for pod, container, command in ((RABBITMQ_POD, "rabbitmq", PURGE_QUEUES_COMMAND),
                                        (POSTGRES_POD, "postgres", EMPTY_DATABASE_COMMAND)):
            if self.kube.pod(self.system, pod) is None:
                log.warning("reset: no pod %s in namespace %s (an external one?): not emptied", pod, self.system)
                continue
            code, output = self.kube.run_in_pod(self.system, pod, container, command)
            if code != 0:
                raise LoadError(f"reset: {' '.join(command[:3])}... in pod {self.system}/{pod} failed "
                                f"(exit code {code}): {output.strip()[-500:]}")
        for name in DEPLOYMENTS:
            self.kube.patch_deployment(self.system, name, workloads.restart_patch(self.clock()))

    def apply_system(self, system: System) -> None:
        """spec.system: autoscalers created, changed or taken out of the way, env variables set
        (others stay), limits changed, replicas scaled (after the autoscalers, so a paused or
        deleted one does not undo them): of Elves' Deployments, or of another system's workloads."""
        if not self.target.own:
            self._apply_target_system(system)
            return
        for deployment, settings in system.autoscaling_settings().items():
            self._apply_autoscaling(deployment, settings)
        changes = system.changes()
        for change in changes:
            if change.env or change.memory or change.cpu:
                ops = workloads.change_ops(self._deployment(change.workload), change.env, change.memory, change.cpu)
                if ops:
                    self.kube.patch_deployment(self.system, change.workload, ops)
        for change in changes:
            if change.replicas is not None:
                self.kube.scale_deployment(self.system, change.workload, change.replicas)

    def _apply_target_system(self, system: System) -> None:
        """spec.system of another system's listed workloads (elves.k8s.target_workloads); what its
        SystemUnderTest does not offer was refused before the test started (elves.k8s.target)."""
        target, changes = self._target_faults(), system.changes()
        for scaler in target_autoscalers.run_autoscalers(system.autoscaling, self.target.spec):
            spec = None if autoscalers.is_fixed(scaler.settings) else scaler.spec()
            self._put_autoscaler(self.target.namespace, scaler.kind, scaler.name, scaler.workload, spec)
        try:
            for change in changes:
                target.change(change)
            for change in changes:
                if change.replicas is not None:
                    target.scale(change.workload, change.replicas)
        except target_workloads.TargetWorkloadError as exc:
            raise LoadError(f"spec.system: {exc}") from None

    def system_ready(self) -> Readiness:
        """The target's Deployments and StatefulSets, each running its desired replicas, all updated
        and ready, in one wording (elves.k8s.target_workloads): before the load and again in the
        drain. Elves' own three Deployments, and its broker's and database's StatefulSets where the
        chart runs them (absent: an external broker or database), in a test of Elves' system;
        another system's workloads, by name or selector, where the chart lets the operator read
        them (operator.targetNamespaces); elsewhere it may not, and waits for none."""
        if not self.target.own:
            reasons = target_workloads.not_ready(self.kube, self._target_faults().target) if self._may_read_target() else []
            return Readiness(not reasons, "; ".join(reasons))
        own = target_workloads.TargetWorkloads(self.system, {name: "Deployment" for name in self._elves_deployments()})
        reasons = target_workloads.not_ready(self.kube, own)
        for name in STATEFULSETS:
            statefulset = self.kube.statefulset(self.system, name)
            reason = statefulset and target_workloads.workload_not_ready("StatefulSet", statefulset)
            if reason:
                reasons.append(reason)
        return Readiness(not reasons, "; ".join(reasons))

    def _system_secret(self, key: str, why: str) -> str:
        """One key of the chart's Secret (read once per platform object)."""
        if key not in self._secrets:
            where = f"Secret {self.system}/{self.settings.secret_name}"
            secret = self.kube.secret(self.system, self.settings.secret_name)
            if secret is None:
                raise LoadError(f"{where} not found (ELVES_SECRET_NAME): {why} its {key}")
            value = (secret.get("data") or {}).get(key)
            if not value:
                raise LoadError(f"{where} has no key {key}")
            self._secrets[key] = base64.b64decode(value).decode("utf-8")
        return self._secrets[key]

    def jwt_secret(self) -> str:
        return self._system_secret(JWT_SECRET_KEY, "the tokens k6 sends are signed with")

    def target_secret(self, name: str, key: str, field: str = SQL_FIELD) -> str:
        """A key of a Secret in the LoadTest's namespace (its SystemUnderTest's): only one the
        chart's operator.sqlSecrets grants this SystemUnderTest for the purpose of `field` (the
        count or the reset), the Secrets the chart grants get on (never logged, never in a message)."""
        where = f"Secret {self.namespace}/{name}"
        if refusal := self.settings.sql_secrets.refusal(self.namespace, name, field, self.system_under_test):
            raise SqlCountError(refusal)
        field += ".secretRef"
        try:
            secret = self.kube.secret(self.namespace, name)
        except ApiException as exc:
            if exc.status != 403:
                raise
            raise SqlCountError(f"{field}: the operator may not read {where}: grant it with the chart's"
                                f" {SQL_SECRETS_VALUE}") from None
        if secret is None:
            raise SqlCountError(f"{field}: there is no {where} (kubectl -n {self.namespace} get secret {name})")
        value = (secret.get("data") or {}).get(key)
        if not value:
            raise SqlCountError(f"{field}: {where} has no key {key!r}")
        try:
            return base64.b64decode(value).decode("utf-8")
        except ValueError:
            raise SqlCountError(f"{field}: the key {key!r} of {where} is not UTF-8 text") from None

    def service_key(self) -> str:
        return self._system_secret(SERVICE_KEY_KEY, "the registry answers only calls that carry")

    # ---- the load -------------------------------------------------------------------------

    def _targets(self) -> k6.Targets:
        return k6.Targets(self.settings.prometheus_url, self.settings.gateway_url, self.settings.registry_url)

    def script_content(self, script: RunScript) -> tuple[str, bytes] | None:
        return scripts.script_content(self.kube, self.namespace, script)

    def start_load(self, run: LoadRun) -> None:
        values = k6.RunnerValues.of(run, self._targets())
        for variable, value in values.pairs:
            size = len(value.encode())
            if variable.per_user and size > MAX_ENV_VALUE_BYTES:
                users = len(run.tokens)
                raise LoadError(f"spec.load.users: {users} users make {size} bytes of {variable.name}, more than a "
                                f"runner's environment takes; use at most {users * MAX_ENV_VALUE_BYTES // size}")
        script = scripts.runner_script(self.kube, self.settings.k6_binary, self.owner, run, values)
        secret = manifests.runner_secret(self.owner, run, values)
        try:
            self.kube.apply_secret(secret)
        except NotOurs as exc:
            raise LoadError(str(exc)) from None
        env = manifests.runner_pod_env(values, secret["metadata"]["name"])
        body = manifests.testrun(self.owner, run, script, self.settings.k6_image, env)
        if not self.kube.create_testrun(body):
            existing = self.kube.testrun(self.namespace, body["metadata"]["name"]) or {}
            owners = {o.get("uid") for o in existing.get("metadata", {}).get("ownerReferences") or []}
            if self.owner.uid not in owners:
                raise LoadError(f"TestRun {self.namespace}/{body['metadata']['name']} already exists and belongs to "
                                f"something else; delete it and create the LoadTest again")
        log.info("TestRun %s/%s created for %s", self.namespace, body["metadata"]["name"], run.test_id)

    def load_status(self, run: RunKey) -> LoadStatus:
        name = names.testrun_name(self.owner.name, run.index, run.part)
        testrun = self.kube.testrun(self.namespace, name)
        pods = self.kube.pods(self.namespace, f"{names.K6_LABEL_TESTRUN}={name}")
        return load_status(testrun, pods, self.clock(), self.settings.unschedulable_grace_seconds,
                           f"{self.namespace}/{name}")

    def stop_load(self, run: RunKey) -> None:
        """Delete the run's TestRun; k6-operator's Jobs and pods go with it (in the background:
        load_status says running while a runner pod still runs)."""
        self.kube.delete_testrun(self.namespace, names.testrun_name(self.owner.name, run.index, run.part))

    def generator_cpu(self, run: RunKey, start: float, end: float) -> list[GeneratorCpu]:
        """The run's runner pods (kept until the test has its verdict) against their CPU limits."""
        name = names.testrun_name(self.owner.name, run.index, run.part)
        pods = self.kube.pods(self.namespace, f"{names.K6_LABEL_TESTRUN}={name},{names.K6_LABEL_RUNNER}=true")
        prom = Prometheus(self.prometheus_url(), system_namespace=self.system_namespace)
        return runner_cpu(prom, pods, self.namespace, start, end)

    # ---- faults and the ledger ----------------------------------------------------------

    def apply_fault(self, action: FaultAction, now: float) -> FaultApplied:
        if getattr(action, "workload", None) is not None:  # another system's (elves.k8s.target_workloads)
            if self.target.own:
                raise LoadError(f"fault {action.describe()}: a workload fault needs the SystemUnderTest of spec.target")
            try:
                return self._target_faults().apply(action, now)
            except target_workloads.TargetWorkloadError as exc:
                raise LoadError(str(exc)) from None
        system = self.system
        if isinstance(action, ScaleFault):
            before = self._deployment(action.deployment)["spec"].get("replicas", 1)
            self.kube.scale_deployment(system, action.deployment, action.replicas)
            return FaultApplied(f"scaled Deployment {action.deployment} from {before} to {action.replicas} replicas")
        if isinstance(action, KillPodFault):
            pods = self.kube.pods(system, f"{names.COMPONENT_LABEL}={action.deployment}")
            pod = workloads.pick_pod(pods, random.choice)
            if pod is None:
                raise LoadError(f"no running pod of {action.deployment} to kill in namespace {system}")
            return self._kill_pod(pod, action.deployment, now)
        if isinstance(action, RestartFault):
            self.kube.patch_deployment(system, action.deployment, workloads.restart_patch(self.clock()))
            return FaultApplied(f"rollout restart of Deployment {action.deployment}")
        if isinstance(action, InfraFault):
            return self._stop_infra(action.component, now)
        if isinstance(action, ResourcesFault):
            ops = workloads.change_ops(self._deployment(action.deployment), memory=action.memory, cpu=action.cpu)
            if ops:
                self.kube.patch_deployment(system, action.deployment, ops)
            limits = ", ".join(f"{k} {v}" for k, v in (("memory", action.memory), ("cpu", action.cpu)) if v)
            return FaultApplied(f"Deployment {action.deployment}: limits {limits} (a rolling update)")
        raise ValueError(f"fault action {action.kind!r} is not possible on a cluster")

    def _kill_pod(self, pod: dict[str, Any], deployment: str, now: float) -> FaultApplied:
        """SIGKILL the container's main process so the kubelet restarts it in the same pod
        (elves.k8s.faults, KILL_COMMAND says why); whether it died is observed on later ticks
        (observe_fault). The pod is deleted at once only when the kill cannot be sent."""
        name = pod["metadata"]["name"]
        before = faults.container_run(pod, deployment)
        if before is None:
            return FaultApplied(self._delete_pod(name, deployment, f"its container {deployment} is not running"))
        try:
            self.kube.exec_in_pod(self.system, name, deployment, faults.KILL_COMMAND)
        except (ApiException, OSError) as exc:
            return FaultApplied(self._delete_pod(name, deployment, f"exec into it failed: {exec_failure(exc)}"))
        container_id, restarts = before
        return FaultApplied(
            f"kill -9 through exec into container {deployment} in pod {name}; waiting for it to die",
            ContainerWatch(pod=name, container=deployment, container_id=container_id, restart_count=restarts,
                           deadline=utc(now + faults.KILL_SECONDS)))

    def _stop_infra(self, component: str, now: float) -> FaultApplied:
        """A clean stop of RabbitMQ or PostgreSQL in the chart's `<component>-0`, so the kubelet
        starts the container again in the same pod, on the same data (elves.k8s.faults,
        INFRA_STOP_COMMANDS says why not a pod deletion); observed like a killed container."""
        name = f"{component}-0"  # the chart's single-replica StatefulSets
        pod = self.kube.pod(self.system, name)
        if pod is None:
            raise LoadError(f"pod {name} not found in namespace {self.system} (is it run by the chart?)")
        before = faults.container_run(pod, component)
        if before is None:
            return FaultApplied(f"container {component} in pod {name} is not running (restarting already): "
                                "nothing to stop")
        try:
            self.kube.exec_in_pod(self.system, name, component, faults.INFRA_STOP_COMMANDS[component])
        except (ApiException, OSError) as exc:
            raise LoadError(f"restartInfra {component}: exec into pod {self.system}/{name} failed "
                            f"({exec_failure(exc)}); not deleting the pod, which may hold the only copy of "
                            "its data") from None
        container_id, restarts = before
        return FaultApplied(
            f"clean stop of container {component} in pod {name} through exec; waiting for it to end",
            ContainerWatch(pod=name, container=component, container_id=container_id, restart_count=restarts,
                           deadline=utc(now + faults.INFRA_STOP_SECONDS)))

    def observe_fault(self, watch: ContainerWatch, now: float) -> str | None:
        """A killed or stopped container: dead (or its pod gone) is done; a service's container
        still running after the deadline has its pod deleted instead, RabbitMQ's or PostgreSQL's
        is reported (deleting their pod may lose their data)."""
        pod = self.kube.pod(self.system, watch.pod)
        infra = watch.container in faults.INFRA_STOP_COMMANDS
        if faults.container_died((watch.container_id, watch.restart_count), pod, watch.container):
            if infra:
                return (f"stopped container {watch.container} in pod {watch.pod} cleanly (through exec); the kubelet "
                        "starts it again in the same pod, on the same data")
            return (f"killed the main process of container {watch.container} in pod {watch.pod} (kill -9 through "
                    f"exec); the kubelet restarts it in the same pod")
        if now < watch.deadline.timestamp():
            return None
        if infra:
            return (f"container {watch.container} in pod {watch.pod} still ran {faults.INFRA_STOP_SECONDS:.0f}s after "
                    "it was asked to stop; left as it is")
        return self._delete_pod(watch.pod, watch.container,
                                f"kill -9 through exec left container {watch.container} running for "
                                f"{faults.KILL_SECONDS:.0f}s (is shareProcessNamespace off, making the JVM PID 1?)")

    def _delete_pod(self, name: str, deployment: str, why: str) -> str:
        # No grace period: a kill, not a graceful shutdown.
        self.kube.delete_pod(self.system, name, grace_seconds=0)
        log.warning("killPod %s: %s; deleted the pod instead", name, why)
        return f"deleted pod {name} of {deployment} without a grace period ({why})"

    def registry_url(self) -> str:
        return self.settings.registry_url
