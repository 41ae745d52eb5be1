"""Drives LoadTests on a cluster: one step of the phase machine per call, its state kept in
the LoadTest's status. Plain code over the API and the engine, testable without kopf;
elves.k8s.handlers calls it from kopf's create, timer and delete handlers.

Every call reads the LoadTest afresh (not kopf's cached body), so a step never runs on a
status older than the last one written, and writes the whole status back through the
status subresource. Calls for one LoadTest are serialised in this process (the operator
runs as one replica).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from kubernetes.client.exceptions import ApiException

from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import LoadTest, parse_loadtest
from elves.engine.models.status import LoadTestStatus
from elves.engine.planning.platform import RunKey
from elves.engine.planning.target import Target
from elves.engine.runner import Clock, Context, Event, SystemClock, abort, fail, step, utc
from elves.k8s import grafana
from elves.k8s.autoscalers import SCALED_OBJECT
from elves.k8s.kube import Kube
from elves.k8s.names import Owner
from elves.k8s.platform import SEAL_RESTORED, KubernetesPlatform
from elves.k8s.policy import Policy, refusals
from elves.k8s.report import ReportConfigMaps, extract_command, prune_reports, store_report
from elves.k8s.settings import OperatorSettings
from elves.k8s.target import judged, judges_elves, resolve_target, target_changes

log = logging.getLogger(__name__)

# (type: Normal | Warning, reason, message) -> a Kubernetes Event on the LoadTest.
Emit = Callable[[str, str, str], None]
SAVE_ATTEMPTS = 3
WAITING_PHASES = ("Pending", "Preparing")
# Event reasons that become Grafana annotations: the phases, the faults and the end.
ANNOTATED = ("Phase", "Fault", "Succeeded", "Failed", "Limited", "Error")
# A person's way out when the system cannot be restored (the chart uninstalled, a Deployment
# gone, a snapshot that is not the operator's): a deleted LoadTest keeps its finalizer until
# the restore succeeds, or until it carries this annotation set to "true".
SKIP_RESTORE_ANNOTATION = "elves.dev/skip-restore"


class RestoreFailed(RuntimeError):
    """A deleted LoadTest could not put the system back; the delete is retried."""


@dataclass(frozen=True)
class _Owner:
    """What the phase machine's cleanup needs of a test whose spec can no longer be read."""

    owner: str


def document(body: dict[str, Any]) -> dict[str, Any]:
    """The LoadTest as the engine's models take it (no status, the metadata they know)."""
    meta = body.get("metadata") or {}
    return {"apiVersion": body.get("apiVersion"), "kind": body.get("kind"),
            "metadata": {k: meta[k] for k in ("name", "namespace", "generation", "uid") if k in meta},
            "spec": body.get("spec")}


def parse(body: dict[str, Any], policy: Policy | None = None,
          keda_served: Callable[[], bool] = lambda: False) -> tuple[LoadTest | None, list[str]]:
    """The LoadTest, and what keeps it from running here (each naming its field): a spec that
    does not parse (no LoadTest then), or, given the cluster's policy, what it may not ask for."""
    try:
        test = parse_loadtest(document(body), "LoadTest")
    except SpecError as exc:
        return None, exc.problems
    if policy is None:
        return test, []
    return test, refusals(body["metadata"]["namespace"], test.spec, policy, keda_served)


def trust_restored(status: LoadTestStatus, platform: KubernetesPlatform) -> None:
    """status.restored as the snapshot's seal says, not as the status says: anyone who may
    write the status could set it and leave the system as their test made it."""
    if status.snapshot is None:
        return
    try:
        status.restored = platform.seal_state(status.snapshot) == SEAL_RESTORED
    except Exception as exc:  # noqa: BLE001 - the restore itself then fails, saying why
        log.warning("the seal of %s's snapshot cannot be checked: %s", platform.namespace, exc)
        status.restored = False


def seal_if_restored(status: LoadTestStatus, platform: KubernetesPlatform) -> None:
    if status.restored and status.snapshot is not None:
        platform.seal_restored(status.snapshot)


def hold_target(platform: KubernetesPlatform, namespace: str, test: LoadTest, system_namespace: str) -> None:
    """Point the platform's lock at the system `test` judges: another system's, beside its
    SystemUnderTest, so tests of different targets run together (elves.k8s.lock)."""
    if not judges_elves(namespace, test.spec, system_namespace):
        platform.lock_target(namespace, test.spec.system_under_test)


class Driver:
    def __init__(self, settings: OperatorSettings, kube: Kube, clock: Clock | None = None):
        self.settings = settings
        self.kube = kube
        self.clock = clock or SystemClock()
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        # After a blip, when to try again (the phase machine's backoff; kopf's timer comes every tick).
        self._retry_at: dict[str, float] = {}

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def context(self, test: LoadTest, target: Target) -> Context:
        """What the phase machine gets for `test` on this cluster: the operator's settings, the
        system it judges, and the report ConfigMaps as the history spec.baseline.loadTest picks from."""
        return Context(test, prometheus_url=self.settings.prometheus_url, timeouts=self.settings.timeouts(),
                       http_timeout=self.settings.http_timeout_seconds, reports=ReportConfigMaps(self.kube),
                       target=target)

    # --- one step ----------------------------------------------------------------------

    def tick(self, namespace: str, name: str, emit: Emit) -> None:
        """Advance one LoadTest as far as it goes without waiting."""
        key = f"{namespace}/{name}"
        if self.clock.now() < self._retry_at.get(key, 0.0):
            return
        with self._lock(key):
            body = self.kube.loadtest(namespace, name)
            if body is None or body["metadata"].get("deletionTimestamp"):
                return
            before = LoadTestStatus.model_validate(body.get("status") or {})
            if before.final:
                return
            platform = KubernetesPlatform(self.settings, self.kube, Owner.of(body))
            trust_restored(before, platform)
            # Every rule that authorises the test, before the phase machine may change anything.
            test, problems = parse(body, self.settings.policy(),
                                   lambda: self.kube.serves(SCALED_OBJECT.group, SCALED_OBJECT.version))
            pin = None
            if test is not None:
                hold_target(platform, namespace, test, self.settings.system_namespace)
            if test is not None and not problems:
                system, problems, pin = resolve_target(self.kube, namespace, test.spec, self.settings.system_namespace,
                                                       self.settings.target_namespaces, self.settings.sql_secrets)
                platform.system_under_test = test.spec.system_under_test
                problems = problems or target_changes(before.target, pin)
                if system is not None:  # read: the one Target the platform and the phase machine judge
                    platform.target = judged(namespace, test.spec, self.settings.system_namespace, system)
            if test is None or problems:
                result_status, events = self._refuse(key, before, platform, problems)
            else:
                result = step(self.context(test, platform.target), before, platform, self.clock)
                result_status, events = result.status, result.events
                if result.status.progress.retrying:
                    self._retry_at[key] = self.clock.now() + result.delay
                else:
                    self._retry_at.pop(key, None)
            after = result_status
            if after.target is None and after.snapshot is not None and not problems:
                after.target = pin  # the target as the test took the system (elves.k8s.target)
            seal_if_restored(after, platform)
            if self.settings.grafana_url and after.started_at is not None:
                after.report.grafana = grafana.dashboard_link(self.settings.grafana_url, after.started_at,
                                                              after.finished_at)
            if after.final and test is not None and not problems:  # a refused test has nothing to report
                self._report(body, test, after, emit)
                self._tidy(platform, after, emit)
            self._save(body, after)
            self._announce(key, before, after, events, emit)

    def _refuse(self, owner: str, status: LoadTestStatus, platform: KubernetesPlatform,
                problems: list[str]) -> tuple[LoadTestStatus, list[Event]]:
        """End a test whose spec cannot run here in Error, naming the fields (and clean up,
        should it have been edited in the middle of a run)."""
        status = status.model_copy(deep=True)
        events: list[Event] = []
        fail(_Owner(owner), status, platform, self.clock.now(), "InvalidSpec", "; ".join(problems), events)  # type: ignore[arg-type]
        return status, events

    def _report(self, body: dict[str, Any], test: LoadTest, status: LoadTestStatus, emit: Emit) -> None:
        meta = body["metadata"]
        try:
            status.report.path = store_report(self.kube, body, test, status, self.settings.prometheus_url, self.settings.system_namespace)
        except Exception as exc:  # noqa: BLE001 - the verdict stands without its page
            log.warning("report of %s/%s not kept: %s", meta["namespace"], meta["name"], exc)
            emit("Warning", "ReportFailed", f"the HTML report could not be kept: {exc}")
            return
        configmap = status.report.path.removeprefix("configmap/")
        emit("Normal", "Report", f"report kept in {status.report.path}: {extract_command(meta['namespace'], configmap)}")
        try:
            pruned = prune_reports(self.kube, meta["namespace"], meta["name"], self.settings.reports_kept)
        except ApiException as exc:
            log.warning("old reports of %s/%s not pruned: %s", meta["namespace"], meta["name"], exc)
            return
        if pruned:
            emit("Normal", "ReportsPruned", f"kept the newest {self.settings.reports_kept} reports of "
                                            f"{meta['name']}; deleted {', '.join(pruned)}")

    def _tidy(self, platform: KubernetesPlatform, status: LoadTestStatus, emit: Emit) -> None:
        """A test with a verdict no longer needs its runs' TestRuns (k6-operator's Jobs and
        runner pods go with them): its results are read. On Error they stay, for a person to
        look at (kubectl describe testrun, the runner pods' logs)."""
        if status.phase == "Error":
            return
        deleted = []
        for run in status.runs:
            try:
                platform.stop_load(RunKey(run.index, run.test_id))
                deleted.append(run.test_id)
            except ApiException as exc:  # the verdict stands; the TestRun goes with the LoadTest
                log.warning("TestRun of %s not deleted: %s", run.test_id, exc)
        if deleted:
            emit("Normal", "Cleaned", f"deleted the TestRuns and runner pods of {', '.join(deleted)}")

    def expire(self, namespace: str, name: str) -> float | None:
        """spec.ttlSecondsAfterFinished: delete a LoadTest that ended long enough ago; else
        the seconds still to wait (None when it has no TTL or has not ended)."""
        body = self.kube.loadtest(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            return None
        ttl = (body.get("spec") or {}).get("ttlSecondsAfterFinished")
        status = LoadTestStatus.model_validate(body.get("status") or {})
        if ttl is None or not status.final or status.finished_at is None:
            return None
        left = status.finished_at.timestamp() + ttl - self.clock.now()
        if left > 0:
            return left
        self.kube.delete_loadtest(namespace, name)
        log.info("LoadTest %s/%s deleted %ss after it ended (ttlSecondsAfterFinished)", namespace, name, ttl)
        return None

    def _save(self, body: dict[str, Any], status: LoadTestStatus) -> None:
        """Write the whole status; on a conflict (kopf wrote the object meanwhile) read it again."""
        meta = body["metadata"]
        for _ in range(SAVE_ATTEMPTS):
            body["status"] = status.model_dump(mode="json", by_alias=True, exclude_none=True)
            try:
                self.kube.replace_loadtest_status(body)
                return
            except ApiException as exc:
                if exc.status != 409:
                    raise
            fresh = self.kube.loadtest(meta["namespace"], meta["name"])
            if fresh is None:
                return
            body = fresh
        raise RuntimeError(f"the status of {meta['namespace']}/{meta['name']} kept changing under the operator")

    def _announce(self, owner: str, before: LoadTestStatus, after: LoadTestStatus, events: list[Event],
                  emit: Emit) -> None:
        for event in events:
            emit(event.type, event.reason, event.message)
        waiting = after.progress.waiting_for
        if after.phase in WAITING_PHASES and waiting and waiting != before.progress.waiting_for:
            emit("Normal", "Waiting", waiting)
        if self.settings.grafana_url:
            now = utc(self.clock.now())
            for event in events:
                if event.reason in ANNOTATED:
                    self._annotate(owner, event.reason.lower(), event.message, now)

    def _annotate(self, owner: str, kind: str, text: str, at: datetime) -> None:
        try:
            grafana.post_annotation(self.settings.grafana_url, self.settings.grafana_token,
                                    grafana.annotation(owner, kind, text, at), self.settings.http_timeout_seconds,
                                    self.settings.grafana_user, self.settings.grafana_password)
        except grafana.GrafanaError as exc:  # the test goes on without its marks
            log.warning("no Grafana annotation for %s: %s", owner, exc)

    def _save_quietly(self, body: dict[str, Any], status: LoadTestStatus) -> None:
        """Save the status of a LoadTest that is going away: a courtesy for whoever looks."""
        try:
            self._save(body, status)
        except Exception as exc:  # noqa: BLE001
            log.info("status of deleted %s/%s not saved: %s", body["metadata"]["namespace"],
                     body["metadata"]["name"], exc)

    # --- deletion --------------------------------------------------------------------------

    def delete(self, namespace: str, name: str, emit: Emit) -> None:
        """A deleted LoadTest: stop its load, restore the system, give the system back. Until the
        system is restored (or the LoadTest says to skip it) this raises RestoreFailed, and the
        finalizer keeps the LoadTest."""
        key = f"{namespace}/{name}"
        with self._lock(key):
            body = self.kube.loadtest(namespace, name)
            if body is None:
                return
            after = before = LoadTestStatus.model_validate(body.get("status") or {})
            platform = KubernetesPlatform(self.settings, self.kube, Owner.of(body))
            trust_restored(before, platform)
            test, _ = parse(body)
            if test is not None and before.started_at is not None:  # the lock it may hold is its target's
                hold_target(platform, namespace, test, self.settings.system_namespace)
            if not before.final:
                ctx = self.context(test, platform.target) if test is not None else _Owner(key)
                result = abort(ctx, before, platform, self.clock, "the LoadTest was deleted")  # type: ignore[arg-type]
                after = result.status
                self._announce(key, before, after, result.events, emit)
            skip = (body["metadata"].get("annotations") or {}).get(SKIP_RESTORE_ANNOTATION) == "true"
            if after.snapshot is not None and not after.restored and skip:
                emit("Warning", "RestoreSkipped", f"not restoring the system ({SKIP_RESTORE_ANNOTATION}: \"true\"): "
                                                  "the Deployments stay as the test left them")
            elif after.snapshot is not None and not after.restored:  # also a restore that failed before
                try:
                    platform.restore_system(after.snapshot)
                except Exception as exc:  # noqa: BLE001 - kopf retries the deletion
                    self._save_quietly(body, after)
                    message = (f"{key}: the system could not be restored, retrying: {exc} (to delete the LoadTest "
                               f"without restoring: kubectl annotate loadtest {name} -n {namespace} "
                               f"{SKIP_RESTORE_ANNOTATION}=true)")
                    emit("Warning", "RestoreFailed", message)
                    raise RestoreFailed(message) from None
                after.restored = True
                seal_if_restored(after, platform)
                emit("Normal", "Restored", "restored the system as it was before the test")
            platform.release(key)  # also a release that was lost before; a no-op when not held
            self._save_quietly(body, after)
        with self._guard:
            self._locks.pop(key, None)
            self._retry_at.pop(key, None)
